"""The pinned conformance suite's ``tasks-*`` scenarios (those :mod:`tests.conformance.
test_tasks_extension` runs) against the conformance project with ``harness:store`` loaded
(an SQLite file in the copy): every task then lives in the store, and the suite's checks
(results, input rounds, cancel, ``ttlMs``, -32602, -32021) hold there too."""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from ..conformance.suite import Outcome, Suite, install, run_extension_scenario
from ..conformance.test_conformance import JOBS, PROJECT
from ..conformance.test_tasks_extension import SUITE_SKIPS, scenarios
from ..processes import start_harness_run, stop

NO_TASKS = frozenset({"tasks-status-notifications", "tasks-required-task-error"})
"""Scenarios that start no task: one without checks, one whose client lacks the extension."""
STORE = """
  - id: store
    name: harness:store
"""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "scenario" in metafunc.fixturenames:
        metafunc.parametrize("scenario", scenarios(install()))


def run_one(suite: Suite, scenario: str) -> tuple[Outcome, int]:
    with tempfile.TemporaryDirectory(prefix="conformance-stored-tasks-") as folder:
        project = Path(folder) / "project"
        shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("__pycache__", ".harness"))
        config = project / "cordis.yml"
        config.write_text(config.read_text() + STORE)
        process, port = start_harness_run(project, dict(os.environ))
        try:
            outcome = run_extension_scenario(suite, scenario, f"http://127.0.0.1:{port}/mcp")
        finally:
            stop(process)
        with sqlite3.connect(project / ".harness" / "harness.db") as database:
            kept = database.execute("SELECT count(*) FROM tasks").fetchone()[0]
        return outcome, kept


@pytest.fixture(scope="module")
def outcomes() -> Iterator[dict[str, Future[tuple[Outcome, int]]]]:
    suite = install()
    with ThreadPoolExecutor(JOBS, thread_name_prefix="conformance-stored-tasks") as pool:
        yield {name: pool.submit(run_one, suite, name) for name in scenarios(suite)}


def test_the_tasks_scenario_passes_with_tasks_in_the_store(
    scenario: str, outcomes: dict[str, Future[tuple[Outcome, int]]]
) -> None:
    outcome, kept = outcomes[scenario].result(timeout=900)
    assert outcome.failures == (), f"{scenario} failed:\n  " + "\n  ".join(outcome.failures)
    if scenario in SUITE_SKIPS:
        assert outcome.passed == 0
    else:
        assert outcome.passed > 0, outcome.output[-2000:]
    # every scenario but these two makes tasks, and they were kept in the store
    assert (kept == 0) == (scenario in NO_TASKS), kept
