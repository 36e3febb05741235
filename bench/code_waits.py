"""Programs waiting for a person, and everyone else's programs (code mode, 2 workers).

N programs each reach a call the policy asks about and wait for a person (an approver that
answers when told). Meanwhile: how long another program (one ``add`` call, no approval)
takes, against the same program with nobody waiting (median of the rounds); and how many
workers are free, as the number of programs that can hold a call open at once (each
awaits a ``hold`` tool; with every worker free, both run). Then the time from the person's
answer to the end of a waiting program, which takes a worker again and restores the
program where it stopped. Each count of waiting programs runs twice: kept in the host's
memory, and (harness:store loaded, the programs keyed) kept in the store too.
"""

from __future__ import annotations

import secrets
import sqlite3
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
STORE = "sqlite:///.harness/harness.db"


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


async def case(folder: Path, waiting: int, store: bool = False) -> dict[str, Any]:
    """``waiting`` programs wait; with ``store``, harness:store is loaded (SQLite) and each
    waiting program is keyed, so it is kept in the store while it waits."""
    path = folder / "cordis.yml"
    code = {"workers": WORKERS, "timeout": 60, "max_calls": 100}
    stored = [{"id": "store", "name": "harness:store", "config": {"url": STORE}}]
    path.write_text(
        yaml.safe_dump(
            {
                "insert": [
                    {"id": "tools", "name": "harness:tools"},
                    *(stored if store else []),
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
            key = f"wait-{number}-{secrets.token_hex(8)}" if store else None
            call = ToolCall(f"wait-{number}", "run_code", {"code": WAITING}, key=key)
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
        kept = None
        if store:  # the waiting programs' rows, read from the file as another process would
            with anyio.move_on_after(PATIENCE):  # each is kept once its worker is free
                while kept is None or kept[0] < waiting:
                    with sqlite3.connect(folder / ".harness" / "harness.db") as db:
                        query = "SELECT count(*), sum(length(snapshot)) FROM programs"
                        kept = db.execute(query).fetchone()
                    await anyio.sleep(0.01)
        took = await other(host)
        free = await free_workers(host, hold)
        answered = time.perf_counter()
        person.answer.set()
    return {
        "asked": asked,
        "other": took,
        "free": free,
        "resume": (max(ends) - answered) if ends else None,
        "kept": kept,
    }


async def main() -> None:
    print(f"{WORKERS} workers; another program: one add call, median of {ROUNDS}")
    with tempfile.TemporaryDirectory() as temp:
        base = await case(Path(temp), 0)
        assert base["other"] is not None
        print(f"  nobody waiting:        another program {base['other'] * 1000:6.1f} ms")
        for waiting, store in [(n, s) for s in (False, True) for n in (2, 4, 16)]:
            if waiting == WORKERS:
                where = "the store (SQLite), keyed" if store else "the host's memory"
                print(f" waiting programs kept in {where}:")
            row = await case(Path(temp), waiting, store)
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
                + (
                    f"; {row['kept'][0]} kept in the store ({row['kept'][1] or 0} bytes of "
                    "snapshots)"
                    if row["kept"]
                    else ""
                )
            )
