"""What ``ctx.progress`` costs a tool that reports in a tight loop, per surface.

One tool reports ``REPORTS`` times (the same message, ``done`` of ``REPORTS``) and returns.
It runs three ways: from Python with nothing listening (the base client: no event, no
screen), in an agent session (each report offered to the session's readers as a
``tool/progress`` event, held back unless it says something new or a tenth of a second has
passed: :mod:`harness.tools.progress_shown`), and the same session with every report let
through (what the agent surface would cost without holding reports back). Figures: µs per
report (the tool's run divided by its reports, best of ``ROUNDS``) and the events the
session's reader got.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from harness import CallContext, Host, ToolCall, tool
from harness.testing import Reply, Rule, ScriptedServer, call

REPORTS = 20_000
ROUNDS = 5


@tool
async def count(rows: int, ctx: CallContext) -> float:
    """Count rows, reporting each; the seconds it took."""
    started = time.perf_counter()
    for row in range(1, rows + 1):
        await ctx.progress(row, rows, "rows")
    return time.perf_counter() - started


def _config(folder: Path, server: ScriptedServer) -> Path:
    items: list[dict[str, Any]] = [
        {"id": "model", "name": "harness:openai", "config": {"model": "m", "base_url": server.url}},
        {"id": "agent", "name": "harness:agent", "config": {"sessions": None}},
    ]
    path = folder / "cordis.yml"
    path.write_text(yaml.safe_dump({"insert": items}), encoding="utf-8")
    return path


async def _session(host: Host, every: bool) -> tuple[float, int]:
    """Best µs per report over the rounds, and the progress events of the last round."""
    best, events = float("inf"), 0
    for _ in range(ROUNDS):
        seconds, events = 0.0, 0
        session = host.ctx.agent.session()
        if every:  # every report shown: what holding back saves
            session.client.shown.interval = 0.0
        async for event in session.send("count"):
            if event["type"] == "tool/progress":
                events += 1
            elif event["type"] == "tool/result":
                seconds = float(event["result"]["result"])
        best = min(best, seconds)
    return best / REPORTS * 1e6, events


async def main() -> None:
    rules = [
        Rule(Reply.calls(call("count", {"rows": REPORTS})), user="count"),
        Rule(Reply.say("counted"), tool="count"),
    ]
    with ScriptedServer(rules) as server, tempfile.TemporaryDirectory() as folder:
        async with Host(_config(Path(folder), server)) as host:
            host.tools.register(count)
            alone = float("inf")
            for round_ in range(ROUNDS):
                result = await host.tools.execute(
                    ToolCall(f"p{round_}", "count", {"rows": REPORTS})
                )
                alone = min(alone, float(result.result))
            held, held_events = await _session(host, every=False)
            every, every_events = await _session(host, every=True)
    print(f"ctx.progress in a tight loop ({REPORTS:,} reports, best of {ROUNDS})")
    print(f"  {'python, nothing listening':<44} {alone / REPORTS * 1e6:8.3f} µs/report")
    print(
        f"  {'agent session, held back (harness)':<44} {held:8.3f} µs/report  {held_events} events"
    )
    print(
        f"  {'agent session, every report shown':<44} {every:8.3f} µs/report  {every_events} events"
    )
