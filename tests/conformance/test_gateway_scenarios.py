"""The suite's server scenarios through the gateway: harness in front of a reference server
passes every scenario the reference passes alone, in both eras (issue #31).

The reference is an MCP server that the scenarios' fixtures are written for, served over
streamable HTTP on 127.0.0.1: by default ``harness run`` of ``examples/conformance/`` (the
suite's own TypeScript reference server is not published to a package registry, so CI
cannot install it); ``HARNESS_CONFORMANCE_REFERENCE=URL`` points the test at one already
running instead (docs/gateway.md says how). Each era gets one reference, and:

- alone: every scenario runs against the reference itself, in this same run, so which
  ones it passes is measured, not written down;
- through the gateway: every scenario runs against a fresh ``harness run`` of a project
  whose only entry mounts the reference (``harness:mcp-client``, ``prefix: ""`` so the
  scenarios' fixed tool and prompt names are the upstream's). The 2026-07-28 scenarios
  reach the reference at 2026-07-28 (where the suite's reference keeps its input-round
  fixtures); the 2025-11-25 ones at ``protocol: auto`` (the handshake era) and, in front of
  the fixture project, also at ``2026-07-28`` (the upstream's input rounds answered mid-call
  by a 2025-11-25 client).

Each scenario is one test: through the gateway it passes wherever the reference passes
alone, and a failure names the suite's failed checks. The scenarios run concurrently, as in
``test_conformance.py``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..helpers import ROOT
from ..processes import start_harness_run, stop
from .suite import ERAS, Outcome, Suite, install, run_server_scenario, server_scenarios

FIXTURES = ROOT / "examples" / "conformance"
REFERENCE = os.environ.get("HARNESS_CONFORMANCE_REFERENCE")
"""The URL of a reference server already running (default: harness's fixture project)."""
JOBS = int(os.environ.get("HARNESS_CONFORMANCE_JOBS", "0")) or min(8, 2 * (os.cpu_count() or 1))
PROTOCOLS = {
    "2025-11-25": ("auto",) if REFERENCE else ("auto", "2026-07-28"),
    "2026-07-28": ("2026-07-28",),
}
"""The ``protocol`` of the gateway's entry, each tried for each era's scenarios. The
2025-11-25 scenarios through a 2026-07-28 entry only in front of harness's fixture project,
which serves the same fixtures at both eras (the suite's reference does not: its 2026-07-28
path has no mid-call sampling or elicitation)."""


def cases(suite: Suite) -> list[tuple[str, str, str]]:
    """Every (era, entry protocol, scenario) this file runs."""
    return [
        (era, protocol, name)
        for era in ERAS
        for protocol in PROTOCOLS[era]
        for name in server_scenarios(suite, era)
    ]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "scenario" in metafunc.fixturenames:
        found = cases(install())
        ids = [f"{era}-via-{protocol}-{name}" for era, protocol, name in found]
        metafunc.parametrize("scenario", found, ids=ids)


def gateway_project(folder: Path, url: str, protocol: str) -> Path:
    """A project whose only entry mounts the MCP server at ``url``, names kept."""
    folder.mkdir(parents=True)
    (folder / "cordis.yml").write_text(
        "insert:\n"
        "  - id: reference\n"
        "    name: harness:mcp-client\n"
        "    config:\n"
        f"      url: {url}\n"
        '      prefix: ""\n'
        f'      protocol: "{protocol}"\n'
    )
    return folder


def through_gateway(suite: Suite, era: str, protocol: str, scenario: str, url: str) -> Outcome:
    """One scenario against a fresh ``harness run`` in front of the reference at ``url``."""
    with tempfile.TemporaryDirectory(prefix="conformance-gateway-") as folder:
        project = gateway_project(Path(folder) / "project", url, protocol)
        process, port = start_harness_run(project, dict(os.environ))
        try:
            return run_server_scenario(suite, era, scenario, f"http://127.0.0.1:{port}/mcp")
        finally:
            stop(process)


@dataclass(frozen=True)
class Runs:
    """Every scenario alone (by era and name) and through the gateway (by era, protocol
    and name)."""

    alone: dict[tuple[str, str], Future[Outcome]]
    through: dict[tuple[str, str, str], Future[Outcome]]


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The reference's URL: one given, or a ``harness run`` of the fixture project."""
    if REFERENCE is not None:
        yield REFERENCE
        return
    project = tmp_path_factory.mktemp("reference") / "project"
    shutil.copytree(FIXTURES, project, ignore=shutil.ignore_patterns("__pycache__", ".harness"))
    process, port = start_harness_run(project, dict(os.environ))
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)


@pytest.fixture(scope="module")
def outcomes(references: str) -> Iterator[Runs]:
    """Every scenario, alone and through the gateway, on :data:`JOBS` threads."""
    suite = install()
    with ThreadPoolExecutor(JOBS, thread_name_prefix="conformance-gateway") as pool:
        yield Runs(
            {
                (era, name): pool.submit(run_server_scenario, suite, era, name, references)
                for era in ERAS
                for name in server_scenarios(suite, era)
            },
            {
                (era, protocol, name): pool.submit(
                    through_gateway, suite, era, protocol, name, references
                )
                for era, protocol, name in cases(suite)
            },
        )


def test_the_scenario_passes_through_the_gateway_where_the_reference_does(
    scenario: tuple[str, str, str], outcomes: Runs
) -> None:
    era, protocol, name = scenario
    alone = outcomes.alone[era, name].result(timeout=900)
    through = outcomes.through[scenario].result(timeout=900)
    assert through.ok or not alone.ok, (
        f"{era} {name} passes against the reference alone, but through the gateway (protocol "
        f"{protocol}) it failed:\n  " + "\n  ".join(through.failures)
    )


def test_the_gateway_passes_as_many_as_the_reference(outcomes: Runs) -> None:
    for (era, name), future in outcomes.alone.items():
        assert future.result(timeout=900).passed > 0, f"{era} {name}: no check ran alone"
    for era in ERAS:
        alone = sum(f.result(timeout=900).ok for (of, _), f in outcomes.alone.items() if of == era)
        assert alone > 0, f"{era}: the reference passed no scenario alone"
        for protocol in PROTOCOLS[era]:
            through = sum(
                future.result(timeout=900).ok
                for (of, via, _), future in outcomes.through.items()
                if (of, via) == (era, protocol)
            )
            assert through >= alone, f"{era} via {protocol}: {through} passed, {alone} alone"
