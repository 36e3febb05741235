"""Sessions in the store (``agent.sessions: sqlite:///...`` or ``postgresql://...``).

The same events as a JSONL log (:mod:`.log`), one row each (:mod:`harness.store.session_records`),
behind the same calls the agent makes of a folder: load, write, list, search, export,
delete. A store also says which process runs each session's turn, so a turn cut off by a
restart is found and finished (:mod:`.resume`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..store.config import StoreConfig
from ..store.service import open_store
from ..store.session_records import SessionRecords
from .log import SessionNotFound, check_id, dumps
from .session_list import any_spoken, short


def is_store_url(sessions: str | None) -> bool:
    """Whether ``agent.sessions`` names a store rather than a folder."""
    return sessions is not None and sessions.startswith(
        ("sqlite:///", "postgresql://", "postgres://")
    )


async def open_sessions(url: str, base_dir: Path) -> StoredSessions:
    """The sessions of the store ``url`` (an SQLite path relative to ``base_dir``), open;
    :class:`harness.store.schema.StoreError` when it cannot be."""
    return StoredSessions(SessionRecords(await open_store(StoreConfig(url=url), base_dir)))


class StoredSessions:
    """The sessions of one store, as :class:`.log.SessionStore` has those of a folder."""

    folder = None
    """Not a folder (the agent asks this to tell the kinds of store apart)."""

    def __init__(self, records: SessionRecords) -> None:
        self.records = records

    async def close(self) -> None:
        """Write what is queued, then let the store go."""
        await self.records.flush()
        await self.records.database.close()

    def exists(self, session_id: str) -> bool:
        return self.records.exists(check_id(session_id))

    async def has(self, session_id: str) -> bool:
        """:meth:`exists`, without blocking the event loop."""
        return await self.records.has(check_id(session_id))

    def load(self, session_id: str) -> tuple[list[dict[str, Any]], int]:
        """Every event of a session, in order (and 0, as a folder gives a byte size)."""
        return self._found(session_id, self.records.load(check_id(session_id))), 0

    async def fetch(self, session_id: str) -> list[dict[str, Any]]:
        """Every event of a session, in order, without blocking the event loop."""
        return self._found(session_id, await self.records.fetch(check_id(session_id)))

    async def fetch_after(self, session_id: str, seq: int) -> list[dict[str, Any]]:
        """The events of a session after ``seq`` (another replica appended them), in order."""
        return await self.records.fetch(check_id(session_id), seq) or []

    def _found(self, session_id: str, events: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
        if events is None:
            raise SessionNotFound(f"no session {session_id!r} in the store {self.records.where}")
        return events

    def ids(self) -> list[str]:
        return self.records.ids()

    def delete(self, session_id: str) -> None:
        if not self.records.delete(check_id(session_id)):
            raise SessionNotFound(f"no session {session_id!r} in the store {self.records.where}")

    def writer(self, session_id: str, keep: int | None = None) -> StoreWriter:
        return StoreWriter(self.records, check_id(session_id))

    def summaries(self, needle: str | None = None) -> list[dict[str, Any]]:
        """``{id, title, created, updated, turns}`` of every session (whose messages contain
        ``needle``, casefolded, when given)."""
        spoken = None if needle is None else self.records.spoken()
        return _summaries(self.records.outlines(), spoken, needle)

    async def fetch_summaries(self, needle: str | None = None) -> list[dict[str, Any]]:
        """:meth:`summaries`, without blocking the event loop."""
        spoken = None if needle is None else await self.records.fetch_spoken()
        return _summaries(await self.records.fetch_outlines(), spoken, needle)

    def export(self, session_id: str) -> Iterator[bytes]:
        """The session as a JSONL log, a line per event."""
        events, _ = self.load(session_id)
        return iter([(dumps(event) + "\n").encode() for event in events])


def _summaries(
    outlines: list[dict[str, Any]],
    spoken: Iterable[tuple[str, dict[str, Any]]] | None,
    needle: str | None,
) -> list[dict[str, Any]]:
    matching: set[str] | None = None
    if needle is not None and spoken is not None:
        matching = set()
        for session, event in spoken:
            if session not in matching and any_spoken([event], needle):
                matching.add(session)
    listed = []
    for outline in outlines:
        if matching is not None and outline["id"] not in matching:
            continue
        titled, first = outline["title"], outline["first"] or {}
        if titled is not None:
            title = str(titled.get("title") or "")
        else:
            title = short(str(first.get("input", "")))
        listed.append(
            {
                "id": outline["id"],
                "title": title,
                "created": outline["created"],
                "updated": outline["updated"],
                "turns": outline["turns"],
            }
        )
    return listed


class StoreWriter:
    """Records one session's events in the store, in order, without waiting for it."""

    resumable = True
    """A turn left open in the store is finished by the next process (:mod:`.resume`)."""

    def __init__(self, records: SessionRecords, session_id: str) -> None:
        self.records = records
        self.session_id = session_id

    def append(self, event: dict[str, Any]) -> None:
        self.records.append(
            self.session_id,
            int(event.get("seq") or 0),
            str(event.get("type")),
            str(event.get("time") or ""),
            dumps(event),
        )

    def running(self, turn: int | None) -> None:
        """Mark ``turn`` as run by this process (None: no turn runs)."""
        self.records.running(self.session_id, turn)

    async def flush(self) -> None:
        """Wait until every event appended so far is in the store."""
        await self.records.flush()

    def close(self) -> None:
        """Nothing to close: the store's writer outlives its sessions."""
