"""A hot-reloaded config edit reports every problem it brings: log, problems(), event."""

from __future__ import annotations

import logging
import os
import queue
import signal
import subprocess
import threading
from pathlib import Path

import anyio
import pytest

from harness import Host
from harness.loader.config_problems import Problem

from ..helpers import HARNESS, tool_plugin, write
from .test_hot_reload import Reloads, call

GOOD = "- { id: good, name: ./plugins/good.py }\n"
BROKEN = (
    GOOD
    + "- { id: typo, name: ./plugins/missing.py }\n"
    + "- { id: bad, name: ./plugins/bad.py }\n"
    + "- { id: keys, name: ./plugins/other.py, confg: {} }\n"
)


def project(root: Path) -> Path:
    tool_plugin(root / "plugins" / "good.py", "good")
    tool_plugin(root / "plugins" / "other.py", "other")
    write(root / "plugins" / "bad.py", "def apply(ctx):\n    raise RuntimeError('boom')\n")
    return write(root / "cordis.yml", GOOD)


def expected(config: Path) -> list[tuple[str, int | None, str | None]]:
    return [(str(config), 2, "typo"), (str(config), 3, "bad"), (str(config), 4, "keys")]


class Problems:
    """Collects ``reload/problems`` events."""

    def __init__(self, host: Host) -> None:
        self.events: list[list[Problem]] = []
        self._arrived = anyio.Event()
        host.ctx.on("reload/problems", self._add)

    def _add(self, problems: list[Problem]) -> None:
        self.events.append(problems)
        self._arrived.set()

    async def next(self) -> list[Problem]:
        with anyio.fail_after(15):
            await self._arrived.wait()
        self._arrived = anyio.Event()
        return self.events[-1]


@pytest.mark.anyio
async def test_a_config_edit_adding_broken_entries_reports_each_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = project(tmp_path).absolute()
    caplog.set_level(logging.INFO, "harness.reload")
    async with Host(config, watch=True) as host:
        reloads, problems = Reloads(host), Problems(host)
        config.write_text(BROKEN)
        found = await problems.next()
        report = await reloads.next()
        assert report.ok  # reconciled: the broken entries are reported, the rest runs
        assert [(p.file, p.line, p.entry) for p in found] == expected(config)
        assert report.problems == found
        assert "plugin file not found: ./plugins/missing.py" in found[0].message
        assert found[1].message.startswith("apply raised RuntimeError: boom")
        assert found[2].message.startswith("unknown key 'confg' (did you mean 'config'?)")
        assert set(found) <= set(host.problems())
        assert await call(host, "good") == "good:"
        assert "3 new problems" in report.summary()
        # what the log says: each problem with file, line and entry, then what to do
        lines = [record.getMessage() for record in caplog.records]
        for problem in found:
            assert f"problem: {problem}" in lines
        assert any("fix it and save again" in line for line in lines)

        # an edit that adds one more reports that one only, not the ones already known
        config.write_text(BROKEN + "- { id: worse, name: harness:nothing }\n")
        [again] = await problems.next()
        assert (await reloads.next()).problems == [again]
        assert (again.entry, again.line) == ("worse", 5)
        assert "unknown builtin harness:nothing" in again.message

        # fixed: no new problem, no event, and problems() is clean again
        config.write_text(GOOD)
        report = await reloads.next()
        assert report.problems == []
        assert problems.events[-1] == [again]
        assert host.problems() == []


@pytest.mark.anyio
async def test_an_unreadable_config_edit_is_reported_and_the_running_one_kept(
    tmp_path: Path,
) -> None:
    config = project(tmp_path).absolute()
    async with Host(config, watch=True) as host:
        reloads, problems = Reloads(host), Problems(host)
        config.write_text(GOOD + "- { id: half, name: [\n")
        [problem] = await problems.next()
        report = await reloads.next()
        assert not report.ok
        assert report.errors == [problem]
        assert problem.file == str(config)
        assert problem.line is not None
        assert problem in host.problems()  # until the file is fixed
        assert await call(host, "good") == "good:"  # the running config is kept
        config.write_text(GOOD + "- { id: other, name: ./plugins/other.py }\n")
        await reloads.until(lambda: _clean(host))
        assert await call(host, "other") == "other:"


async def _clean(host: Host) -> bool:
    return host.problems() == []


def test_harness_run_logs_each_problem_of_a_hot_reloaded_config(tmp_path: Path) -> None:
    config = project(tmp_path)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    with subprocess.Popen(
        [HARNESS, "run", "--mcp", "none"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    ) as process:
        assert process.stderr is not None
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(
            target=lambda: [lines.put(line) for line in process.stderr or ()], daemon=True
        ).start()

        def until(text: str) -> list[str]:
            seen = []
            while True:
                line = lines.get(timeout=30)
                seen.append(line.rstrip("\n"))
                if text in line:
                    return seen

        try:
            until("press Ctrl-C")
            config.write_text(BROKEN)
            seen = until("fix it and save again")
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=30) == 0
        finally:
            process.kill()
    absolute = config.absolute()
    assert "WARNING harness.reload: reload: config reconciled; 3 new problems" in seen
    for file, line, entry in expected(absolute):
        assert any(f"problem: {file}:{line}: entry {entry!r}:" in text for text in seen), seen
    assert any("unknown key 'confg' (did you mean 'config'?)" in text for text in seen)
