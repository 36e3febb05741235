"""Run a tool body under a timeout that costs nothing unless the body suspends.

Most tool calls finish without ever waiting: ``add(a, b)`` returns on its first step. A
cancel scope entered around such a call costs more than the call itself, and it can never
fire, because a deadline is only noticed at a checkpoint. So, on asyncio, the body's first
step runs eagerly (``coro.send(None)``, exactly what ``await`` does); a body that returns
there is done, with no deadline armed at all. A body that suspends hands us what it waits
on; only then is a timer armed (``loop.call_at``) for the time left, and the rest of the
body runs through a small driver that passes every step between the loop and the body.

A cancel scope cannot be entered at that point: the body's first step may have opened
scopes of its own, and scopes nest strictly. The timer therefore cancels the task the way
``asyncio.timeout`` does: one ``task.cancel()`` when the deadline passes, undone with
``uncancel()`` when the timeout is handled, so a caller's own cancellation is never taken
for a timeout. Like ``asyncio.timeout`` (and unlike an anyio scope) it is delivered once: a
body that catches the cancellation and goes on is not cancelled again, and its value is
returned when it finishes. On trio, whose deadlines are cancel scopes only, anyio's scope
is entered before the first step.

Guarantees, on both backends: on timeout the body is cancelled at its checkpoint and has
stopped (its ``finally`` blocks run) before the result comes back; a cancelled caller
cancels the body the same way, and that cancellation reaches the caller, never mistaken
for a timeout.
"""

from __future__ import annotations

import asyncio
import time
import types
from collections.abc import Awaitable, Coroutine, Generator
from typing import Any

import anyio

from .pace import INF, Pace, Paced

_monotonic = time.monotonic


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop, or None when there is none (trio)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Later:
    """What :func:`start` returns for a body that suspended: await ``rest`` for the rest of it."""

    __slots__ = ("rest",)

    def __init__(self, rest: Awaitable[tuple[Any, bool]]) -> None:
        self.rest = rest
        """Finishes the body; gives ``(value, timed_out)``."""


def start(
    coro: Coroutine[Any, Any, Any],
    seconds: float | None,
    loop: asyncio.AbstractEventLoop | None,
    paced: Paced | None = None,
) -> Any:
    """Run ``coro``'s first step now: the value it returned, or a :class:`Later` if it suspended.

    ``loop`` is the running asyncio loop (None on trio). The rest finishes the coroutine
    within ``seconds`` of now (None: no limit). This is the hot path of every call (and the
    one place the first-step trick is written): no coroutine is created around the body,
    nothing is allocated for it, and a body that returns on its first step costs one
    ``send``. What the first step raises propagates.

    With ``paced`` (the context of a body that takes one and has a limit, :mod:`.pace`), the
    deadline is its pace's: ``total`` and ``idle``, moved by progress and paused while the
    body waits for answers. The pace is made when first needed: by the body's first step
    (asking, reporting, ``time_left()``), or here when that step suspends; a body that
    returns on its first step never makes one.
    """
    if paced is not None:
        if loop is None:
            return Later(_paced_scope(coro, paced))
        try:
            waiting = coro.send(None)
        except StopIteration as done:
            return done.value
        pace = paced.paced()
        if pace is None:  # no limit after all
            return Later(_untimed(coro, waiting))
        return Later(finish_by(coro, waiting, loop, 0.0, pace))
    if loop is None and seconds is not None:  # trio (no asyncio loop), whose deadlines are
        return Later(_scoped(coro, seconds))  # scopes: entered before the first step
    began = _monotonic()  # the deadline counts from before the first step
    try:
        waiting = coro.send(None)
    except StopIteration as done:
        return done.value
    return suspended(coro, waiting, loop, seconds, began)


def suspended(
    coro: Coroutine[Any, Any, Any],
    waiting: Any,
    loop: asyncio.AbstractEventLoop | None,
    seconds: float | None,
    began: float,
) -> Later:
    """The rest of a body whose first step (begun at ``_monotonic()`` time ``began``, on
    ``loop``) yielded ``waiting``: finished by ``seconds`` after ``began`` (None: no limit).

    On trio (``loop`` None) only an untimed body may have been started this way."""
    if loop is None or seconds is None:
        return Later(_untimed(coro, waiting))
    # Only now is the loop's clock read (it may not be monotonic(); its rate is the same).
    deadline = loop.time() + seconds - (_monotonic() - began)
    return Later(finish_by(coro, waiting, loop, deadline))


