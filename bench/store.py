"""The store's cost and its guarantee (docs/store.md).

1. Per call, in process: a call with no key, a keyed ``read_only`` call (with and without a
   store loaded: unchanged), and a keyed call the journal records (a new key each time) or
   answers (a repeated key), on SQLite and on PostgreSQL (Debian's, a cluster of its own on
   a free port). Wall time (the PostgreSQL side runs in threads and another process), best
   mean of interleaved rounds, µs per call.
2. The fault test: ``harness run`` (SQLite store) is ``kill -9``-ed at random moments while
   four clients call a charge-like tool over the HTTP API, each call with a key of its own,
   retried (same key) through every restart until it is answered; for about two minutes.
   Every charge writes one line; a line written twice for one key is a duplicate effect.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from harness import Context, ToolCall, ToolsService, define_tool
from harness.store import StoreConfig, StoreService

ROUNDS = 15
NUMBER = 300
FAULT_SECONDS = float(os.environ.get("BENCH_STORE_SECONDS", "120"))
CONTROL = os.environ.get("BENCH_STORE_CONTROL") == "1"
"""Run the fault test without the store (the journal off): what the count catches."""
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the tests' PostgreSQL cluster and harness run helpers
    sys.path.insert(0, str(ROOT))


async def _charge(args: dict[str, Any]) -> str:
    return f"charged {args['amount']}"


AMOUNT = {"amount": {"type": "integer", "required": True}}
CHARGE = define_tool(name="charge", description="Charge", parameters=AMOUNT, execute=_charge)
BALANCE = define_tool(
    name="balance",
    description="Read",
    parameters=AMOUNT,
    execute=_charge,
    annotations={"read_only": True},
)


def _tools(ctx: Context) -> None:
    ctx.tools.register(CHARGE)
    ctx.tools.register(BALANCE)


_tools.inject = ["tools"]  # type: ignore[attr-defined]


async def _context(stack: Any, url: str | None) -> Context:
    ctx = await stack.enter_async_context(Context())
    await ctx.plugin(ToolsService)
    if url is not None:
        await ctx.plugin(StoreService, StoreConfig(url=url))
    await ctx.plugin(_tools, name="bench-tools")
    return ctx


async def _wall(cases: dict[str, Callable[[], Awaitable[Any]]]) -> dict[str, float]:
    best = dict.fromkeys(cases, float("inf"))
    for call in cases.values():
        for _ in range(NUMBER // 3):
            await call()
    for _ in range(ROUNDS):
        for label, call in cases.items():
            start = time.perf_counter()
            for _ in range(NUMBER):
                await call()
            best[label] = min(best[label], (time.perf_counter() - start) / NUMBER * 1e6)
    return best


def _cases(label: str, ctx: Context) -> dict[str, Callable[[], Awaitable[Any]]]:
    execute = ctx.tools.execute
    fresh = itertools.count()
    args = {"amount": 1}

    async def journaled() -> Any:
        result = await execute(ToolCall("c", "charge", args, key=f"{label}-{next(fresh)}"))
        assert result.ok, result

    async def repeated() -> Any:
        result = await execute(ToolCall("c", "charge", args, key=f"{label}-repeat"))
        assert result.ok, result

    return {f"keyed, journaled ({label})": journaled, f"keyed, repeat answered ({label})": repeated}


async def per_call() -> None:
    from contextlib import AsyncExitStack

    from tests.store.postgres import running_postgres

    folder = Path(tempfile.mkdtemp(prefix="bench-store-"))
    with running_postgres() as postgres:
        async with AsyncExitStack() as stack:
            plain = await _context(stack, None)
            sqlite = await _context(stack, f"sqlite:///{folder / 'harness.db'}")
            pg = await _context(stack, postgres.create_database("bench"))
            args = {"amount": 1}

            def call(ctx: Context, name: str, key: str | None) -> Callable[[], Awaitable[Any]]:
                execute = ctx.tools.execute

                async def run() -> Any:
                    return await execute(ToolCall("c", name, args, key=key))

                return run

            cases = {
                "no key (store loaded)": call(sqlite, "charge", None),
                "keyed read_only, no store": call(plain, "balance", "k"),
                "keyed read_only, store loaded": call(sqlite, "balance", "k"),
                **_cases("SQLite", sqlite),
                **_cases("PostgreSQL", pg),
            }
            results = await _wall(cases)
    shutil.rmtree(folder, ignore_errors=True)
    base = results["no key (store loaded)"]
    print(f"per call, wall time, best of {ROUNDS} interleaved rounds of {NUMBER}")
    for label, value in results.items():
        print(f"  {label:<42} {value:9.1f} µs  x{value / base:.2f}")


PLUGIN = """
from pathlib import Path
import anyio
from harness import define_tool

