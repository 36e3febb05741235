"""Hot-reload latency: from a plugin file write to the new version answering calls.

Runs a Host(watch=True) on one tool plugin and edits it 25 times. For each edit it
measures the time from the write to the first call that returns the new version (calls
are made in a tight loop), and the reload work itself (``reload/start`` to
``reload/done``). Reports median and max.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from harness import Host

PLUGIN = """
from harness import define_tool

inject = ["tools"]


def apply(ctx):
    ctx.tools.register(define_tool(name="v", description="d", execute=lambda args: {version}))
"""


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "plugins").mkdir()
        source = folder / "plugins" / "v.py"
        source.write_text(PLUGIN.format(version=0))
        (folder / "cordis.yml").write_text("- { id: v, name: ./plugins/v.py }\n")
        end_to_end: list[float] = []
        work: list[float] = []
        async with Host(folder / "cordis.yml", watch=True) as host:
            started: list[float] = []

            def on_start(files: Any) -> None:
                started.append(time.perf_counter())

            def on_done(report: Any) -> None:
                work.append(time.perf_counter() - started[-1])

            host.ctx.on("reload/start", on_start)
            host.ctx.on("reload/done", on_done)
            for version in range(1, 26):
                await anyio.sleep(0.05)  # let the previous reload settle
                written = time.perf_counter()
                source.write_text(PLUGIN.format(version=version))
                with anyio.fail_after(10):
                    # poll like a client would: the measure is when calls see the new version
                    while (await host.tools.execute({"name": "v"})).result != version:  # noqa: ASYNC110
                        await anyio.sleep(0.001)
                end_to_end.append(time.perf_counter() - written)
    print("file write -> new version answering (25 edits, watcher step 20 ms)")
    median, worst = statistics.median(end_to_end) * 1000, max(end_to_end) * 1000
    print(f"  median {median:6.1f} ms   max {worst:6.1f} ms")
    print("reload work (re-import, dispose, apply) per reload of one plugin")
    print(f"  median {statistics.median(work) * 1000:6.2f} ms   max {max(work) * 1000:6.2f} ms")
