"""What ``harness:ray-executor`` costs: a call shipped to Ray beside a local one and Ray's own.

One run, one local Ray cluster (1 CPU, loopback, no dashboard), started the way harness
starts it (``connect``: ``ray.init`` in harness's own parked thread). Reported:

- the cluster's start (``ray.init``, wall time) and its resident memory: every process it
  added under this one (GCS, raylet, monitors, agents, workers), RSS and proportional set
  size (``/proc``), plus what ``ray.init`` grew this process (the driver) by;
- the first shipped call of a host (a new executor actor loads harness and the config);
- per call, interleaved rounds, wall clock (the shipped cases wait on other processes),
  median of the rounds in µs:

  - harness, local: ``ctx.tools.execute`` of ``add`` in a host whose executor entry is off;
  - harness, a local tool beside the executor: the same, in the shipping host, for a tool it
    does not ship (the wrapper's look-up and pattern match);
  - harness, shipped: ``ctx.tools.execute`` of ``add`` shipped to its Ray executor (the
    host's pipeline, Ray's round trip, the executor's ``ToolsService.run``);
  - Ray's own round trip (the peer floor): ``await actor.add.remote(1, 2)`` on a bare async
    actor, the same Ray call the executor makes, without harness on either side.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from harness import Host
from harness.executor.config import ExecutorConfig
from harness.executor.connection import connect, wait

Call = Callable[[], Awaitable[Any]]

PLUGIN = """
from harness import tool

inject = ["tools"]


def apply(ctx, config):
    @tool
    async def add(a: float, b: float) -> float:
        "Add two numbers."
        return a + b

    @tool
    async def add_here(a: float, b: float) -> float:
        "Add two numbers (never shipped)."
        return a + b

    ctx.tools.register(add)
    ctx.tools.register(add_here)
"""

CONFIG = """\
insert:
  - { id: adder, name: ./adder.py }
  - id: executor
    name: harness:ray-executor
    config: { tools: [add] }
"""


async def compare_wall(
    cases: dict[str, tuple[Call, int]], rounds: int = 7
) -> dict[str, tuple[float, float]]:
    """Per case (call, calls per round): (median, best) µs per call, interleaved, wall clock."""
    seen: dict[str, list[float]] = {label: [] for label in cases}
    for call, number in cases.values():  # warm up
        for _ in range(max(number // 10, 10)):
            await call()
    for _ in range(rounds):
        for label, (call, number) in cases.items():
            start = time.perf_counter_ns()
            for _ in range(number):
                await call()
            seen[label].append((time.perf_counter_ns() - start) / number / 1000)
    return {label: (statistics.median(times), min(times)) for label, times in seen.items()}


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue  # gone meanwhile
        parent = int(stat.rpartition(")")[2].split()[1])
        tree.setdefault(parent, []).append(int(entry))
    return tree


def _memory(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in KiB; (0, 0) if it is gone."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
    except OSError:
        return 0, 0
    fields = {line.split(":")[0]: line.split()[1] for line in rollup if line.endswith("kB")}
    return int(fields.get("Rss", 0)), int(fields.get("Pss", 0))


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Ray's processes are this driver's children and theirs)."""
    tree, out, todo = _children(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _project(folder: Path) -> Path:
    (folder / "adder.py").write_text(PLUGIN)
    (folder / "cordis.yml").write_text(CONFIG)
    return folder / "cordis.yml"


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


async def main() -> None:
    import ray

    print(f"  load average before: {_load()}", flush=True)
    before = set(descendants(os.getpid()))
    own_before = _memory(os.getpid())[0]
    start = time.perf_counter()
    await wait(connect(ExecutorConfig()))  # address: local, as harness starts it
    started = time.perf_counter() - start
    driver_growth = _memory(os.getpid())[0] - own_before
    with TemporaryDirectory() as folder:
        config = _project(Path(folder))
        async with (
            Host(config) as shipping,
            Host(config, overrides=["executor.enabled=false"]) as local,
        ):
            args = {"a": 1, "b": 2}
            start = time.perf_counter()
            first = await shipping.tools.execute({"id": "1", "name": "add", "args": args})
            first_call = time.perf_counter() - start
            assert first.result == 3, first.error

            class Adder:  # defined here: Ray ships it by value, not by module name
                async def add(self, a: float, b: float) -> float:
                    return a + b

            adder: Any = ray.remote(Adder).remote()
            assert await adder.add.remote(1, 2) == 3
            assert (await local.tools.execute({"id": "1", "name": "add", "args": args})).ok
            unshipped = {"id": "1", "name": "add_here", "args": args}
            assert (await shipping.tools.execute(unshipped)).result == 3

            async def shipped() -> Any:
                return await shipping.tools.execute({"id": "1", "name": "add", "args": args})

            async def here() -> Any:
                return await local.tools.execute({"id": "1", "name": "add", "args": args})

            async def next_to() -> Any:
                return await shipping.tools.execute(unshipped)

            async def bare() -> Any:
                return await adder.add.remote(1, 2)

            results = await compare_wall(
                {
                    LOCAL: (here, 2000),
                    BESIDE: (next_to, 2000),
                    SHIPPED: (shipped, 200),
                    RAY: (bare, 200),
                }
            )
            ray_processes = [p for p in descendants(os.getpid()) if p not in before]
            sizes = [_memory(pid) for pid in ray_processes]
    ray.shutdown()
    rss, pss = sum(size[0] for size in sizes), sum(size[1] for size in sizes)
    print(f"  ray.init (local cluster, 1 CPU, as harness starts it): {started:6.2f} s")
    print(f"  first shipped call of a host (the executor actor starts): {first_call:6.2f} s")
    print(
        f"  cluster memory: {len(ray_processes)} processes, {rss / 1024:.0f} MB resident, "
        f"{pss / 1024:.0f} MB proportional; ray.init grew this process by "
        f"{driver_growth / 1024:.0f} MB"
    )
    print("add(a, b) per call (wall clock, 7 interleaved rounds: median, best)")
    floor, local_median = results[RAY][0], results[LOCAL][0]
    for label, (median, best) in results.items():
        print(f"  {label:<52} {median:9.1f} µs {best:9.1f} µs  x{median / local_median:7.2f} local")
    shipped = results[SHIPPED][0]
    print(f"  shipped / Ray's own round trip:                 x{shipped / floor:.2f}")
    print(f"  harness's cost over Ray's round trip:           {shipped - floor:.0f} µs")
    beside = results[BESIDE][0] / local_median
    print(f"  a tool not shipped, entry on / entry off:       x{beside:.2f}")
    print(f"  load average after: {_load()}")


LOCAL = "harness, local (executor entry off)"
BESIDE = "harness, a tool not shipped, executor entry on"
SHIPPED = "harness, shipped to its Ray executor"
RAY = "Ray's own actor round trip (await actor.add.remote)"
