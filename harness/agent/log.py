"""Session logs: one append-only JSONL file per session, one event per line.

Layout: ``<sessions folder>/<session id>.jsonl``. Each line is a compact JSON object with
``seq`` (1, 2, ... within the session), ``time`` (UTC, ISO 8601 with milliseconds), ``type``
and the event's own fields; each line is written and flushed as the event happens. A file
cut off mid-line by a crash loads every complete line before it, and the partial line is
cut away before the next event is appended. ``sessions: null`` keeps logs in memory.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import HarnessError

_log = logging.getLogger("harness.agent")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class SessionNotFound(HarnessError):
    """Raised when a session id names no session."""


def new_id() -> str:
    """A sortable, unique session id: ``20261201-101500-3f9a1c``."""
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def now() -> str:
    """The current UTC time as ISO 8601 with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def check_id(session_id: str) -> str:
    """``session_id`` when it is a safe file name, else :class:`SessionNotFound`."""
    if not isinstance(session_id, str) or not _ID.fullmatch(session_id) or ".." in session_id:
        raise SessionNotFound(
            f"{session_id!r} is not a session id (ids are letters, digits, '.', '_' and '-')"
        )
    return session_id


def dumps(event: dict[str, Any]) -> str:
    """One compact JSON line (no newline)."""
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"), default=str)


class SessionStore:
    """Where session logs live: a folder, or memory when ``folder`` is None."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._memory: dict[str, list[dict[str, Any]]] = {}

    def path(self, session_id: str) -> Path:
        assert self.folder is not None
        return self.folder / f"{check_id(session_id)}.jsonl"

    def exists(self, session_id: str) -> bool:
        if self.folder is None:
            return session_id in self._memory
        return self.path(session_id).is_file()

    def load(self, session_id: str) -> tuple[list[dict[str, Any]], int]:
        """Every complete event of a session, in order, and the byte size they fill."""
        if self.folder is None:
            if session_id not in self._memory:
                raise SessionNotFound(f"no session {session_id!r} (sessions are kept in memory)")
            return list(self._memory[session_id]), 0
        path = self.path(session_id)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise SessionNotFound(f"no session {session_id!r} in {self.folder}") from None
        return read_events(data, path)

    def ids(self) -> list[str]:
        """Every session id, oldest first."""
        if self.folder is None:
            return list(self._memory)
        if not self.folder.is_dir():
            return []
        names = [path.stem for path in self.folder.glob("*.jsonl") if _ID.fullmatch(path.stem)]
        return sorted(names)

    def delete(self, session_id: str) -> None:
        if self.folder is None:
            if self._memory.pop(session_id, None) is None:
                raise SessionNotFound(f"no session {session_id!r}")
            return
        try:
            self.path(session_id).unlink()
        except FileNotFoundError:
            raise SessionNotFound(f"no session {session_id!r} in {self.folder}") from None

    def writer(self, session_id: str, keep: int | None = None) -> LogWriter:
        """A writer appending to the log; ``keep`` cuts the file to that size first."""
        if self.folder is None:
            return LogWriter(self._memory.setdefault(session_id, []), None, None)
        return LogWriter(None, self.path(session_id), keep)


def read_events(data: bytes, path: Path | str = "<log>") -> tuple[list[dict[str, Any]], int]:
    """Parse a log; a partial or corrupt line ends it there (logged, not raised).

    Returns the events and the byte offset just after the last good line.
    """
    events: list[dict[str, Any]] = []
    at = 0
    while at < len(data):
        end = data.find(b"\n", at)
        if end == -1:
            _log.warning("%s: a partial last line is ignored (the log was cut off)", path)
            break
        line = data[at:end]
        try:
            event = json.loads(line) if line.strip() else None
        except ValueError:
            _log.warning("%s: a corrupt line at byte %d is ignored, with what follows", path, at)
            break
        if isinstance(event, dict) and isinstance(event.get("type"), str):
            events.append(event)
        at = end + 1
    return events, at


def log_chunks(path: Path, size: int = 65536) -> Iterator[bytes]:
    """A log's bytes in chunks, up to its last complete line (for an export)."""
    with open(path, "rb") as handle:
        held = b""
        while chunk := handle.read(size):
            held += chunk
            cut = held.rfind(b"\n") + 1
            if cut:
                yield held[:cut]
                held = held[cut:]


class LogWriter:
    """Appends events to one session's log, flushing each line."""

    resumable = False
    """A turn left open in a log is closed as cut off when the session is next opened."""

    def __init__(
        self, memory: list[dict[str, Any]] | None, path: Path | None, keep: int | None
    ) -> None:
        self._memory = memory
        self._path = path
        self._keep = keep
        self._file: BinaryIO | None = None

    def append(self, event: dict[str, Any]) -> None:
        if self._memory is not None:
            self._memory.append(event)
            return
        if self._file is None:
            self._file = self._open()
        self._file.write(dumps(event).encode() + b"\n")
        self._file.flush()

    def _open(self) -> BinaryIO:
        assert self._path is not None
        self._path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self._path, "ab")  # noqa: SIM115 - kept open for the session's life
        if self._keep is not None and handle.seek(0, os.SEEK_END) > self._keep:
            handle.truncate(self._keep)  # drop a line cut off by a crash
        return handle

    def running(self, turn: int | None) -> None:
        """A folder does not say which process runs a turn (a store does)."""

    async def flush(self) -> None:
        """Each line is written as it is appended: nothing waits."""

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
