"""The pinned conformance suite's MCP tasks scenarios (``tasks-*``, the
``io.modelcontextprotocol/tasks`` extension, DESIGN §18) against ``examples/conformance/``.

The suite lists them as ``[extension]`` scenarios, outside both requirement sets, and runs
them on the 2026-07-28 wire. Each is one test on a fresh ``harness run`` of a copy of the
project, as in :mod:`.test_conformance`. A scenario passes when none of its checks failed and
at least one passed; ``tasks-status-notifications`` has no check of its own in this release
(the suite skips it, saying why), so its test asserts exactly that skip, and notices on
``subscriptions/listen`` are not yet sent (docs/store.md#tasks).

``tasks-mrtr-composition`` (a tool that asks through input rounds first, then escalates to a
task) runs ``test_tool_with_task``, defined ``task="required", ask_first=True``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from ..processes import start_harness_run, stop
from .suite import Outcome, Suite, extension_scenarios, install, run_extension_scenario
from .test_conformance import JOBS, PROJECT

SUITE_SKIPS = {
    "tasks-status-notifications": "tasks-status-notifications: Skipped: SEP-2663 delivers "
    "notifications/tasks via the SEP-2575 subscriptions/listen stream"
}


def scenarios(suite: Suite) -> list[str]:
    return extension_scenarios(suite, "tasks-")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "scenario" in metafunc.fixturenames:
        metafunc.parametrize("scenario", scenarios(install()))


def run_one(suite: Suite, scenario: str) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="conformance-tasks-") as folder:
        project = Path(folder) / "project"
        shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("__pycache__", ".harness"))
        process, port = start_harness_run(project, dict(os.environ))
        try:
            return run_extension_scenario(suite, scenario, f"http://127.0.0.1:{port}/mcp")
        finally:
            stop(process)


@pytest.fixture(scope="module")
def outcomes() -> Iterator[dict[str, Future[Outcome]]]:
    suite = install()
    with ThreadPoolExecutor(JOBS, thread_name_prefix="conformance-tasks") as pool:
        yield {name: pool.submit(run_one, suite, name) for name in scenarios(suite)}


def test_the_suite_lists_ten_tasks_scenarios() -> None:
    listed = extension_scenarios(install(), "tasks-")
    assert len(listed) == 10, listed
    assert set(SUITE_SKIPS) <= set(listed)


def test_the_tasks_scenario_passes(scenario: str, outcomes: dict[str, Future[Outcome]]) -> None:
    outcome = outcomes[scenario].result(timeout=900)
    assert outcome.failures == (), f"{scenario} failed:\n  " + "\n  ".join(outcome.failures)
    if scenario in SUITE_SKIPS:
        assert outcome.passed == 0
        assert [skip[: len(SUITE_SKIPS[scenario])] for skip in outcome.skipped] == [
            SUITE_SKIPS[scenario]
        ]
    else:
        assert outcome.passed > 0, outcome.output[-2000:]
