"""Which of a call's progress reports a person's screen gets (DESIGN §16).

A tool may report progress in a tight loop (every row of a million); each report drawn on a
terminal, or sent to every console page as an event, would cost more than the work. A
:class:`ShownProgress` shows a report at once when it says something new — the first of its
call, a new message or total, the end (``done`` reaching ``total``) — or when
:data:`INTERVAL` seconds have passed since the call's last one was shown. A report held back
is not lost: the latest one held is shown :data:`INTERVAL` seconds after the last shown (so
a burst followed by a long quiet step leaves the bar where the tool is), unless the call has
ended first (:meth:`ShownProgress.end`). The tool's own ``idle`` deadline sees every report
(``ctx.progress`` resets it before a surface is asked to show anything).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine
from typing import Any

import anyio

INTERVAL = 0.1
"""Seconds between two shown reports of a call that say nothing new."""

Show = Callable[[], object]
Later = Callable[[Callable[[], Coroutine[Any, Any, None]]], Any]
"""Runs a coroutine function in the background (``Context.start_soon``)."""


class ShownProgress:
    """The reports worth showing, per call id (see the module)."""

    def __init__(self, later: Later | None = None, interval: float = INTERVAL) -> None:
        self.later = later
        self.interval = interval
        self._last: dict[str, tuple[float, Any, Any]] = {}
        """Call id → when its last report was shown, its total and its message."""
        self._held: dict[str, tuple[Show, Any, Any]] = {}
        """Call id → the latest report held back: how to show it, its total and message."""

    def offer(
        self, call_id: str, done: float, total: float | None, message: str | None, show: Show
    ) -> None:
        """Show a report now (``show()``), or hold it back as its call's latest."""
        now = time.monotonic()
        last = self._last.get(call_id)
        if (
            last is None
            or last[1] != total
            or last[2] != message
            or (total is not None and done >= total)
            or now - last[0] >= self.interval
        ):
            self._held.pop(call_id, None)
            if last is None and len(self._last) > 1000:  # calls that ended unannounced
                self._last.clear()
            self._last[call_id] = (now, total, message)
            show()
            return
        waiting = call_id in self._held
        self._held[call_id] = (show, total, message)
        if not waiting and self.later is not None:
            wait = last[0] + self.interval - now
            self.later(lambda: self._trail(call_id, wait))

    async def _trail(self, call_id: str, wait: float) -> None:
        await anyio.sleep(max(wait, 0.0))
        held = self._held.pop(call_id, None)
        if held is not None:
            show, total, message = held
            self._last[call_id] = (time.monotonic(), total, message)
            show()

    def end(self, call_id: str) -> None:
        """The call has ended: a report still held back is dropped."""
        self._held.pop(call_id, None)
        self._last.pop(call_id, None)
