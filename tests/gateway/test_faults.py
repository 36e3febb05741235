"""Faults of the upstream: each leaves its entry failed, says why, and restarts with backoff.

Waits are on registry and fiber events (with timeouts), never on sleeps.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness import Host
from harness.fiber import FiberState
from harness.gateway.plugin import supervision

from ..helpers import HARNESS
from .conftest import PYTHON, SERVER, Watch, fiber_of, stdio_entry, write_config

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).parents[2]
ECHO = {"id": "echo", "name": str(ROOT / "plugins" / "echo.py")}
FAST = {"restart_delay": 0.05, "max_restart_delay": 0.2}
NO_RESET = {"restart_delay": 0.05, "max_restart_delay": 60}
"""Doubling delays that a connection up for a while (on a loaded machine) does not reset."""


async def echo_still_works(host: Host) -> None:
    result = await host.tools.execute({"id": "e", "name": "echo", "args": {"text": "ok"}})
    assert result.ok


def pids(mark: Path) -> set[int]:
    return {int(path.read_text()) for path in mark.glob("pid-*")}


async def test_kill_at_rest_and_mid_call_fail_the_entry_then_restart(
    tmp_path: Path, mark: Path
) -> None:
    config = write_config(tmp_path, [ECHO, stdio_entry("up", mark=mark, **NO_RESET)])
    async with Host(config) as host:
        watch = Watch(host)
        fiber = fiber_of(host, "up")
        assert "up_echo" in host.tools.list()
        (first,) = pids(mark)
        os.kill(first, signal.SIGKILL)
        await watch.until(lambda: fiber.state is FiberState.FAILED)
        assert "up_echo" not in host.tools.list()
        (status,) = [entry for entry in host.status() if entry.id == "up"]
        assert status.state == "failed"
        assert status.error is not None
        assert status.error.startswith("MCP server 'up': the server closed the connection")
        assert "restarting in 0.05 s (attempt 1)" in status.error
        await echo_still_works(host)
        await watch.until(lambda: "up_echo" in host.tools.list())
        assert len(pids(mark)) == 2

        crashed = await host.tools.execute({"id": "c", "name": "up_crash", "args": {}})
        assert crashed.code == "tool_error"
        assert crashed.error == "MCP server 'up' closed the connection while the call was running"
        await watch.until(lambda: fiber.state is FiberState.FAILED)
        await watch.until(lambda: "up_echo" in host.tools.list())
        echoed = await host.tools.execute({"id": "d", "name": "up_echo", "args": {"text": "x"}})
        assert echoed.ok
        await echo_still_works(host)
        state = supervision(fiber)
        assert state is not None
        assert state.delays[:2] == [0.05, 0.1]


async def test_a_server_failing_at_start_backs_off_then_comes_back(
    tmp_path: Path, mark: Path
) -> None:
    (mark / "fail").write_text("until removed")
    config = write_config(tmp_path, [ECHO, stdio_entry("up", mark=mark, **FAST)])
    async with Host(config) as host:
        watch = Watch(host)
        fiber = fiber_of(host, "up")
        (status,) = [entry for entry in host.status() if entry.id == "up"]
        assert status.state == "failed"
        assert status.error is not None
        assert "refusing to start" in status.error
        state = supervision(fiber)
        assert state is not None
        await watch.until(lambda: len(state.delays) >= 5)
        assert state.delays[:5] == [0.05, 0.1, 0.2, 0.2, 0.2]
        assert host.tools.list() == ["echo"]
        retries = [event for event in watch.events if event[0] == "retry"]
        assert retries
        assert retries[0][1] == "up"
        assert "(attempt 2)" in retries[0][2]
        (status,) = [entry for entry in host.status() if entry.id == "up"]
        assert status.state == "failed"
        (mark / "fail").unlink()
        await watch.until(lambda: "up_echo" in host.tools.list())
        assert fiber.state is FiberState.ACTIVE
        await echo_still_works(host)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_check_reports_missing_command_refused_and_silent_http(tmp_path: Path) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    try:
        entries: list[dict[str, Any]] = [
            ECHO,
            {"id": "missing", "name": "harness:mcp-client", "config": {"command": "no-such-mcp"}},
            {
                "id": "refused",
                "name": "harness:mcp-client",
                "config": {"url": f"http://127.0.0.1:{free_port()}/mcp"},
            },
            {
                "id": "silent",
                "name": "harness:mcp-client",
                "config": {
                    "url": f"http://127.0.0.1:{silent.getsockname()[1]}/mcp",
                    "connect_timeout": 0.5,
                },
            },
            {
                "id": "exits",
                "name": "harness:mcp-client",
                "config": {
                    "command": PYTHON,
                    "args": [str(SERVER), "stdio"],
                    "env": {"UPSTREAM_FAIL_AT_START": "1"},
                },
            },
        ]
        config = write_config(tmp_path, entries)
        done = subprocess.run(
            [HARNESS, "-c", str(config), "check", "--json"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        silent.close()
    assert done.returncode == 1
    problems = {item["entry"]: item for item in json.loads(done.stdout)["problems"]}
    assert sorted(problems) == ["exits", "missing", "refused", "silent"]
    lines = config.read_text().splitlines()
    for entry, problem in problems.items():
        assert problem["file"] == str(config)
        assert lines[problem["line"] - 1] == "  name: harness:mcp-client", entry
    assert problems["missing"]["message"] == (  # a static problem: not retried
        "MCP server 'missing': command 'no-such-mcp' was not found on PATH; install it or give "
        "its full path"
    )
    assert problems["refused"]["message"].startswith(
        "MCP server 'refused': cannot reach http://127.0.0.1:"
    )
    assert problems["silent"]["message"].startswith(
        "MCP server 'silent': did not complete the MCP handshake and tools/list within "
        "connect_timeout (0.5 s)"
    )
    assert "refusing to start: UPSTREAM_FAIL_AT_START is set" in problems["exits"]["message"]
    assert "Traceback" not in done.stderr


async def test_a_name_collision_is_that_entrys_problem(tmp_path: Path) -> None:
    config = write_config(
        tmp_path, [stdio_entry("one", prefix=""), stdio_entry("two", prefix="", include=["echo"])]
    )
    async with Host(config) as host:
        assert host.tools.owner("echo") == "plugin 'one'"
        two = fiber_of(host, "two")
        assert two.state is FiberState.ACTIVE
        state = supervision(two)
        assert state is not None
        assert state.mount is not None
        assert "already registered by plugin 'one'" in state.mount.skipped["echo"]
        result = await host.tools.execute({"id": "1", "name": "echo", "args": {"text": "a"}})
        assert result.ok
