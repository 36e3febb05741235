"""Added latency of one mounted call: harness:mcp-client beside fastmcp's proxy.

The upstream is an official-SDK server (``bench/gateway_upstream.py``) over stdio and over
streamable HTTP. For each transport, one interleaved run times (wall clock, best of rounds,
ms per call):

- direct: the SDK ``Client`` calling the upstream itself;
- harness registry: ``ctx.tools.execute`` of the mounted tool (the whole local pipeline,
  default 60 s timeout, then the upstream) — what the agent and ``harness call`` pay;
- harness over MCP: the SDK ``Client`` in memory to harness's MCP surface, which runs the
  pipeline and calls the upstream — the same shape as the fastmcp case;
- fastmcp proxy: fastmcp's ``Client`` in memory to ``create_proxy(upstream)``.

Each transport runs twice: a plain call (``echo``), and with forwarding on (``chatter``:
the upstream reports progress and logs during the call, and every client takes both).

The added latency of a gateway is its time minus the direct time.
"""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from harness import Context, ToolsService
from harness.gateway import plugin as mcp_client
from harness.mcp import McpSurface

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = [sys.executable, "-m", "bench.gateway_upstream"]
Call = Callable[[], Awaitable[Any]]


async def compare_wall(
    cases: dict[str, Call], number: int = 200, rounds: int = 7
) -> dict[str, float]:
    """Best mean ms per call of each case, interleaved rounds, wall clock."""
    best = dict.fromkeys(cases, float("inf"))
    for call in cases.values():
        for _ in range(20):
            await call()
    for _ in range(rounds):
        for label, call in cases.items():
            start = time.perf_counter()
            for _ in range(number):
                await call()
            best[label] = min(best[label], (time.perf_counter() - start) / number * 1000)
    return best


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _start_http() -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    process = subprocess.Popen(  # uvicorn's access log (stdout) would flood the report
        [*UPSTREAM, "http", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        if "Uvicorn running" in line:
            break
    threading.Thread(target=process.stderr.read, daemon=True).start()
    return process, f"http://127.0.0.1:{port}/mcp"


CHATTER = 3
"""Progress notifications and log messages the upstream sends per forwarded call (each)."""


async def _measure(
    label: str, target: Any, config: dict[str, Any], fast_target: Any, forwarding: bool = False
) -> None:
    """One interleaved run. With ``forwarding``, the tool called is ``chatter``: the upstream
    reports progress and logs ``CHATTER`` times each during the call, and every client
    asks for both (a progress callback, a log handler), so each gateway forwards them."""
    from fastmcp import Client as FastClient
    from fastmcp.server import create_proxy

    tool, args, value = "echo", {"text": "hi"}, {"result": "hi"}
    if forwarding:
        tool, args, value = "chatter", {"count": CHATTER}, {"result": "chattered"}
    seen = dict.fromkeys(("direct", "harness", "fastmcp"), 0)

    def counter(who: str) -> Callable[..., Awaitable[None]]:
        async def count(*_: Any) -> None:
            seen[who] += 1

        return count

    def hooks(who: str) -> dict[str, Any]:
        return {"logging_callback": counter(who)} if forwarding else {}

    def progress(who: str) -> dict[str, Any]:
        return {"progress_callback": counter(who)} if forwarding else {}

    failed = _FailedCallbacks()  # fastmcp's proxy failing to forward a log (counted)
    logging.getLogger("client").addFilter(failed)
    async with Context() as root:
        await root.plugin(ToolsService)
        await root.plugin(mcp_client, {**config, "max_notifications": 1_000_000}, name="up")
        surface = McpSurface(root)
        surface.attach()
        call = {"id": "b", "name": f"up_{tool}", "args": args}
        proxy = create_proxy(fast_target)
        fast_hooks = {"log_handler": counter("fastmcp")} if forwarding else {}
        fast_progress = {"progress_handler": counter("fastmcp")} if forwarding else {}
        async with (
            Client(target, mode="legacy", **hooks("direct")) as direct,
            Client(surface.server, mode="legacy", **hooks("harness")) as ours,
            FastClient(proxy, **fast_hooks) as theirs,
        ):

            async def call_direct() -> Any:
                return await direct.call_tool(tool, args, **progress("direct"))

            async def call_ours() -> Any:
                return await ours.call_tool(f"up_{tool}", args, **progress("harness"))

            async def call_theirs() -> Any:
                return await theirs.call_tool(tool, args, **fast_progress)

            assert (await call_direct()).structured_content == value
            assert (await root.tools.execute(call)).result == value
            assert (await call_ours()).structured_content == value
            assert (await call_theirs()).structured_content == value
            await anyio.sleep(0.2)  # the last notifications of the checks arrive
            checked = dict(seen)
            for who in seen:
                seen[who] = 0

            async def registry() -> Any:
                return await root.tools.execute(call)

            results = await compare_wall(
                {
                    "direct (SDK client to the upstream)": call_direct,
                    "harness registry (tools.execute)": registry,
                    "harness over MCP (SDK client, in memory)": call_ours,
                    "fastmcp proxy (fastmcp client, in memory)": call_theirs,
                }
            )
            await anyio.sleep(0.2)
    logging.getLogger("client").removeFilter(failed)
    base = results["direct (SDK client to the upstream)"]
    print(f"{label}: ms per call, and added over direct", flush=True)
    for name, found in results.items():
        added = found - base
        print(f"  {name:<44} {found:7.3f} ms   +{added:6.3f} ms")
    if forwarding:
        print(
            f"  notifications received by each client for its first call (of {2 * CHATTER}): "
            + ", ".join(f"{who} {count}" for who, count in checked.items())
        )
        print(
            "  and over the timed calls: "
            + ", ".join(f"{who} {count}" for who, count in seen.items())
        )
        if failed.count:
            print(f"  a client's log callback raised {failed.count} times (not shown)")
    ours_added = results["harness over MCP (SDK client, in memory)"] - base
    theirs_added = results["fastmcp proxy (fastmcp client, in memory)"] - base
    if ours_added > 0:
        print(f"  added latency, fastmcp / harness over MCP: x{theirs_added / ours_added:.2f}")
    else:
        print("  harness's added latency is below this run's noise (under 0); fastmcp's is not")


class _FailedCallbacks(logging.Filter):
    """Counts, and keeps out of the report, the SDK client's "notification callback
    raised" tracebacks (fastmcp's proxy, over stdio, fails to forward each log)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == "notification callback for %r raised":
            self.count += 1
            return False
        return True


async def main() -> None:
    stdio = StdioServerParameters(command=UPSTREAM[0], args=[*UPSTREAM[1:], "stdio"], cwd=ROOT)
    stdio_config = {"command": UPSTREAM[0], "args": [*UPSTREAM[1:], "stdio"], "cwd": str(ROOT)}
    from fastmcp.client.transports import StdioTransport

    fast_stdio = StdioTransport(command=UPSTREAM[0], args=[*UPSTREAM[1:], "stdio"], cwd=str(ROOT))
    await _measure("stdio", stdio, stdio_config, fast_stdio)
    await _measure("stdio, forwarding on", stdio, stdio_config, fast_stdio, forwarding=True)
    process, url = _start_http()
    try:
        await _measure("streamable HTTP", url, {"url": url}, url)
        await _measure("streamable HTTP, forwarding on", url, {"url": url}, url, forwarding=True)
    finally:
        process.terminate()
        process.wait(timeout=20)
    await _attack()


async def _attack() -> None:
    """Local ``echo`` latency over MCP, idle and while the upstream attacks (one 50 MB result
    and 5000 ``tools/list_changed``): the ratio must stay within 2x."""
    from harness import define_tool

    stdio_config = {"command": UPSTREAM[0], "args": [*UPSTREAM[1:], "stdio"], "cwd": str(ROOT)}
    async with Context() as root:
        await root.plugin(ToolsService)
        fiber = await root.plugin(mcp_client, {**stdio_config, "timeout": 8}, name="up")
        root.tools.register(
            define_tool(
                name="echo",
                description="Echo the text back.",
                parameters={"text": {"type": "string"}},
                execute=lambda args: args["text"],
            )
        )
        surface = McpSurface(root)
        surface.attach()
        async with Client(surface.server, mode="legacy") as client:

            async def echo_ms(count: int) -> list[float]:
                times = []
                for _ in range(count):
                    start = time.perf_counter()
                    await client.call_tool("echo", {"text": "hi"})
                    times.append((time.perf_counter() - start) * 1000)
                return times

            await echo_ms(50)
            idle = await echo_ms(1000)
            outcome: dict[str, Any] = {}

            async def huge() -> None:
                start = time.perf_counter()
                call = {"id": "h", "name": "up_huge", "args": {"size": 50_000_000}}
                result = await root.tools.execute(call)
                outcome["huge"] = (result.code, (time.perf_counter() - start) * 1000)

            async def flood() -> None:
                call = {"id": "f", "name": "up_flood", "args": {"count": 5000}}
                outcome["flood"] = (await root.tools.execute(call)).code

            during: list[float] = []
            began, cpu = time.perf_counter(), time.process_time()
            async with anyio.create_task_group() as group:
                group.start_soon(huge)
                group.start_soon(flood)
                while "huge" not in outcome or "flood" not in outcome:
                    during.extend(await echo_ms(5))
            lasted, cpu = time.perf_counter() - began, time.process_time() - cpu
            idle_cpu = time.process_time()
            await echo_ms(len(during))
            idle_cpu = time.process_time() - idle_cpu
            state = mcp_client.supervision(fiber)
            relists = getattr(state.connection, "relists", "?") if state else None
    idle.sort()
    during.sort()

    def line(label: str, values: list[float]) -> str:
        mean = sum(values) / len(values)
        return (
            f"  local echo over MCP, {label:<12} mean {mean:7.3f} ms, median "
            f"{values[len(values) // 2]:7.3f} ms, p90 {values[int(len(values) * 0.9)]:7.3f} ms "
            f"({len(values)} calls)"
        )

    print("attack (stdio upstream: one 50 MB result + 5000 tools/list_changed, at once)")
    print(line("idle", idle))
    print(line("under attack", during))
    ratio = (sum(during) / len(during)) / (sum(idle) / len(idle))
    middle = during[len(during) // 2] / idle[len(idle) // 2]
    print(f"  ratio under attack / idle: mean x{ratio:.2f}, median x{middle:.2f}")
    code, ms = outcome["huge"]
    print(
        f"  the attack lasted {lasted * 1000:.0f} ms; the 50 MB call: {code} after {ms:.0f} ms; "
        f"the flood call: {outcome['flood'] or 'ok'}; re-lists: {relists}"
    )
    print(
        f"  harness's CPU time during the attack: {cpu * 1000:.0f} ms; the same echo calls "
        f"when idle: {idle_cpu * 1000:.0f} ms (the rest of the wall time is the upstream's and "
        "the machine's)"
    )
