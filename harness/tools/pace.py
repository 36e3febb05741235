"""The deadline of a running body that takes a context: ``total`` and ``idle``, paused while
the call waits for an answer.

A tool's ``timeout`` is seconds (``total``) or ``{"total": s, "idle": s}``. ``idle`` fails a
call that reports no progress (``ctx.progress``) for that long, so long work that reports
goes on; time spent waiting for an answer (``ctx.ask``, ``sample``, ``roots``, ``inputs``)
counts against neither. The clock is ``time.monotonic()``; whoever enforces the deadline (a
loop timer on asyncio, a cancel scope on trio, :mod:`.deadline`) sets :attr:`Pace.moved` to
hear when it moves.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Protocol

_monotonic = time.monotonic
INF = math.inf


class Paced(Protocol):
    """What holds a body's :class:`Pace` and makes it at its first need (a call's context)."""

    def paced(self) -> Pace | None: ...


class Pace:
    """One body's deadline (see the module)."""

    __slots__ = ("began", "idle", "last", "moved", "total", "waited", "waiting", "waiting_since")

    def __init__(self, total: float | None, idle: float | None, began: float | None = None) -> None:
        self.total = total
        self.idle = idle
        self.began = _monotonic() if began is None else began
        self.last = self.began
        """When progress was last reported (or a wait ended)."""
        self.waited = 0.0
        """Seconds spent waiting for answers (not counted)."""
        self.waiting = 0
        self.waiting_since = 0.0
        self.moved: Callable[[float], None] | None = None
        """Called with the new deadline (monotonic seconds, ``inf`` for none) when it moves."""

    def deadline(self) -> float:
        """When the body is out of time, in ``time.monotonic()`` seconds (``inf``: never)."""
        if self.waiting:
            return INF
        deadline = INF if self.total is None else self.began + self.waited + self.total
        if self.idle is not None:
            deadline = min(deadline, self.last + self.idle)
        return deadline

    def left(self) -> float | None:
        """Seconds left (None: no limit)."""
        deadline = self.deadline()
        if deadline == INF:
            return None if not self.waiting else self._left_after_wait()
        return max(0.0, deadline - _monotonic())

    def _left_after_wait(self) -> float | None:
        if self.total is None:
            return self.idle
        spent = self.waiting_since - self.began - self.waited
        left = max(0.0, self.total - spent)
        return left if self.idle is None else min(left, self.idle)

    def idle_out(self) -> bool:
        """Whether it was ``idle`` (not ``total``) that ran out."""
        if self.idle is None:
            return False
        total = INF if self.total is None else self.began + self.waited + self.total
        return self.last + self.idle < total

    def touch(self) -> None:
        """Progress was reported: the idle clock starts again."""
        if self.idle is not None:
            self.last = _monotonic()
            self._move()

    def pause(self) -> None:
        """A wait for an answer begins: no deadline until it ends."""
        if not self.waiting:
            self.waiting_since = _monotonic()
        self.waiting += 1
        self._move()

    def resume(self) -> None:
        """A wait ended: its time is not counted, and the idle clock starts again."""
        self.waiting -= 1
        if not self.waiting:
            now = _monotonic()
            self.waited += now - self.waiting_since
            self.last = now
        self._move()

    def _move(self) -> None:
        if self.moved is not None:
            self.moved(self.deadline())

    def describe(self) -> str:
        """The limit, for a timeout's message."""
        if self.idle_out():
            return f"reported no progress for {self.idle:g} seconds"
        return f"timed out after {self.total:g} seconds"
