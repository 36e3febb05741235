"""Startup cost of a config with 10, 100 and 1000 entries, and memory over load/unload cycles.

Each entry is a plugin file registering one tool. Reports the time of ``Host`` start-up
(read, resolve, import, apply) per size and per entry, to show it grows linearly; then
loads and unloads one tool plugin 1000 times and compares traced memory before and after.
"""

from __future__ import annotations

import gc
import tempfile
import time
import tracemalloc
from pathlib import Path

from harness import Context, Host, ToolsService, define_tool

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


async def startup(size: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        config = make_config(Path(tmp), size)
        start = time.perf_counter()
        async with Host(config) as host:
            elapsed = time.perf_counter() - start
            assert len(host.tools.list()) == size
        return elapsed


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


async def main() -> None:
    print("Host start-up (read, resolve, import, apply), best of 3")
    per_entry = {}
    for size in (10, 100, 1000):
        best = min([await startup(size) for _ in range(3)])
        per_entry[size] = best / size * 1000
        print(f"  {size:>5} entries  {best * 1000:9.1f} ms  {per_entry[size]:6.3f} ms per entry")
    print(f"  per-entry cost 1000 vs 10 entries: x{per_entry[1000] / per_entry[10]:.2f}")
    before, after = await cycles(1000)
    print("load/unload cycles of a plugin with a tool (tracemalloc, after a warm-up)")
    for count in (1000, 3000):
        before, after = await cycles(count)
        print(f"  {count} cycles: traced memory grew {(after - before) / 1024:.1f} KiB")