async def run_with_deadline(coro: Coroutine[Any, Any, Any], seconds: float) -> tuple[Any, bool]:
    """Await ``coro`` for at most ``seconds``; return ``(value, timed_out)``."""
    started = start(coro, seconds, running_loop())
    if type(started) is Later:
        return await started.rest
    return started, False


async def _scoped(coro: Coroutine[Any, Any, Any], seconds: float) -> tuple[Any, bool]:
    with anyio.move_on_after(seconds) as scope:
        return await coro, False
    return None, scope.cancelled_caught


@types.coroutine
def _untimed(coro: Coroutine[Any, Any, Any], waiting: Any) -> Generator[Any, Any, tuple[Any, bool]]:
    return (yield from _pass_through(coro, waiting)), False


class CancelOnce:
    """One cancellation of a task, made as ``asyncio.timeout`` makes it (``task.cancel()``)
    and undone with ``uncancel()`` once handled, so that anyone else's cancellation of the
    task is never taken for it. Fired at most once: by a deadline here, by a client's
    disconnect in :mod:`harness.mcp.http.fast_answer`."""

    __slots__ = ("before", "fired", "pending", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.before = task.cancelling()
        """The task's cancel requests when we began watching it (other people's)."""
        self.fired = False
        self.pending = False
        """Our cancel request is made and not undone yet."""

    def fire(self) -> None:
        self.fired = self.pending = True
        self.task.cancel()

    def settle(self) -> bool:
        """Undo our cancel request (if not undone yet); whether another one is pending."""
        if self.pending:
            self.pending = False
            return self.task.uncancel() > self.before
        return self.task.cancelling() > self.before


async def _paced_scope(coro: Coroutine[Any, Any, Any], paced: Paced) -> tuple[Any, bool]:
    """Trio: the body in a cancel scope whose deadline follows ``paced``'s pace."""
    clock = anyio.current_time
    pace = paced.paced()
    if pace is None:  # no limit after all
        return await coro, False

    def loop_time(deadline: float) -> float:
        return deadline if deadline == INF else clock() + (deadline - _monotonic())

    with anyio.CancelScope(deadline=loop_time(pace.deadline())) as scope:

        def moved(deadline: float) -> None:
            scope.deadline = loop_time(deadline)

        pace.moved = moved
        try:
            return await coro, False
        finally:
            pace.moved = None
    return None, scope.cancelled_caught


@types.coroutine
def finish_by(
    coro: Coroutine[Any, Any, Any],
    waiting: Any,
    loop: asyncio.AbstractEventLoop,
    deadline: float,
    pace: Pace | None = None,
) -> Generator[Any, Any, tuple[Any, bool]]:
    """Finish a coroutine that has already yielded ``waiting`` to the loop, by ``deadline``
    (the loop's time), or by ``pace``'s deadline as it moves.

    This is what ``await`` does, picked up after the first step: each value the body
    yields goes to the loop, each value or exception the loop sends back goes to the body.
    """
    task = asyncio.current_task(loop)
    if task is None:  # not in a task (a bare coroutine driven by hand): no deadline
        return (yield from _pass_through(coro, waiting)), False
    timer = CancelOnce(task)
    handle: asyncio.TimerHandle | None = None
    if pace is not None:

        def moved(deadline: float) -> None:
            nonlocal handle
            if handle is not None:
                handle.cancel()
                handle = None
            if timer.fired or deadline == INF:
                return
            at = loop.time() + (deadline - _monotonic())
            if at <= loop.time():
                timer.fire()
            else:
                handle = loop.call_at(at, timer.fire)

        pace.moved = moved
        moved(pace.deadline())
    elif loop.time() >= deadline:  # the first step alone used up the time
        timer.fire()
    else:
        handle = loop.call_at(deadline, timer.fire)
    try:
        return (yield from _pass_through(coro, waiting)), False
    except asyncio.CancelledError:
        if timer.fired and not timer.settle():
            return None, True
        raise
    finally:
        if pace is not None:
            pace.moved = None
        if handle is not None:
            handle.cancel()
        if timer.pending:
            timer.settle()


@types.coroutine
def _pass_through(coro: Coroutine[Any, Any, Any], waiting: Any) -> Generator[Any, Any, Any]:
    while True:
        try:
            sent = yield waiting
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:
            try:
                waiting = coro.throw(exc)
            except StopIteration as done:
                return done.value
        else:
            try:
                waiting = coro.send(sent)
            except StopIteration as done:
                return done.value
