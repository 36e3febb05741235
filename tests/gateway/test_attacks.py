"""A hostile upstream in a real subprocess cannot make harness read a huge answer or re-list
without bound: the caps apply while reading (stdio and streamable HTTP), re-lists coalesce."""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness import CallContext, Client, Host, ToolCall, define_tool
from harness.fiber import FiberState
from harness.gateway.plugin import supervision

from .conftest import PYTHON, Watch, fiber_of, text_of, write_config
from .test_faults import free_port
from .test_hostile import HOSTILE, hostile

pytestmark = pytest.mark.anyio
CUT = (
    "the server's answer is larger than max_result_bytes (4000000), so harness stopped reading "
    "it there; ask for less (a narrower query, a page) or raise max_result_bytes"
)
HUGE = 50_000_000


@pytest.fixture
def http_url() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [PYTHON, str(HOSTILE), "http", str(port)],
        stdout=subprocess.PIPE,
        text=True,
        env={"HOSTILE_DESCRIPTION_BYTES": "100", "PATH": ""},
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "listening"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


async def call(host: Host, name: str, **args: Any) -> Any:
    return await host.tools.execute({"id": name, "name": name, "args": args})


@pytest.mark.parametrize("order", ["id-first", "id-last"])
async def test_a_huge_stdio_answer_is_cut_while_read(tmp_path: Path, order: str) -> None:
    config = write_config(tmp_path, [hostile(include=["huge", "echo"], timeout=120)])
    async with Host(config) as host:
        result = await call(host, "up_huge", size=HUGE, order=order)
        assert (result.code, result.error) == ("tool_error", CUT)
        echoed = await call(host, "up_echo", text="still here")
        assert text_of(echoed) == "hostile says still here"
        state = supervision(fiber_of(host, "up"))
        assert state is not None
        assert state.delays == []  # the connection lived on: nothing restarted


@pytest.mark.parametrize("sse", [False, True], ids=["json", "sse"])
# httpx2's response stream iterates httpcore2's body generator without closing it when left
# early (as any cap must leave it, the SDK's own SSE event cap too); on trio, collecting that
# generator warns. The connection itself is closed with the response.
@pytest.mark.filterwarnings("ignore:Async generator 'httpcore2:ResourceWarning")
async def test_a_huge_http_answer_is_cut_while_read(
    tmp_path: Path, http_url: str, sse: bool
) -> None:
    entry = {"id": "up", "name": "harness:mcp-client", "config": {"url": http_url, "timeout": 120}}
    async with Host(write_config(tmp_path, [entry])) as host:
        result = await call(host, "up_huge", size=HUGE, order="id-first", sse=sse)
        assert (result.code, result.error) == ("tool_error", CUT)
        echoed = await call(host, "up_echo", text="still here")
        assert text_of(echoed) == "hostile says still here"


async def test_a_tools_list_past_max_list_bytes_fails_the_entry_saying_so(tmp_path: Path) -> None:
    entry = hostile(env={"HOSTILE_DESCRIPTION_BYTES": "200000"}, max_list_bytes=100_000)
    async with Host(write_config(tmp_path, [entry])) as host:
        fiber = fiber_of(host, "up")
        assert fiber.state is FiberState.FAILED
        assert str(fiber.error).startswith(
            "MCP server 'up': the server's tools/list answer is larger than max_list_bytes "
            "(100000), so harness stopped reading it there; raise max_list_bytes"
        )


async def test_a_flood_of_list_changes_costs_a_bounded_number_of_lists(tmp_path: Path) -> None:
    config = write_config(tmp_path, [hostile(include=["flood", "lists", "flooded"])])
    async with Host(config) as host:
        watch = Watch(host)
        flooded = await call(host, "up_flood", count=5000)  # all at once
        assert flooded.ok
        await watch.until(lambda: "up_flooded" in host.tools.list())
        answered = int(text_of(await call(host, "up_lists")))
        assert 2 <= answered <= 4  # the first list, then at most one re-list per 0.5 s
        state = supervision(fiber_of(host, "up"))
        assert state is not None
        assert state.connection is not None
        assert state.connection.relists <= 3


