"""The Monty worker pool of one ``harness:code`` entry, driven from any anyio backend.

Monty runs each program in a worker subprocess (a crash there costs that program, never the
host, and the pool replaces the worker). Its async pool is bound to asyncio, so harness uses
the synchronous pool and runs each step (start, resume) in a thread of the session's own,
which hands the answer back to the event loop with the loop's thread-safe callback: that
works on asyncio and trio alike, and costs a third of a generic worker-thread hop (a step is
paid once or twice per tool call). A step may be busy in sandboxed code for as long as the
program computes; when the caller is cancelled (or the wall clock runs out) the worker
process is killed, which ends that step at once, and the pool starts a fresh worker.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
import pydantic_monty as monty

from .config import CodeConfig

_log = logging.getLogger("harness.code")
T = TypeVar("T")


class Pool:
    """A Monty pool: ``workers`` processes, one program each at a time."""

    def __init__(self, config: CodeConfig) -> None:
        self.config = config
        self._monty = monty.Monty(
            min_processes=1,
            max_processes=config.workers,
            # Backstop for a worker stuck in one step: Monty's own limits fire first.
            request_timeout=config.timeout + 10,
        )
        self._slots = anyio.Semaphore(config.workers)
        self._live: set[Session] = set()
        """Sessions holding a worker now."""
        self.steps = 0
        """Steps run so far, by every session: each is one hop to a thread and back."""
        self._started = False

    async def start(self) -> None:
        """Spawn the first worker (``harness:code`` starts the pool with its entry)."""
        await anyio.to_thread.run_sync(self._monty.__enter__)
        self._started = True

    async def close(self) -> None:
        """Stop every worker (the entry is unloading, or the host is stopping).

        A worker still checked out is killed first: Monty's pool returns from its exit at
        once and leaves such a worker running its program until a limit ends it.
        """
        for session in list(self._live):
            session.kill()
        if self._started:
            self._started = False
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._monty.__exit__, None, None, None)

    def session(self, stubs: str) -> Session:
        """A session for one program, type-checked against ``stubs``."""
        config = self.config
        limits: monty.ResourceLimits = {
            # The program's clock (paused for approvals) ends it first: a backstop.
            "max_feed_duration_secs": config.timeout + 1,
            "max_memory": config.max_memory,
            "max_recursion_depth": config.max_recursion,
            # Every call is a suspension, and so is each wait on its future: the host counts
            # max_calls itself; this only has to stay out of its way.
            "max_suspensions": 3 * config.max_calls + 1000,
        }
        checkout = self._monty.checkout(
            script_name="program.py",
            limits=limits,
            type_check=True,
            type_check_stubs=stubs,
            os_policy={"sleep": "system", "sleep_system_max": config.timeout},
        )
        return Session(self, checkout)


class Session:
    """One worker checked out for one program: ``async with pool.session(stubs) as s``."""

    def __init__(self, pool: Pool, checkout: monty.MontySession) -> None:
        self._pool = pool
        self.monty = checkout
        self._pid: int | None = None
        self._entered = False
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._soon: Callable[[Callable[[], object]], object] | None = None
        self.killed = False

    async def __aenter__(self) -> Session:
        await self._pool._slots.acquire()
        try:
            native: Any = anyio.lowlevel.current_token().native_token
            # asyncio's loop, or trio's token: both call back into the loop from any thread.
            self._soon = getattr(native, "call_soon_threadsafe", None) or native.run_sync_soon
            threading.Thread(target=self._serve, name="harness-code-step", daemon=True).start()
            await self.step(self.monty.__enter__)
            self._entered = True
            self._pid = self.monty.worker_pid
            self._pool._live.add(self)
        except BaseException:
            self._jobs.put(None)
            self._pool._slots.release()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self._entered:
                # Bounded even if a killed worker's step is still unwinding in its thread.
                with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                    await self.step(self.monty.__exit__, None, None, None)
        finally:
            self._pool._live.discard(self)
            self._jobs.put(None)
            self._pool._slots.release()

    def _serve(self) -> None:
        """The session's thread: run the steps it is handed, one at a time, until None."""
        while (job := self._jobs.get()) is not None:
            job()

    async def step(self, function: Callable[..., T], *args: Any) -> T:
        """Run one blocking Monty call in the session's thread; a cancelled caller kills the
        worker."""
        self._pool.steps += 1
        done = anyio.Event()
        outcome: list[Any] = []
        soon = self._soon
        assert soon is not None

        def job() -> None:
            try:
                outcome.append(function(*args))
            except BaseException as exc:
                outcome.append(exc)
                outcome.append(None)  # two items: it raised
            with contextlib.suppress(RuntimeError):  # the event loop has closed meanwhile
                soon(done.set)

        self._jobs.put(job)
        try:
            await done.wait()
        except anyio.get_cancelled_exc_class():
            self.kill()
            raise
        if len(outcome) == 2:
            raise outcome[0]
        return outcome[0]  # type: ignore[no-any-return]

    def kill(self) -> None:
        """End the worker process now: a running step fails, the pool replaces the worker."""
        if self._pid is None or self.killed:
            return
        self.killed = True
        try:
            os.kill(self._pid, signal.SIGKILL)
        except OSError as exc:  # gone already
            _log.debug("could not kill sandbox worker %s: %s", self._pid, exc)
