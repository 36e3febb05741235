"""The official MCP conformance suite, pinned, against ``examples/conformance/``: every server
scenario of both requirement sets (2025-11-25 and 2026-07-28) passes, with no list of expected
failures (DESIGN §6b).

The suite and its Node.js are installed from the npm registry on first use
(:func:`.suite.install`). Each scenario gets a fresh ``harness run`` of its own copy of the
project on its own port, as the suite expects. The scenarios run concurrently (this file runs
on one xdist worker, as every file does, so it runs them itself, several at once, in threads
that each wait on their two processes); each is one test, and a failure names the suite's
failed checks.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from ..helpers import ROOT
from ..processes import start_harness_run, stop
from .suite import ERAS, Outcome, Suite, install, run_server_scenario, server_scenarios

PROJECT = ROOT / "examples" / "conformance"
JOBS = int(os.environ.get("HARNESS_CONFORMANCE_JOBS", "0")) or min(8, 2 * (os.cpu_count() or 1))
"""Scenarios run at once (``HARNESS_CONFORMANCE_JOBS``; default twice the cores, at most 8):
each mostly waits on a harness run starting and on the suite's Node.js."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "scenario" in metafunc.fixturenames:
        suite = install()
        cases = [(era, name) for era in ERAS for name in server_scenarios(suite, era)]
        metafunc.parametrize("scenario", cases, ids=[f"{era}-{name}" for era, name in cases])


def run_one(suite: Suite, era: str, scenario: str) -> Outcome:
    """One scenario against a fresh ``harness run`` of a copy of the project."""
    with tempfile.TemporaryDirectory(prefix="conformance-") as folder:
        project = Path(folder) / "project"
        shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("__pycache__", ".harness"))
        process, port = start_harness_run(project, dict(os.environ))
        try:
            return run_server_scenario(suite, era, scenario, f"http://127.0.0.1:{port}/mcp")
        finally:
            stop(process)


@pytest.fixture(scope="module")
def outcomes() -> Iterator[dict[tuple[str, str], Future[Outcome]]]:
    """Every scenario of both eras, started at once on :data:`JOBS` threads."""
    suite = install()
    with ThreadPoolExecutor(JOBS, thread_name_prefix="conformance") as pool:
        yield {
            (era, name): pool.submit(run_one, suite, era, name)
            for era in ERAS
            for name in server_scenarios(suite, era)
        }


def test_the_scenario_passes(
    scenario: tuple[str, str], outcomes: dict[tuple[str, str], Future[Outcome]]
) -> None:
    outcome = outcomes[scenario].result(timeout=900)
    assert outcome.ok, f"{scenario[0]} {scenario[1]} failed:\n  " + "\n  ".join(outcome.failures)
