"""A program whose value is huge: what reaches an MCP client, and the host's memory for it.

``run_code`` over the official MCP client (in memory), ``max_output`` 20000, the program's
last expression a 20 MB string, then a list of a million numbers. Per case: the characters
of the result the client received, and how far the host's RSS rose during the call (sampled
every millisecond), as a multiple of the value's size as JSON (each case in a fresh process).
The value has to cross from the sandbox worker into the host before anything can cut it:
that much is Monty's (for a list, its objects in the host weigh many times their JSON).
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio
import yaml
from mcp import Client

from harness import Host
from harness.mcp import McpSurface

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "a 20 MB string": ('"x" * 20_000_000', 20_000_000),
    "a list of 1e6 numbers": ("list(range(1_000_000))", len(json.dumps(list(range(1_000_000))))),
}


def rss_mb() -> float:
    """This process's resident memory now."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 1e6


class Peak:
    """The highest RSS seen while it runs (sampled every millisecond in a thread)."""

    def __init__(self) -> None:
        self.base = rss_mb()
        self.high = self.base
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.wait(0.001):
            self.high = max(self.high, rss_mb())

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        self.high = max(self.high, rss_mb())


async def child(case: str, folder: Path) -> None:
    """One case in this process: print ``{sent, rss_mb, wall_ms}`` as JSON."""
    path = folder / "cordis.yml"
    code = {"id": "code", "name": "harness:code", "config": {"max_memory": "256MiB"}}
    path.write_text(yaml.safe_dump({"insert": [{"id": "tools", "name": "harness:tools"}, code]}))
    program, _ = CASES[case]
    async with Host(path) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        async with Client(surface.server) as client:
            await client.session.call_tool("run_code", {"code": "1"})  # everything loaded
            gc.collect()
            with Peak() as peak:
                began = time.perf_counter()
                result = await client.session.call_tool("run_code", {"code": program})
                wall = time.perf_counter() - began
            rise = peak.high - peak.base
    assert result.is_error is False, result
    sent = len(json.dumps(result.model_dump(mode="json")))
    print(json.dumps({"sent": sent, "rss_mb": rise, "wall_ms": wall * 1000}))


async def main() -> None:
    print("run_code over MCP, max_output 20000; host RSS rise during the call (fresh process)")
    with tempfile.TemporaryDirectory() as temp:
        for case, (_, size) in CASES.items():
            done = await anyio.run_process(
                [sys.executable, "-m", "bench.code_value", case, temp], cwd=ROOT
            )
            row = json.loads(done.stdout.decode().splitlines()[-1])
            print(
                f"  {case:22} value {size / 1e6:5.1f} MB as JSON: {row['sent']:>9} characters "
                f"sent; peak RSS +{row['rss_mb']:6.1f} MB (x{row['rss_mb'] * 1e6 / size:.1f} "
                f"the value); {row['wall_ms']:.0f} ms"
            )


if __name__ == "__main__":
    anyio.run(child, sys.argv[1], Path(sys.argv[2]))
