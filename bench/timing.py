"""Small timing helpers shared by the benchmarks.

Machines here are noisy, so cases are measured side by side: each round times every case
once, in turn, and each case keeps its best round. Rounds are timed in the thread's CPU
time (``time.thread_time_ns``), which time spent descheduled by other processes does not
inflate; cases that wait on other threads would need wall time (none here does).
Results are microseconds per call.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from statistics import median
from typing import Any

AsyncCall = Callable[[], Awaitable[Any]]


async def compare(
    cases: dict[str, AsyncCall], number: int = 20_000, rounds: int = 9
) -> dict[str, float]:
    """Best mean µs per ``await call()`` of each case, measured interleaved."""
    best = dict.fromkeys(cases, float("inf"))
    for call in cases.values():  # warm up
        for _ in range(min(number, 2000)):
            await call()
    for _ in range(rounds):
        for label, call in cases.items():
            start = time.thread_time_ns()
            for _ in range(number):
                await call()
            best[label] = min(best[label], (time.thread_time_ns() - start) / number / 1000)
    return best


def table(title: str, results: dict[str, float], baseline: str | None = None) -> None:
    """Print results, with ratios to ``baseline`` when given."""
    print(title)
    for label, value in results.items():
        ratio = f"  x{value / results[baseline]:.2f}" if baseline else ""
        print(f"  {label:<46} {value:8.3f} µs{ratio}")


async def paired(
    pairs: dict[str, tuple[AsyncCall, AsyncCall]], number: int = 1000, rounds: int = 41
) -> dict[str, tuple[float, float, float]]:
    """For each pair ``(a, b)``: the median µs per call of ``a`` and of ``b``, and the median
    over rounds of ``b - a`` measured in the same round.

    Every round times each pair's two cases back to back (in alternating order, so neither
    always runs second), so a difference is taken between two timings made under the same
    load: their median is steadier than the difference of two best rounds.
    """
    for a, b in pairs.values():  # warm up
        for _ in range(min(number, 2000)):
            await a()
            await b()
    times: dict[str, tuple[list[float], list[float]]] = {label: ([], []) for label in pairs}
    for index in range(rounds):
        for label, (a, b) in pairs.items():
            order = ((0, a), (1, b)) if index % 2 == 0 else ((1, b), (0, a))
            for slot, call in order:
                start = time.thread_time_ns()
                for _ in range(number):
                    await call()
                times[label][slot].append((time.thread_time_ns() - start) / number / 1000)
    return {
        label: (median(a), median(b), median([y - x for x, y in zip(a, b, strict=True)]))
        for label, (a, b) in times.items()
    }
