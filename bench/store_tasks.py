"""MCP tasks in the store: what the process running tasks pays to watch their rows (the look
at answers and cancels given on another replica, every 0.1 s while tasks run), a status
message write, and a ``tasks/get`` read, on SQLite and on a local PostgreSQL (its own
cluster, as the tests start it). ``python -m bench store_tasks``."""

from __future__ import annotations

import secrets
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from harness.store.database import Database
from harness.store.sqlite import SqliteDatabase
from harness.store.tasks import StoredTasks

ROUNDS = 500


async def _per(operation: Callable[[], Awaitable[Any]], rounds: int = ROUNDS) -> float:
    """Microseconds per run of ``operation``: the best mean of three batches."""
    for _ in range(20):
        await operation()
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(rounds):
            await operation()
        best = min(best, (time.perf_counter() - started) / rounds)
    return best * 1e6


async def _measure(database: Database, label: str) -> None:
    tasks = StoredTasks(database)
    ids = [secrets.token_urlsafe(16) for _ in range(100)]
    for id in ids:
        await tasks.create(id, "job", None, time.time(), 3_600_000)
    for count in (1, 10, 100):
        chosen = ids[:count]
        cost = await _per(lambda chosen=chosen: tasks.watch(chosen))
        print(f"{label:10} look at {count:3} running tasks' rows  {cost:9.1f} µs")
    cost = await _per(lambda: tasks.save(ids[0], None, "1/2: step"), 200)
    print(f"{label:10} a status message write          {cost:9.1f} µs")
    cost = await _per(lambda: tasks.get(ids[1]), 200)
    print(f"{label:10} tasks/get (one row)             {cost:9.1f} µs")


async def main() -> None:
    from harness.store.postgres import PostgresDatabase
    from tests.store.postgres import running_postgres

    with tempfile.TemporaryDirectory(prefix="bench-tasks-") as folder:
        database: Database = await SqliteDatabase.open(Path(folder) / "harness.db", 5)
        try:
            await _measure(database, "SQLite")
        finally:
            await database.close()
    with running_postgres() as postgres:
        database = await PostgresDatabase.open(postgres.create_database("bench_tasks"), 5)
        try:
            await _measure(database, "PostgreSQL")
        finally:
            await database.close()
