"""The list of sessions, fast with hundreds of logs: summaries, search and titles.

A summary is ``{id, title, created, updated, turns}``. Logs are written by :func:`.log.dumps`
with ``seq``, ``time`` and ``type`` first, so a summary needs no JSON parse of most lines:
the first and last lines give the times, a regular expression over the line starts counts
the turns, and only the first ``turn/start`` and the last ``session/title`` line are parsed.
Summaries are cached by file size and modification time, so a second listing only stats the
files. A log written some other way falls back to a full parse.

A rename is a ``session/title {title}`` event appended to the log: the log stays the whole
record (an export carries the title, and the list shows it after a restart), and the last
such event wins. Search streams each log line by line and matches the words of user
messages and of the model's answers, case-insensitively.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import RecordError
from .log import SessionStore, read_events

MAX_QUERY = 200
MAX_TITLE = 200
_HEAD = re.compile(rb'\{"seq":\d+,"time":"([^"]*)","type":"([^"]*)"')
_TURN = re.compile(rb'^\{"seq":\d+,"time":"[^"]*","type":"turn/start"', re.M)
_TITLE = re.compile(rb'^\{"seq":\d+,"time":"[^"]*","type":"session/title"', re.M)
_SPOKEN = (b"turn/start", b"assistant/message")
_BIDI = set("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _clean(text: str, what: str, limit: int) -> str:
    if not isinstance(text, str):
        raise RecordError(f"the {what} must be a string")
    text = text.strip()
    if not text:
        raise RecordError(f"the {what} is empty")
    if len(text) > limit:
        raise RecordError(f"the {what} is longer than {limit} characters")
    bad = next((c for c in text if unicodedata.category(c) == "Cc" or c in _BIDI), None)
    if bad is not None:
        raise RecordError(f"the {what} contains the control character U+{ord(bad):04X}")
    return text


def check_title(title: Any) -> str:
    """A title a person may set: 1 to 200 characters, no control or bidi characters."""
    return _clean(title, "title", MAX_TITLE)


def check_query(query: Any) -> str:
    """A search word or phrase: 1 to 200 characters, no control characters."""
    return _clean(query, "search text", MAX_QUERY)


def short(text: str) -> str:
    text = " ".join(text.split())
    return text[:80] + ("…" if len(text) > 80 else "")


def summary(session_id: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary of parsed events (the slow path, and sessions kept in memory)."""
    titled = [e for e in events if e.get("type") == "session/title"]
    if titled:
        title = str(titled[-1].get("title") or "")
    else:
        first = next((e for e in events if e.get("type") == "turn/start"), {})
        title = short(str(first.get("input", "")))
    return {
        "id": session_id,
        "title": title,
        "created": events[0].get("time") if events else None,
        "updated": events[-1].get("time") if events else None,
        "turns": sum(1 for e in events if e.get("type") == "turn/start"),
    }


def _line_at(data: bytes, start: int) -> dict[str, Any]:
    end = data.find(b"\n", start)
    value = json.loads(data[start : end if end != -1 else len(data)])
    return value if isinstance(value, dict) else {}


def summary_of_bytes(session_id: str, data: bytes, path: Path) -> dict[str, Any]:
    """The summary of one log's bytes, parsing only the lines it needs."""
    data = data[: data.rfind(b"\n") + 1]  # a partial last line is not part of the log
    if not data:
        return summary(session_id, [])
    last = data.rfind(b"\n", 0, len(data) - 1) + 1
    first, final = _HEAD.match(data), _HEAD.match(data, last)
    if first is None or final is None:
        return summary(session_id, read_events(data, path)[0])
    try:
        titles = list(_TITLE.finditer(data))
        if titles:
            title = str(_line_at(data, titles[-1].start()).get("title") or "")
        else:
            opening = _TURN.search(data)
            start = _line_at(data, opening.start()) if opening else {}
            title = short(str(start.get("input", "")))
    except ValueError:  # a corrupt line: let the careful parse decide
        return summary(session_id, read_events(data, path)[0])
    return {
        "id": session_id,
        "title": title,
        "created": first.group(1).decode(),
        "updated": final.group(1).decode(),
        "turns": len(_TURN.findall(data)),
    }


class Catalog:
    """Summaries of a store's logs, cached by (size, modification time)."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self._cache: dict[str, tuple[tuple[int, int], dict[str, Any]]] = {}

    def summaries(self) -> list[dict[str, Any]]:
        """Every logged session's summary (a folder store; memory is the caller's)."""
        listed = []
        for session_id in self.store.ids():
            path = self.store.path(session_id)
            try:
                stat = os.stat(path)
                key = (stat.st_size, stat.st_mtime_ns)
                cached = self._cache.get(session_id)
                if cached is None or cached[0] != key:
                    cached = key, summary_of_bytes(session_id, path.read_bytes(), path)
                    self._cache[session_id] = cached
            except OSError:  # deleted meanwhile
                self._cache.pop(session_id, None)
                continue
            listed.append(dict(cached[1]))
        return listed

    def matches(self, session_id: str, query: str) -> bool:
        """Whether a logged session's messages contain ``query`` (streamed, line by line)."""
        needle = query.casefold()
        try:
            with open(self.store.path(session_id), "rb") as handle:
                return any_spoken(_lines(handle), needle)
        except OSError:
            return False


def _lines(handle: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    for line in handle:
        head = _HEAD.match(line)
        if head is not None and head.group(2) not in _SPOKEN:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            return  # a partial or corrupt line ends the log, as when it is loaded
        if isinstance(event, dict):
            yield event


def any_spoken(events: Iterable[dict[str, Any]], needle: str) -> bool:
    """Whether a user message or an answer among ``events`` contains ``needle`` (casefolded)."""
    for event in events:
        kind = event.get("type")
        if kind == "turn/start":
            text = event.get("input")
        elif kind == "assistant/message":
            text = event.get("text")
        else:
            continue
        if isinstance(text, str) and needle in text.casefold():
            return True
    return False
