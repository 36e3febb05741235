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
import types
from collections.abc import Coroutine, Generator
from typing import Any

import anyio


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop, or None under trio (where asyncio's own call raises)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def run_with_deadline(coro: Coroutine[Any, Any, Any], seconds: float) -> tuple[Any, bool]:
    """Await ``coro`` for at most ``seconds``; return ``(value, timed_out)``."""
    loop = running_loop()
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
                    return done.value, False
            else:
                try:
                    waiting = coro.send(sent)
                except StopIteration as done:
                    return done.value, False
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
