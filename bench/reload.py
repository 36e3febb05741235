"""Hot-reload latency: from a plugin file write to the new version answering calls.

Runs a ``Host(watch=True)`` with 1 plugin, then with 1000 plugins loaded (each one file that
imports a shared helper), each in a fresh process, and edits one plugin 25 times. For each
edit it measures the time from the write to the first call that returns the new version
(calls are made in a tight loop, as a client would), the reload work itself
(``reload/start`` to ``reload/done``), and the longest the event loop was kept from running
meanwhile (a 1 ms ticker's worst late wake-up). Reports medians and maxima, and the ratios
of the 1000-plugin case to the 1-plugin one. The watcher waits for 20 ms of quiet after the
last change (``STEP_MS``), so that much of write-to-live is the debounce.

``python -m bench reload`` runs both sizes; ``python -m bench.reload N`` runs one size and
prints its figures as JSON (what the fresh processes do).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from harness import Host

PLUGIN = """
from harness import define_tool

from . import shared

inject = ["tools"]


def apply(ctx):
    ctx.tools.register(
        define_tool(name="{name}", description="d", execute=lambda args: shared.tag({version}))
    )
"""
SHARED = "def tag(version):\n    return version\n"
EDITS = 25
SIZES = (1, 1000)


def make_folder(folder: Path, size: int) -> Path:
    plugins = folder / "plugins"
    plugins.mkdir()
    (plugins / "shared.py").write_text(SHARED)
    lines = ["insert:"]
    for index in range(size):
        (plugins / f"p{index}.py").write_text(PLUGIN.format(name=f"t{index}", version=0))
        lines.append(f"  - {{ id: p{index}, name: ./plugins/p{index}.py }}")
    config = folder / "cordis.yml"
    config.write_text("\n".join(lines) + "\n")
    return config


async def measure(size: int) -> dict[str, Any]:
    """Edit plugin 0 of ``size`` loaded plugins EDITS times; the figures in ms."""
    with tempfile.TemporaryDirectory() as tmp:
        config = make_folder(Path(tmp), size)
        source = config.parent / "plugins" / "p0.py"
        live: list[float] = []
        work: list[float] = []
        lag: list[float] = []
        async with Host(config, watch=True) as host:
            started: list[float] = []
            worst = [0.0]

            def on_start(files: Any) -> None:
                started.append(time.perf_counter())

            def on_done(report: Any) -> None:
                work.append(time.perf_counter() - started[-1])

            async def ticker() -> None:
                while True:
                    before = time.perf_counter()
                    await anyio.sleep(0.001)
                    worst[0] = max(worst[0], time.perf_counter() - before - 0.001)

            host.ctx.on("reload/start", on_start)
            host.ctx.on("reload/done", on_done)
            async with anyio.create_task_group() as group:
                group.start_soon(ticker)
                for version in range(1, EDITS + 1):
                    await anyio.sleep(0.05)  # let the previous reload settle
                    worst[0] = 0.0
                    written = time.perf_counter()
                    source.write_text(PLUGIN.format(name="t0", version=version))
                    with anyio.fail_after(10):
                        while (await host.tools.execute({"name": "t0"})).result != version:  # noqa: ASYNC110
                            await anyio.sleep(0.001)
                    live.append(time.perf_counter() - written)
                    lag.append(worst[0])
                group.cancel_scope.cancel()
    ms = 1000.0
    return {
        "size": size,
        "live_median": statistics.median(live) * ms,
        "live_max": max(live) * ms,
        "work_median": statistics.median(work) * ms,
        "work_max": max(work) * ms,
        "lag_median": statistics.median(lag) * ms,
        "lag_max": max(lag) * ms,
    }


def fresh(size: int) -> dict[str, Any]:
    """``measure(size)`` in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-m", "bench.reload", str(size)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


async def main() -> None:
    results = {size: fresh(size) for size in SIZES}
    print(f"hot reload of one edited plugin ({EDITS} edits, watcher quiet step 20 ms), ms")
    print(f"  {'plugins loaded':<16}{'write->live':>22}{'reload work':>22}{'loop blocked':>22}")
    print(f"  {'':<16}{'median    max':>22}{'median    max':>22}{'median    max':>22}")
    for size, row in results.items():
        cells = "".join(
            f"{row[key + '_median']:14.1f}{row[key + '_max']:8.1f}"
            for key in ("live", "work", "lag")
        )
        print(f"  {size:<16}{cells}")
    small, big = results[SIZES[0]], results[SIZES[-1]]
    print(
        f"  ratio {SIZES[-1]} / {SIZES[0]} plugins (median): write->live "
        f"x{big['live_median'] / small['live_median']:.2f}, reload work "
        f"x{big['work_median'] / small['work_median']:.2f}"
    )


if __name__ == "__main__":
    print(json.dumps(anyio.run(measure, int(sys.argv[1]))))
