"""Which of a call's progress reports a person's screen gets (DESIGN §16).

A tool may report progress in a tight loop (every row of a million); each report drawn on a
terminal, or sent to every console page as an event, would cost more than the work. A
:class:`ShownProgress` lets a report through when it says something new — the first of its
call, a new message or total, the end (``done`` reaching ``total``) — or when
:data:`INTERVAL` seconds have passed since the call's last one went out. The tool's own
deadline still sees every report (``ctx.progress`` resets ``idle`` before this is asked).
"""

from __future__ import annotations

import time
from typing import Any

INTERVAL = 0.1
"""Seconds between two reports of a call that say nothing new."""


class ShownProgress:
    """The reports worth showing, per call id (see the module)."""

    def __init__(self, interval: float = INTERVAL) -> None:
        self.interval = interval
        self._last: dict[str, tuple[float, Any, Any]] = {}
        """Call id → when its last report went out, its total and its message."""

    def passes(self, call_id: str, done: float, total: float | None, message: str | None) -> bool:
        """Whether this report should be shown (and remember it when so)."""
        now = time.monotonic()
        last = self._last.get(call_id)
        news = (
            last is None
            or last[1] != total
            or last[2] != message
            or (total is not None and done >= total)
            or now - last[0] >= self.interval
        )
        if news:
            if len(self._last) > 1000:  # calls that ended long ago
                self._last.clear()
            self._last[call_id] = (now, total, message)
        return news