inject = ["tools"]
EFFECTS = Path(__file__).parent / "effects.txt"


async def charge(args):
    await anyio.sleep(0.004)
    with EFFECTS.open("a") as effects:
        effects.write(f"{args['key']}\\n")
    await anyio.sleep(0.004)
    return "charged"


def apply(ctx):
    ctx.tools.register(define_tool(
        name="charge", description="Charge once per key",
        parameters={"key": {"type": "string", "required": True}}, execute=charge))
"""

CONFIG = """insert:
  - id: tools
    name: harness:tools
  - id: store
    name: harness:store
  - id: charge
    name: ./charge.py
"""


async def fault_test() -> None:
    import httpx2

    from tests.processes import start_harness_run, stop

    folder = Path(tempfile.mkdtemp(prefix="bench-faults-"))
    (folder / "charge.py").write_text(PLUGIN)
    config = CONFIG
    if CONTROL:
        config = config.replace("  - id: store\n    name: harness:store\n", "")
    (folder / "cordis.yml").write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    state: dict[str, Any] = {"port": None, "up": anyio.Event()}
    answers: dict[str, str] = {}
    kills = 0
    keys = itertools.count()
    deadline = time.monotonic() + FAULT_SECONDS

    async def start() -> None:
        process, port = await anyio.to_thread.run_sync(
            lambda: start_harness_run(folder, env, web=True)
        )
        state["process"], state["port"] = process, port
        state["up"].set()

    async def client(http: Any) -> None:
        while time.monotonic() < deadline:
            key = f"k{next(keys)}"
            while True:  # the same key until the call is answered
                await state["up"].wait()
                port = state["port"]
                try:
                    response = await http.post(
                        f"http://127.0.0.1:{port}/api/tools/charge/call",
                        json={"args": {"key": key}},
                        headers={"Idempotency-Key": key},
                    )
                    body = response.json()
                except (httpx2.TransportError, ValueError):
                    await anyio.sleep(0.05)  # the server died: retry once it is back
                    continue
                answers[key] = "ok" if body["ok"] else body["code"]
                break

    async def killer() -> None:
        nonlocal kills
        while time.monotonic() < deadline:
            await anyio.sleep(random.uniform(0.3, 2.0))
            if time.monotonic() >= deadline:
                break
            state["up"] = anyio.Event()
            process = state["process"]
            process.kill()  # kill -9
            await anyio.to_thread.run_sync(process.wait)
            stop(process)
            kills += 1
            await start()

    random.seed(33)
    await start()
    started = time.monotonic()
    async with httpx2.AsyncClient(timeout=30) as http, anyio.create_task_group() as group:
        group.start_soon(killer)
        for _ in range(4):
            group.start_soon(client, http)
    elapsed = time.monotonic() - started
    stop(state["process"])
    lines = (folder / "effects.txt").read_text().splitlines()
    counts: dict[str, int] = {}
    for line in lines:
        counts[line] = counts.get(line, 0) + 1
    duplicates = sum(1 for count in counts.values() if count > 1)
    outcomes: dict[str, int] = {}
    for outcome in answers.values():
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    interrupted_without_effect = sum(
        1 for key, outcome in answers.items() if outcome == "interrupted" and key not in counts
    )
    print(f"fault test: {len(answers)} calls in {elapsed:.0f} s, {kills} kill -9 of harness run")
    print(f"  answers: {dict(sorted(outcomes.items()))}")
    print(
        f"  effects: {len(lines)} lines for {len(counts)} keys; duplicate effects: {duplicates}; "
        f"interrupted with no effect: {interrupted_without_effect}"
    )
    shutil.rmtree(folder, ignore_errors=True)


async def main() -> None:
    if not CONTROL:
        await per_call()
    await fault_test()


if __name__ == "__main__":
    anyio.run(main)
