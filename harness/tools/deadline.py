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
import math
import types
from collections.abc import Awaitable, Coroutine, Generator
from typing import Any
from weakref import ref as _ref

import anyio

try:  # anyio's record of each asyncio task's cancel scopes, read by caller_cancelled()
    from anyio._backends._asyncio import CancelScope as _AsyncioScope
    from anyio._backends._asyncio import _task_states

    _NEEDED = {"_cancel_called", "_parent_scope", "_shield"}
    _SCOPES: Any = _task_states.data if set(_AsyncioScope.__slots__) >= _NEEDED else None  # type: ignore[attr-defined]
except (ImportError, AttributeError):  # another anyio: use its public API
    _SCOPES = None

# The running task of each loop (what asyncio.current_task() reads, without its wrapper).
_CURRENT: dict[asyncio.AbstractEventLoop, asyncio.Task[Any]] = getattr(
    asyncio.tasks, "_current_tasks", {}
)


def caller_cancelled() -> bool:
    """Whether the caller's cancel scope is already cancelled (no checkpoint needed).

    The same as ``anyio.current_effective_deadline() == -math.inf``; on asyncio it reads
    anyio's scope records directly, at a fraction of the cost, since every call asks.
    """
    loop = asyncio._get_running_loop()
    if _SCOPES is None or loop is None:
        return anyio.current_effective_deadline() == -math.inf
    task = _CURRENT.get(loop)
    if task is None:
        return anyio.current_effective_deadline() == -math.inf
    state = _SCOPES.get(_ref(task))
    scope = None if state is None else state.cancel_scope
    while scope is not None:
        if scope._cancel_called:
            return True
        if scope._shield:
            return False
        scope = scope._parent_scope
    return False


def start(
    coro: Coroutine[Any, Any, Any], seconds: float | None
) -> tuple[Any, bool] | Awaitable[tuple[Any, bool]]:
    """Run ``coro``'s first step now; ``(value, timed_out)`` if it returned, else an awaitable.

    The awaitable finishes the coroutine within ``seconds`` of now (None: no limit). This
    is the hot path of every call: no coroutine is created around the body, and a body that
    returns on its first step costs one ``send``.
    """
    loop = asyncio._get_running_loop()
    if loop is None:  # trio: a deadline is a cancel scope, entered before the first step
        if seconds is not None:
            return run_with_deadline(coro, seconds)
        deadline = math.inf
    else:
        deadline = math.inf if seconds is None else loop.time() + seconds
    try:
        waiting = coro.send(None)
    except StopIteration as done:
        return done.value, False
    if loop is None or seconds is None:
        return _untimed(coro, waiting)
    return finish_by(coro, waiting, loop, deadline)


@types.coroutine
def _untimed(coro: Coroutine[Any, Any, Any], waiting: Any) -> Generator[Any, Any, tuple[Any, bool]]:
    return (yield from _pass_through(coro, waiting)), False


async def run_with_deadline(coro: Coroutine[Any, Any, Any], seconds: float) -> tuple[Any, bool]:
    """Await ``coro`` for at most ``seconds``; return ``(value, timed_out)``."""
    loop = asyncio._get_running_loop()
    if loop is None:  # trio: its deadlines are cancel scopes, entered before the first step
        with anyio.move_on_after(seconds) as scope:
            return await coro, False
        return None, scope.cancelled_caught
    deadline = loop.time() + seconds
    try:
        waiting = coro.send(None)
    except StopIteration as done:
        return done.value, False
    return await finish_by(coro, waiting, loop, deadline)


class _Timer:
    """The armed deadline of one suspended call: cancels its task when it fires."""

    __slots__ = ("cancels", "expired", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.expired = False
        self.cancels = 0

    def fire(self) -> None:
        self.expired = True
        self.cancels += 1
        self.task.cancel()

    def settle(self) -> int:
        """Undo our cancel requests; return the cancel requests left (other people's)."""
        remaining = self.task.cancelling()
        for _ in range(self.cancels):
            remaining = self.task.uncancel()
        self.cancels = 0
        return remaining


@types.coroutine
def finish_by(
    coro: Coroutine[Any, Any, Any],
    waiting: Any,
    loop: asyncio.AbstractEventLoop,
    deadline: float,
) -> Generator[Any, Any, tuple[Any, bool]]:
    """Finish a coroutine that has already yielded ``waiting`` to the loop, by ``deadline``.

    This is what ``await`` does, picked up after the first step: each value the body
    yields goes to the loop, each value or exception the loop sends back goes to the body.
    """
    task = asyncio.current_task(loop)
    if task is None:  # not in a task (a bare coroutine driven by hand): no deadline
        return (yield from _pass_through(coro, waiting)), False
    before = task.cancelling()
    timer = _Timer(task)
    handle = None
    if loop.time() >= deadline:  # the first step alone used up the time
        timer.fire()
    else:
        handle = loop.call_at(deadline, timer.fire)
    try:
        return (yield from _pass_through(coro, waiting)), False
    except asyncio.CancelledError:
        if timer.expired and timer.settle() <= before:
            return None, True
        raise
    finally:
        if handle is not None:
            handle.cancel()
        if timer.cancels:
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
