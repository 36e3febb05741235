"""Ctrl-C or SIGTERM to ``harness run`` while an MCP client's program busy-loops: the process
stops its sandbox workers and exits within 5 s (it used to wait out the program's timeout)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import anyio
import pytest
from anyio.abc import SocketAttribute, SocketStream
from mcp import Client

from ..helpers import ROOT, write
from ..processes import start_harness_run, stop

pytestmark = pytest.mark.anyio

READY = """
import anyio
from anyio.abc import SocketAttribute, SocketStream
from harness import define_tool

inject = ["tools"]


def apply(ctx, config):
    async def ready(args):
        stream = await anyio.connect_tcp("127.0.0.1", config["port"])
        await stream.aclose()
        return "ok"

    ctx.tools.register(define_tool(name="ready", description="Tell the test", execute=ready))
"""

BUSY = "await ready()\nwhile True:\n    pass"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK's HTTP client runs on asyncio here


def children(pid: int) -> set[int]:
    """The processes whose parent is ``pid``."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (not gone, not a zombie waiting to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_a_signal_stops_a_busy_program_and_harness_run_exits_within_5_s(
    tmp_path: Path, signum: signal.Signals
) -> None:
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener:
        port = listener.extra(SocketAttribute.local_port)
        write(tmp_path / "plugins" / "ready.py", READY)
        write(
            tmp_path / "cordis.yml",
            f"""
            insert:
              - {{ id: tools, name: "harness:tools" }}
              - {{ id: add, name: {ROOT / "plugins" / "add.py"} }}
              - {{ id: ready, name: ./plugins/ready.py, config: {{ port: {port} }} }}
              - {{ id: code, name: "harness:code", config: {{ timeout: 60 }} }}
            """,
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
        process, http = await anyio.to_thread.run_sync(start_harness_run, tmp_path, env)
        try:
            async with anyio.create_task_group() as group:

                async def program() -> None:
                    async with Client(f"http://127.0.0.1:{http}/mcp") as client:
                        await client.session.call_tool("run_code", {"code": BUSY})

                ready = anyio.Event()

                async def connected(stream: SocketStream) -> None:
                    async with stream:
                        ready.set()

                group.start_soon(listener.serve, connected)
                group.start_soon(program)
                with anyio.fail_after(60):
                    await ready.wait()  # the program has begun: it loops from here on
                workers = children(process.pid)
                assert workers, "no sandbox worker under harness run"
                began = time.monotonic()
                process.send_signal(signum)
                try:
                    code: int | None = await anyio.to_thread.run_sync(process.wait, 20)
                except subprocess.TimeoutExpired:
                    code = None
                took = time.monotonic() - began
                group.cancel_scope.cancel()  # the client's call ends with the server
        finally:
            stop(process)
    assert code is not None, f"harness run still ran 20 s after {signum.name}"
    assert took < 5, f"harness run took {took:.1f} s to exit after {signum.name}"
    assert code == 0
    assert [pid for pid in workers if running(pid)] == []
