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
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
import pydantic_monty as monty

from .config import CodeConfig

_log = logging.getLogger("harness.code")
T = TypeVar("T")


class PoolClosed(RuntimeError):
    """Raised when a worker is asked of a pool whose entry is unloading."""


class TooLarge(Exception):
    """Raised when a program's snapshot dump is longer than the limit (its size)."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


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
        self._closed = False
        self._starting = anyio.Lock()
        """Held while the pool starts or stops: a close waits for a start under way."""

    async def start(self) -> None:
        """Spawn the first worker (``harness:code`` starts the pool with its entry).

        Shielded: a start cancelled half-way (its entry unloading) still finishes and is
        recorded, so that :meth:`close` stops what it spawned.
        """
        with anyio.CancelScope(shield=True):
            async with self._starting:
                if self._closed:
                    raise PoolClosed("the code entry is unloading")
                await anyio.to_thread.run_sync(self._monty.__enter__)
                self._started = True

    async def close(self) -> None:
        """Stop every worker (the entry is unloading, or the host is stopping).

        A worker still checked out is killed first: Monty's pool returns from its exit at
        once and leaves such a worker running its program until a limit ends it.
        """
        self._closed = True
        for session in list(self._live):
            session.kill()
        with anyio.CancelScope(shield=True):
            async with self._starting:
                if self._started:
                    self._started = False
                    await anyio.to_thread.run_sync(self._monty.__exit__, None, None, None)

    def session(self, stubs: str, parked: bytes | None = None) -> Session:
        """A session for one program, type-checked against ``stubs``; with ``parked`` (a
        program's snapshot dump), one that starts parked: it takes a worker when it unparks."""
        return Session(self, stubs, parked)

    @property
    def held(self) -> int:
        """Workers checked out by a program now (a parked program holds none)."""
        return len(self._live)

    def _checkout(self, stubs: str) -> monty.MontySession:
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
        return self._monty.checkout(
            script_name="program.py",
            limits=limits,
            type_check=True,
            type_check_stubs=stubs,
            os_policy={"sleep": "system", "sleep_system_max": config.timeout},
        )


class Session:
    """One program's hold on a worker: ``async with pool.session(stubs) as s``.

    While the program waits for a person (an approval of one of its calls), it need not
    hold the worker: :meth:`park` keeps its suspended state in the host (Monty's snapshot
    dump, a few KiB) and gives the worker back; :meth:`unpark` takes a worker again, maybe
    another one, and restores the program where it stopped.
    """

    def __init__(self, pool: Pool, stubs: str, parked: bytes | None = None) -> None:
        self._pool = pool
        self._stubs = stubs
        self.monty: monty.MontySession = pool._checkout(stubs)
        self._pid: int | None = None
        self._held = False
        self._parked: bytes | None = parked
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._soon: Callable[[Callable[[], object]], object] | None = None
        self.killed = False

    @property
    def parked(self) -> bool:
        """Whether the program's state is in the host, with no worker held."""
        return self._parked is not None

    async def __aenter__(self) -> Session:
        native: Any = anyio.lowlevel.current_token().native_token
        # asyncio's loop, or trio's token: both call back into the loop from any thread.
        self._soon = getattr(native, "call_soon_threadsafe", None) or native.run_sync_soon
        threading.Thread(target=self._serve, name="harness-code-step", daemon=True).start()
        if self._parked is not None:  # a program restored from its dump: no worker yet
            return self
        try:
            await self._hold()
        except BaseException:
            self._jobs.put(None)
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self._release()
        finally:
            self._jobs.put(None)

    async def _hold(self) -> None:
        """Take a free worker (waiting for one) and check the session's checkout out on it."""
        await self._pool._slots.acquire()
        try:
            await self.step(self.monty.__enter__)
        except BaseException:
            self._pool._slots.release()
            # cancelled while the thread checks out: give that worker back once it has
            self._jobs.put(partial(_quietly, self.monty.__exit__, None, None, None))
            raise
        self._held = True
        self.killed = False
        self._pid = self.monty.worker_pid
        self._pool._live.add(self)
        if self._pool._closed:  # closed while this checked out: its worker must not outlive it
            self.kill()
            await self._release()
            raise PoolClosed("the code entry is unloading")

    async def _release(self) -> None:
        """Give the worker back to the pool."""
        if not self._held:
            return
        self._held = False
        self._pool._live.discard(self)
        try:
            # Bounded even if a killed worker's step is still unwinding in its thread.
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                await self.step(self.monty.__exit__, None, None, None)
        finally:
            self._pid = None
            self._pool._slots.release()

    @property
    def state(self) -> bytes | None:
        """The parked program's snapshot dump (None while it holds a worker)."""
        return self._parked

    async def park(self, snapshot: Any, limit: int) -> None:
        """Keep the suspended program (``snapshot``) in the host and give the worker back.

        Not cancellable midway: it ends parked, or (when the sandbox cannot dump the
        program) still holding its worker. Raises :class:`TooLarge`, still holding the
        worker, when the dump is longer than ``limit`` bytes.
        """
        with anyio.CancelScope(shield=True):
            try:
                state: bytes = await self.step(snapshot.dump)
            except Exception as exc:
                _log.warning("a waiting program keeps its worker (no dump: %s)", exc)
                return
            if len(state) > limit:
                raise TooLarge(len(state))
            await self._release()
            self._parked = state

    async def unpark(self, print_callback: monty.PrintCallback) -> Any:
        """Take a worker again and restore the parked program: the snapshot it stopped at."""
        state = self._parked
        assert state is not None
        self.monty = self._pool._checkout(self._stubs)
        await self._hold()
        snapshot = await self.step(
            lambda: self.monty.load_snapshot(state, print_callback=print_callback)
        )
        self._parked = None
        return snapshot

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


def _quietly(function: Callable[..., object], *args: Any) -> None:
    """Run ``function`` in the session's thread, where nobody waits for its failure."""
    try:
        function(*args)
    except Exception as exc:
        _log.debug("sandbox session clean-up failed: %s", exc)
