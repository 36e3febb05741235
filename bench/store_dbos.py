"""DBOS Transact, measured as the store's candidate (docs/store.md): run it with a Python
that has ``dbos`` (``python -m venv /tmp/dbos && /tmp/dbos/bin/pip install dbos==3.4.0 trio``,
then ``/tmp/dbos/bin/python bench/store_dbos.py``; harness does not depend on it).

It prints the import time, the cost of one journaled call as a DBOS workflow with one step
(sync and async, on DBOS's SQLite system database), the same two rows written with
``sqlite3`` as harness's journal writes them (WAL, ``synchronous`` NORMAL and FULL), and what
an async workflow does under ``trio.run``.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

N = 300
FOLDER = Path(tempfile.mkdtemp(prefix="bench-dbos-"))

started = time.perf_counter()
from dbos import DBOS, SetWorkflowID  # noqa: E402

IMPORT = time.perf_counter() - started

DBOS(
    config={
        "name": "harness-bench",
        "system_database_url": f"sqlite:///{FOLDER / 'dbos.sqlite'}",
        "run_admin_server": False,
        "log_level": "WARNING",
    }
)


@DBOS.step()
def step(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"ok": name}


@DBOS.workflow()
def call_sync(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return step(name, args)


@DBOS.step()
async def astep(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"ok": name}


@DBOS.workflow()
async def call_async(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return await astep(name, args)


def sync_calls() -> float:
    start = time.perf_counter()
    for i in range(N):
        with SetWorkflowID(f"s-{i}-{time.time_ns()}"):
            call_sync("charge", {"i": i})
    return (time.perf_counter() - start) / N


async def async_calls() -> float:
    start = time.perf_counter()
    for i in range(N):
        with SetWorkflowID(f"a-{i}-{time.time_ns()}"):
            await call_async("charge", {"i": i})
    return (time.perf_counter() - start) / N


def raw(synchronous: str) -> float:
    db = sqlite3.connect(FOLDER / f"raw-{synchronous}.db", isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute(f"PRAGMA synchronous = {synchronous}")
    db.execute(
        "CREATE TABLE j (key TEXT PRIMARY KEY, tool TEXT, args TEXT, state TEXT, result TEXT)"
    )
    start = time.perf_counter()
    for i in range(N):
        key = f"k{i}"
        db.execute("INSERT INTO j VALUES (?, ?, ?, 'started', NULL)", (key, "charge", "{}"))
        db.execute("UPDATE j SET state = 'done', result = ? WHERE key = ?", (json.dumps(i), key))
    return (time.perf_counter() - start) / N


def main() -> None:
    DBOS.launch()
    print(f"import dbos: {IMPORT * 1000:.0f} ms")
    print(f"DBOS workflow + step, sync:  {sync_calls() * 1e6:8.0f} µs per call")
    print(f"DBOS workflow + step, async: {asyncio.run(async_calls()) * 1e6:8.0f} µs per call")
    for synchronous in ("NORMAL", "FULL"):
        print(
            f"sqlite3 started + done, synchronous={synchronous}: {raw(synchronous) * 1e6:8.0f} µs"
        )
    import trio

    async def under_trio() -> Any:
        with SetWorkflowID(f"t-{time.time_ns()}"):
            return await call_async("x", {})

    try:
        print("async workflow under trio:", trio.run(under_trio))
    except BaseException as exc:  # what trio meets is the point
        print(f"async workflow under trio: {type(exc).__name__}: {exc}")
    DBOS.destroy()
    shutil.rmtree(FOLDER, ignore_errors=True)


if __name__ == "__main__":
    main()
