"""Startup cost of a config with 10 to 3000 entries, and memory over load/unload cycles.

Each entry is a plugin file registering one tool. Reports the time of ``Host`` start-up
(read, resolve, import, apply) per size and per entry, to show it grows linearly: wall
clock and the process's CPU time (which time spent descheduled on a loaded machine does not
inflate), for a first start (every plugin file compiled) and a restart (the plugins'
bytecode cached, as Python writes it by default). Then loads and unloads one tool plugin
1000 times and compares traced memory before and after. Last, ``harness tools --json`` on
the bundled cordis.yml as a whole process: the median of 7 runs after a warm-up, wall and
CPU, in the environment the bench runs in (it says how many modules have their bytecode
compiled ahead, as ``make`` does, and whether ``PYTHONDONTWRITEBYTECODE`` is set).
"""

from __future__ import annotations

import gc
import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import harness
from harness import Context, Host, ToolsService, define_tool
from harness.loader.modules import LOCAL_PREFIX

PLUGIN = """
from harness import define_tool

inject = ["tools"]


def apply(ctx):
    ctx.tools.register(
        define_tool(name="tool_{index}", description="d", execute=lambda args: {index})
    )
"""


def make_config(folder: Path, size: int) -> Path:
    plugins = folder / "plugins"
    plugins.mkdir(parents=True)
    lines = ["insert:"]
    for index in range(size):
        (plugins / f"p{index}.py").write_text(PLUGIN.format(index=index))
        lines.append(f"  - {{ id: p{index}, name: ./plugins/p{index}.py }}")
    config = folder / "cordis.yml"
    config.write_text("\n".join(lines) + "\n")
    return config


def _forget_plugins() -> None:
    for name in [name for name in sys.modules if name.startswith(LOCAL_PREFIX)]:
        del sys.modules[name]


async def startup(size: int, cached: bool = False, frozen: bool = True) -> tuple[float, float]:
    """Seconds of wall clock and of CPU for one start-up of ``size`` entries.

    ``frozen``: as the ``harness`` command starts a host (``harness.cli.entry_point``),
    with what the process imported before left out of the collector's walks
    (``gc.freeze``); else in this process as it is, whose heap holds every earlier
    benchmark's imports (the peers' libraries) for each full collection to walk.
    """
    with tempfile.TemporaryDirectory() as tmp:
        config = make_config(Path(tmp), size)
        if cached:  # a first start writes the bytecode; the measured one reads it
            writes, sys.dont_write_bytecode = sys.dont_write_bytecode, False
            try:
                async with Host(config):
                    pass
            finally:
                sys.dont_write_bytecode = writes
            _forget_plugins()
        gc.collect()
        if frozen:
            gc.freeze()
        try:
            start, cpu = time.perf_counter(), time.process_time()
            async with Host(config) as host:
                elapsed, used = time.perf_counter() - start, time.process_time() - cpu
                assert len(host.tools.list()) == size
        finally:
            gc.unfreeze()
        _forget_plugins()
        return elapsed, used


async def cycles(count: int) -> tuple[int, int]:
    definition = define_tool(name="cycled", description="d", execute=lambda args: 1)

    def plugin(ctx: Context) -> None:
        ctx.tools.register(definition)

    plugin.inject = ["tools"]  # type: ignore[attr-defined]
    async with Context() as root:
        await root.plugin(ToolsService)
        for _ in range(100):  # warm up caches and loggers
            await (await root.plugin(plugin)).dispose()
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(count):
            fiber = await root.plugin(plugin)
            await fiber.dispose()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    return before, after


ROOT = Path(__file__).resolve().parents[1]
HARNESS = Path(sys.executable).parent / "harness"


def tools_json(runs: int = 7) -> tuple[float, float]:
    """Median seconds of wall clock and of CPU of ``harness tools --json`` (bundled config),
    each a whole process run in a copy of the default project, after one warm-up run."""
    from .project import default_project

    walls, cpus = [], []
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as name:
        folder = Path(name)
        default_project(folder)
        for index in range(runs + 1):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(
                [HARNESS, "tools", "--json"], cwd=folder, check=True, stdout=subprocess.DEVNULL
            )
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            if index:  # the first run warms the file cache
                walls.append(wall)
                cpus.append(cpu)
    return statistics.median(walls), statistics.median(cpus)


def _bytecode_cached() -> tuple[int, int]:
    """How many of harness's and the bundled plugins' modules have up-to-date bytecode beside
    them (``make`` compiles it ahead), of how many."""
    sources = [*Path(harness.__file__).parent.rglob("*.py"), *(ROOT / "plugins").glob("*.py")]
    fresh = 0
    for source in sources:
        cached = Path(importlib.util.cache_from_source(str(source)))
        fresh += cached.exists() and cached.stat().st_mtime >= source.stat().st_mtime
    return fresh, len(sources)


async def main() -> None:
    print("Host start-up (read, resolve, import, apply), best of 3 (2 at 3000), as harness run")
    print("  entries   first start: wall ms  per entry  cpu per entry   restart: cpu per entry")
    per_entry = {}
    for size in (10, 100, 1000, 3000):
        runs = 2 if size > 1000 else 3
        first = [await startup(size) for _ in range(runs)]
        again = [await startup(size, cached=True) for _ in range(runs)]
        wall = min(run[0] for run in first)
        cpu = min(run[1] for run in first)
        cached = min(run[1] for run in again)
        per_entry[size] = cpu / size * 1000
        print(
            f"  {size:>7}  {wall * 1000:18.1f}  {wall / size * 1000:9.3f}  "
            f"{per_entry[size]:13.3f}  {cached / size * 1000:22.3f}"
        )
    print(f"  per-entry CPU cost 3000 vs 10 entries: x{per_entry[3000] / per_entry[10]:.2f}")
    thawed = min([(await startup(1000, frozen=False))[1] for _ in range(3)]) / 1000 * 1000
    print(
        "  (as the harness command starts it: the imports before are frozen out of the\n"
        "   collector's walks; without that, in this process after the other benchmarks'\n"
        f"   imports: 1000 entries, first start {thawed:.3f} ms CPU per entry)"
    )
    before, after = await cycles(1000)
    print("load/unload cycles of a plugin with a tool (tracemalloc, after a warm-up)")
    for count in (1000, 3000):
        before, after = await cycles(count)
        print(f"  {count} cycles: traced memory grew {(after - before) / 1024:.1f} KiB")
    wall, cpu = tools_json()
    fresh, total = _bytecode_cached()
    no_writes = "set" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "unset"
    print(
        "harness tools --json, bundled cordis.yml, whole process, median of 7 runs "
        f"(bytecode cached for {fresh} of {total} modules, PYTHONDONTWRITEBYTECODE {no_writes})"
    )
    print(f"  {wall:.3f} s wall, {cpu:.3f} s CPU")