async def test_a_sustained_flood_costs_one_list_per_half_second(tmp_path: Path) -> None:
    config = write_config(tmp_path, [hostile(include=["flood", "lists", "flooded"])])
    async with Host(config) as host:
        watch = Watch(host)
        flooded = await call(host, "up_flood", count=5000, seconds=2.0)  # 100 bursts of 50
        lasted = float(text_of(flooded))  # as the server measured it
        await watch.until(lambda: "up_flooded" in host.tools.list())
        answered = int(text_of(await call(host, "up_lists")))
        # the first list, one re-list per 0.5 s the flood lasted, the one it left pending
        assert answered <= 1 + lasted / 0.5 + 2


async def test_an_oversized_notification_is_dropped_and_a_stray_answer_ends_the_connection(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, [hostile(include=["noise", "stray", "echo"], timeout=120)])
    async with Host(config) as host:
        noise = await call(host, "up_noise", size=HUGE)
        assert text_of(noise) == "after the noise"
        stray = await call(host, "up_stray", size=HUGE)
        assert stray.code == "tool_error"
        assert stray.error is not None
        assert stray.error.startswith("MCP server 'up': the server sent a ")
        assert stray.error.endswith(
            "-byte message (more than max_result_bytes, 4000000) that answers no request "
            "harness sent"
        )


async def test_a_compressed_http_answer_is_refused(tmp_path: Path, http_url: str) -> None:
    entry = {"id": "up", "name": "harness:mcp-client", "config": {"url": http_url}}
    async with Host(write_config(tmp_path, [entry])) as host:
        plain = await call(host, "up_echo", text="a")
        assert text_of(plain) == "hostile says a"
        packed = await call(host, "up_echo", text="a", gzip=True)
        assert packed.code == "tool_error"
        assert packed.error is not None
        assert "the server compressed its answer, which harness did not ask for" in packed.error


class Counting(Client):
    """A caller that counts the progress and logs it is shown."""

    def __init__(self) -> None:
        super().__init__("client-counting")
        self.reports = 0
        self.logs = 0

    async def progress(
        self, ctx: CallContext, done: float, total: float | None, message: str | None
    ) -> None:
        self.reports += 1

    async def log(self, ctx: CallContext, level: str, message: str, data: dict[str, Any]) -> None:
        self.logs += 1


async def _tick(args: dict[str, Any]) -> int:
    await anyio.lowlevel.checkpoint()  # a pass through the event loop, where the flood is read
    return 1


async def test_a_flood_of_progress_and_logs_reaches_the_caller_bounded(tmp_path: Path) -> None:
    config = write_config(tmp_path, [hostile(include=["chatter"], timeout=120)])
    async with Host(config) as host:
        host.tools.register(define_tool(name="tick", description="Tick", execute=_tick))

        async def local_calls(count: int) -> list[float]:
            took = []
            for index in range(count):
                began = time.perf_counter()
                result = await host.tools.execute({"id": f"t{index}", "name": "tick"})
                took.append(time.perf_counter() - began)
                assert result.ok, result.error
            return took

        baseline = statistics.median(await local_calls(300))
        caller = Counting()
        request = ToolCall("chatter", "up_chatter", {"count": 20_000})
        CallContext(request, "mcp", caller)
        during: list[float] = []
        done = anyio.Event()
        outcome: list[Any] = []

        async def chatter() -> None:
            outcome.append(await host.tools.execute(request))
            done.set()

        began = time.perf_counter()
        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                group.start_soon(chatter)
                while not done.is_set() or len(during) < 300:
                    during.extend(await local_calls(10))
        lasted = time.perf_counter() - began
    (result,) = outcome
    assert text_of(result) == "chattered"
    # 40 000 notifications sent; the caller is shown at most max_notifications (50) a second
    shown = caller.reports + caller.logs
    assert caller.reports > 0
    assert caller.logs > 0
    assert shown <= 50 * (lasted + 1), (shown, lasted)
    # local calls keep pace (a generous bound: twice the quiet median, at least 1 ms)
    assert statistics.median(during) <= 2 * max(baseline, 0.001), (baseline, during)
