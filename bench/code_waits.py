"""Programs waiting for a person, and everyone else's programs (code mode, 2 workers).

N programs each reach a call the policy asks about and wait for a person (an approver that
answers when told). Meanwhile: how long another program (one ``add`` call, no approval)
takes, against the same program with nobody waiting (median of the rounds); and how many
workers are free, as the number of programs that can hold a call open at once (each
awaits a ``hold`` tool; with every worker free, both run). Then the time from the person's
answer to the end of a waiting program, which takes a worker again and restores the
program where it stopped.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import yaml

from harness import Host, ToolCall, define_tool
from harness.tools.approval_contract import Approved

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
WORKERS = 2
ROUNDS = 40
PATIENCE = 10.0
"""Seconds a measurement waits before it reports that nothing happened."""
WAITING = "squares = [i * i for i in range(100)]\nawait greet(name='Ada')\nsum(squares)"
OTHER = "await add(a=1, b=2)"


class Person:
    """An approver that answers every question at once when told."""

    def __init__(self) -> None:
        self.asked = 0
        self.changed = anyio.Event()
        self.answer = anyio.Event()

    async def request(self, call: ToolCall, reason: str) -> Approved:
        self.asked += 1
        self.changed.set()
        self.changed = anyio.Event()
        await self.answer.wait()
        return Approved()


async def other(host: Host) -> float | None:
    """Seconds for the program with no approval (median of ROUNDS); None: it never ended."""
    took = []
    for number in range(ROUNDS):
        began = time.perf_counter()
        with anyio.move_on_after(PATIENCE):
            call = ToolCall(f"other-{number}", "run_code", {"code": OTHER})
            result = await host.ctx.tools.execute(call)
            if result.ok:  # else cancelled: it waited for a worker all along
                took.append(time.perf_counter() - began)
        if len(took) <= number:
            return None
    return statistics.median(took)


class Hold:
    """A tool ``hold`` that stays open until released; counts the calls holding now."""

    def __init__(self, host: Host) -> None:
        self.running = 0
        self.changed = anyio.Event()
        self.release = anyio.Event()
        self.dispose = host.ctx.tools.register(
            define_tool(name="hold", description="Wait until released", execute=self.execute)
        )

    async def execute(self, args: dict[str, Any]) -> str:
        self.running += 1
        self.changed.set()
        self.changed = anyio.Event()
        await self.release.wait()
        return "released"


async def free_workers(host: Host, hold: Hold) -> int:
    """How many programs hold a call open at once (up to WORKERS) within PATIENCE."""
    async with anyio.create_task_group() as group:
        for number in range(WORKERS):
            call = ToolCall(f"hold-{number}", "run_code", {"code": "await hold()"})
            group.start_soon(host.ctx.tools.execute, call)
        with anyio.move_on_after(PATIENCE):
            while hold.running < WORKERS:
                await hold.changed.wait()
        seen = hold.running
        hold.release.set()
        group.cancel_scope.cancel()
    return seen


async def case(folder: Path, waiting: int) -> dict[str, Any]:
    path = folder / "cordis.yml"
    code = {"workers": WORKERS, "timeout": 60, "max_calls": 100}
    path.write_text(
        yaml.safe_dump(
            {
                "insert": [
                    {"id": "tools", "name": "harness:tools"},
                    {
                        "id": "policy",
                        "name": str(PLUGINS / "policy.py"),
                        "config": {"rules": {"greet": "ask"}},
                    },
                    {"id": "add", "name": str(PLUGINS / "add.py")},
                    {"id": "greet", "name": str(PLUGINS / "greet.py")},
                    {"id": "code", "name": "harness:code", "config": code},
                ]
            }
        )
    )
    person = Person()
    async with Host(path) as host, anyio.create_task_group() as group:
        ends: list[float] = []

        async def wait_for_person(number: int) -> None:
            call = ToolCall(f"wait-{number}", "run_code", {"code": WAITING})
            result = await host.ctx.tools.execute(call, approval=person)
            assert result.ok, result.error
            ends.append(time.perf_counter())

        hold = Hold(host)
        await other(host)  # warm: the type check's and the pool's first costs
        for number in range(waiting):
            group.start_soon(wait_for_person, number)
        with anyio.move_on_after(PATIENCE):
            while person.asked < waiting:
                await person.changed.wait()
        asked = person.asked
        took = await other(host)
        free = await free_workers(host, hold)
        answered = time.perf_counter()
        person.answer.set()
    return {
        "asked": asked,
        "other": took,
        "free": free,
        "resume": (max(ends) - answered) if ends else None,
    }


async def main() -> None:
    print(f"{WORKERS} workers; another program: one add call, median of {ROUNDS}")
    with tempfile.TemporaryDirectory() as temp:
        base = await case(Path(temp), 0)
        assert base["other"] is not None
        print(f"  nobody waiting:        another program {base['other'] * 1000:6.1f} ms")
        for waiting in (WORKERS, 2 * WORKERS, 8 * WORKERS):
            row = await case(Path(temp), waiting)
            took = row["other"]
            shown = (
                f"{took * 1000:6.1f} ms (x{took / base['other']:.2f})"
                if took is not None
                else f"did not end in {PATIENCE:g} s"
            )
            resume = row["resume"]
            print(
                f"  {waiting:2} waiting ({row['asked']:2} asked): another program {shown}; "
                f"workers free {row['free']} of {WORKERS}; all {waiting} done "
                + (f"{resume * 1000:.0f} ms after the answer" if resume is not None else "-")
            )
