"""The console's live events: one numbered log, streamed to every page as Server-Sent Events.

Each event gets an id ``EPOCH-N`` (``EPOCH`` is random per server run, ``N`` counts up). A
page that reconnects sends the last id it saw as ``Last-Event-ID`` (browsers do so by
themselves) and receives every event after it. When that is impossible — the id is from an
earlier server run, or older than the events kept (the newest ``keep``) — the stream starts
with a ``resync`` event, and the page reloads its state from the JSON API instead.

Events are serialised once, when published, however many pages listen; each stream only
copies bytes out of the shared log.
"""

from __future__ import annotations

import json
import secrets
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio

KEEP = 10_000
"""Events kept for pages that reconnect."""
HEARTBEAT = 15.0
"""Seconds of silence after which a comment line keeps proxies from closing the stream."""
RETRY_MS = 1000
"""How long a browser waits before reconnecting a dropped stream."""
MAX_NUMBER_DIGITS = 19
"""The longest event number accepted in a ``Last-Event-ID`` (what a 64-bit count needs)."""


@dataclass(frozen=True, slots=True)
class Event:
    """One published event, already in its wire form."""

    number: int
    type: str
    frame: bytes


def parse_id(text: str | None) -> tuple[str, int] | None:
    """``(EPOCH, N)`` of an id ``EPOCH-N``; None for no id or a malformed one.

    ``N`` must be ASCII digits, at most :data:`MAX_NUMBER_DIGITS` of them: ``str.isdigit``
    also accepts ``²`` (which ``int`` refuses), and ``int`` refuses over 4300 digits.
    """
    if not text:
        return None
    epoch, dash, number = text.strip().rpartition("-")
    if not dash or not epoch or not _ascii_number(number):
        return None
    return epoch, int(number)


def _ascii_number(text: str) -> bool:
    return 0 < len(text) <= MAX_NUMBER_DIGITS and text.isascii() and text.isdigit()


class EventHub:
    """The numbered event log and its subscribers."""

    def __init__(self, keep: int = KEEP) -> None:
        self.epoch = secrets.token_hex(4)
        self._events: deque[Event] = deque(maxlen=keep)
        self._last = 0
        self._wake = anyio.Event()
        self._generation = 0
        self.streams = 0
        """Streams open right now."""

    @property
    def last_id(self) -> str:
        """The id of the newest event (``EPOCH-0`` before the first)."""
        return f"{self.epoch}-{self._last}"

    def publish(self, kind: str, data: dict[str, Any]) -> str:
        """Add an event of type ``kind``; return its id."""
        self._last += 1
        event_id = f"{self.epoch}-{self._last}"
        payload = json.dumps({"type": kind, **data}, ensure_ascii=False, default=str)
        frame = f"id: {event_id}\nevent: {kind}\ndata: {payload}\n\n".encode()
        self._events.append(Event(self._last, kind, frame))
        self._wake.set()
        self._wake = anyio.Event()
        return event_id

    def drop_streams(self) -> None:
        """End every open stream (pages reconnect and resume; also used at shutdown)."""
        self._generation += 1
        self._wake.set()
        self._wake = anyio.Event()

    def _start(self, last_event_id: str | None) -> tuple[int, bool]:
        """Where a stream starts, and whether the page must resync first."""
        parsed = parse_id(last_event_id)
        if parsed is None:  # none, or malformed (forged, cut off): start from now
            return self._last, False
        epoch, after = parsed
        if epoch != self.epoch or after > self._last:
            return self._last, True
        oldest = self._events[0].number if self._events else self._last + 1
        if after + 1 < oldest:
            return self._last, True
        return after, False

    async def stream(self, last_event_id: str | None = None) -> AsyncIterator[bytes]:
        """The SSE byte stream for one page, from after ``last_event_id``."""
        after, resync = self._start(last_event_id)
        generation = self._generation
        self.streams += 1
        try:
            start = f"{self.epoch}-{after}"
            hello = json.dumps({"type": "hello", "id": start})
            yield f"retry: {RETRY_MS}\nid: {start}\nevent: hello\ndata: {hello}\n\n".encode()
            if resync:
                yield b'event: resync\ndata: {"type": "resync"}\n\n'
            while generation == self._generation:
                pending = self._after(after)
                if pending:
                    after = pending[-1].number
                    yield b"".join(event.frame for event in pending)
                    continue
                wake = self._wake
                with anyio.move_on_after(HEARTBEAT) as idle:
                    await wake.wait()
                if idle.cancelled_caught:
                    yield b": keep-alive\n\n"
        finally:
            self.streams -= 1

    def _after(self, number: int) -> list[Event]:
        if number >= self._last:
            return []
        events = self._events
        # the newest events are at the right end: walk back only as far as needed
        start = len(events) - (self._last - number)
        return [events[index] for index in range(max(start, 0), len(events))]
