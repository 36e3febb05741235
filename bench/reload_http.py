"""Calls over HTTP while the tool's file is edited: a reload is atomic to its callers.

``harness run`` (a real subprocess, hot reload on) serves one plugin, ``add.py``, over MCP
streamable HTTP on 127.0.0.1. 64 keep-alive clients call ``add`` one request after another
(the exact 2026-07-28 bytes the SDK's ``Client`` sends, over raw sockets, as
:mod:`bench.mcp_http` does) for 20 s with no edit and 20 s while ``add.py`` is rewritten
three times a second, each version answering with its own tag (four rounds of each,
alternating, so that a change in the machine's load weighs on both).
Reported: calls and errors of each phase (an error is anything but a 200 with
``isError: false``, "Tool add not found" included: there must be none), how many versions
answered and whether the last edit went live, and p50/p99 latency during the edits against
without them (wall time: on a loaded machine it moves with the load).

``python -m bench reload_http`` runs 20 s per phase; ``python -m bench.reload_http SECONDS``
another length.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .mcp_http import free_port, percentile, read_response, request_bytes, wait_ready

CLIENTS = 64
SECONDS = 20.0
ROUNDS = 4
"""Each phase is cut in this many rounds, the two phases' rounds alternating."""
EDITS_PER_SECOND = 3

PLUGIN = '''
from harness import tool

inject = ["tools"]


@tool
async def add(a: int, b: int) -> str:
    """Add two numbers."""
    return f"{{a + b}} v{version}"


def apply(ctx):
    ctx.tools.register(add)
'''


class Phase:
    """What the clients saw in one phase."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors: Counter[str] = Counter()
        self.versions: list[str] = []


async def clients(port: int, seconds: float, phase: Phase) -> None:
    payload = request_bytes(
        port, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, "add"
    )
    stop = time.perf_counter() + seconds

    async def client() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while time.perf_counter() < stop:
                start = time.perf_counter()
                writer.write(payload)
                status, body = await read_response(reader)
                phase.latencies.append(time.perf_counter() - start)
                compact = body.replace(b" ", b"")
                if status != 200 or b'"isError":false' not in compact:
                    phase.errors[f"{status} {body[:160].decode(errors='replace')}"] += 1
                    continue
                tag = compact.partition(b'"text":"3v')[2].partition(b'"')[0]
                phase.versions.append(tag.decode())
        finally:
            writer.close()

    await asyncio.gather(*(client() for _ in range(CLIENTS)))


def write_version(source: Path, version: int) -> None:
    source.write_text(PLUGIN.format(version=version))


def start(folder: Path, port: int) -> subprocess.Popen[bytes]:
    """``harness run`` on ``folder``'s cordis.yml, hot reload on, MCP over HTTP on ``port``."""
    harness_bin = Path(sys.executable).parent / "harness"
    return subprocess.Popen(
        [
            str(harness_bin),
            "-c",
            str(folder / "cordis.yml"),
            "run",
            "--no-web",
            "--port",
            str(port),
        ],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=folder,
    )


async def editor(source: Path, seconds: float, version: int) -> int:
    """Rewrite ``source`` EDITS_PER_SECOND times a second, from ``version`` on; the last
    version's number."""
    stop = time.perf_counter() + seconds
    while time.perf_counter() < stop:
        await asyncio.sleep(1 / EDITS_PER_SECOND)
        version += 1
        write_version(source, version)
    return version


@dataclass
class Figures:
    quiet: Phase
    edited: Phase
    final: Phase
    last: int
    """The last version written."""


def prepare(folder: Path) -> Path:
    source = folder / "add.py"
    write_version(source, 0)
    (folder / "cordis.yml").write_text("- { id: add, name: ./add.py }\n")
    return source


async def measure(seconds: float = SECONDS) -> Figures:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        source = prepare(folder)
        port = free_port()
        process = start(folder, port)
        try:
            await wait_ready(port, process)
            await clients(port, 1.0, Phase())  # warm up
            quiet, edited = Phase(), Phase()
            last = 0
            for _ in range(ROUNDS):  # alternating: a drift in the machine's load hits both
                await clients(port, seconds / ROUNDS, quiet)
                _, last = await asyncio.gather(
                    clients(port, seconds / ROUNDS, edited),
                    editor(source, seconds / ROUNDS - 0.4, last),
                )
            final = Phase()  # the last edit is live: a few calls after the edits stopped
            deadline = time.perf_counter() + 10
            while time.perf_counter() < deadline and str(last) not in final.versions:
                await clients(port, 0.2, final)
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
    return Figures(quiet, edited, final, last)


def report(figures: Figures, seconds: float) -> None:
    quiet, edited, final, last = figures.quiet, figures.edited, figures.final, figures.last
    print(
        f"tools/call add over streamable HTTP, {CLIENTS} clients, {seconds:g} s without edits "
        f"and {seconds:g} s with add.py rewritten {EDITS_PER_SECOND} times a second, in "
        f"{ROUNDS} alternating rounds each "
        f"(load average {os.getloadavg()[0]:.1f})"
    )
    for label, phase in (("without edits", quiet), ("during edits", edited)):
        ms = [value * 1000 for value in phase.latencies]
        print(
            f"  {label:<14} {len(ms):7d} calls  {sum(phase.errors.values()):5d} errors  "
            f"p50 {percentile(ms, 0.50):6.2f} ms  p99 {percentile(ms, 0.99):6.2f} ms"
        )
        for error, count in phase.errors.most_common(3):
            print(f"    {count} x {error}")
    p99 = percentile(edited.latencies, 0.99) / percentile(quiet.latencies, 0.99)
    versions = len(set(edited.versions))
    print(
        f"  during edits: {last} edits, {versions} versions answered; the last (v{last}) "
        f"{'went live' if str(last) in final.versions else 'did NOT go live'}; "
        f"p99 during / without edits x{p99:.2f}"
    )


async def main(seconds: float = SECONDS) -> None:
    report(await measure(seconds), seconds)


if __name__ == "__main__":
    length = float(sys.argv[1]) if len(sys.argv) > 1 else SECONDS
    asyncio.run(main(length))
