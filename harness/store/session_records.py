"""Agent sessions kept in a store (``agent.sessions: sqlite:///...`` or ``postgresql://...``).

Each event of a session is one row of ``session_events``: the session, its ``seq``, ``type``
and ``time``, and the event's JSON, the very line a JSONL log holds. ``sessions`` says which
process runs a turn of a session now (its owner, as the call journal names processes; empty
when no turn runs): a turn whose owner died was cut off, and the process that adopts it
finishes it.

Recording never waits for the database: rows are queued and written in order by one task
(:meth:`SessionRecords.write`), a batch per transaction; :meth:`SessionRecords.flush` waits
until everything queued so far is written (the agent flushes a model's answer before it acts
on it). Each read is one query, offered both ways: synchronous, as the agent's Python API
is, and awaited (in a worker thread on PostgreSQL), for the event loop's readers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import anyio

from .database import Database

_log = logging.getLogger("harness.store")
SPOKEN = ("turn/start", "assistant/message")
"""The events whose words a search of sessions looks at."""


class SessionRecords:
    """The sessions of one open store, as the agent reads and writes them."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self._queue: list[tuple[Any, ...]] = []
        self._queued = 0
        self._written = 0
        self._wake = anyio.Event()
        self._progress = anyio.Event()
        sql = database.sql
        self._insert = sql(
            "INSERT INTO session_events (session, seq, type, time, event) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (session, seq) DO NOTHING"
        )
        self._mark = sql(
            "INSERT INTO sessions (id, owner, turn) VALUES (?, ?, ?) ON CONFLICT (id) "
            "DO UPDATE SET owner = excluded.owner, turn = excluded.turn"
        )

    @property
    def where(self) -> str:
        return self.database.where

    # -- writing ---------------------------------------------------------------------------

    def append(self, session: str, seq: int, kind: str, time: str, line: str) -> None:
        """Queue one event (``line``: its JSON, as a log line holds it)."""
        self._put((self._insert, (session, seq, kind, time, line)))

    def running(self, session: str, turn: int | None) -> None:
        """Queue the mark that this process runs ``turn`` of ``session`` (None: no turn
        runs), in order with the events."""
        owner = "" if turn is None else self.database.owner
        self._put((self._mark, (session, owner, turn or 0)))

    def _put(self, item: tuple[Any, ...]) -> None:
        self._queue.append(item)
        self._queued += 1
        self._wake.set()

    async def flush(self) -> None:
        """Wait until every row queued so far is written (or its write failed, logged)."""
        target = self._queued
        while self._written < target:
            await self._progress.wait()

    async def write(self) -> None:
        """Write the queue, in order, until cancelled (the agent runs it while loaded)."""
        try:
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                await self._write_queued()
        finally:
            with anyio.CancelScope(shield=True):
                await self._write_queued()  # what was recorded before the unload

    async def _write_queued(self) -> None:
        while self._queue:
            batch, self._queue = self._queue, []

            def write(connection: Any, batch: list[tuple[Any, ...]] = batch) -> None:
                connection.execute("BEGIN")
                try:
                    for statement, values in batch:
                        connection.execute(statement, values)
                except BaseException:
                    connection.execute("ROLLBACK")
                    raise
                connection.execute("COMMIT")

            try:
                await self.database.run(write)
            except Exception:
                _log.exception(
                    "the store %s could not record %d session events", self.where, len(batch)
                )
            self._written += len(batch)
            progress, self._progress = self._progress, anyio.Event()
            progress.set()

    # -- reading ---------------------------------------------------------------------------
    # Each read is one query, run two ways: ``load``, ``exists``, ``ids``, ``outlines`` and
    # ``spoken`` block their caller (the agent's synchronous API, ``harness chat``, the CLI);
    # ``fetch``, ``has``, ``fetch_outlines`` and ``fetch_spoken`` await it (a worker thread on
    # PostgreSQL, as every other operation of the store), for the event loop's own readers.

    def load(self, session: str) -> list[dict[str, Any]] | None:
        """Every event of ``session``, in order; None when it has none."""
        return _events(self.database.run_now(self._events_of(session, 0)))

    async def fetch(self, session: str, after: int = 0) -> list[dict[str, Any]] | None:
        """The events of ``session`` after ``seq`` ``after``, in order, without blocking the
        event loop; None when there are none."""
        return _events(await self.database.run(self._events_of(session, after)))

    def _events_of(self, session: str, after: int) -> Any:
        select = self.database.sql(
            "SELECT event FROM session_events WHERE session = ? AND seq > ? ORDER BY seq"
        )
        return lambda connection: connection.execute(select, (session, after)).fetchall()

    def exists(self, session: str) -> bool:
        return self.database.run_now(self._one_of(session)) is not None

    async def has(self, session: str) -> bool:
        """Whether ``session`` has events, without blocking the event loop."""
        return await self.database.run(self._one_of(session)) is not None

    def _one_of(self, session: str) -> Any:
        select = self.database.sql("SELECT 1 FROM session_events WHERE session = ? LIMIT 1")
        return lambda connection: connection.execute(select, (session,)).fetchone()

    def ids(self) -> list[str]:
        """Every session with events, in id order (ids sort by their creation time)."""
        select = "SELECT DISTINCT session FROM session_events ORDER BY session"
        rows = self.database.run_now(lambda connection: connection.execute(select).fetchall())
        return [str(row[0]) for row in rows]

    def delete(self, session: str) -> bool:
        """Forget ``session``; whether it had events."""
        events = self.database.sql("DELETE FROM session_events WHERE session = ?")
        marks = self.database.sql("DELETE FROM sessions WHERE id = ?")

        def delete(connection: Any) -> int:
            count = int(connection.execute(events, (session,)).rowcount)
            connection.execute(marks, (session,))
            return count

        return bool(self.database.run_now(delete))

    def outlines(self) -> list[dict[str, Any]]:
        """Per session: ``{id, created, updated, turns, first, title}``, where ``first`` is
        its first ``turn/start`` event and ``title`` its last ``session/title`` event (None
        when it has none): what a listing of sessions needs, without reading every event."""
        return _outlines(*self.database.run_now(_read_outlines))

    async def fetch_outlines(self) -> list[dict[str, Any]]:
        """:meth:`outlines`, without blocking the event loop."""
        return _outlines(*await self.database.run(_read_outlines))

    def spoken(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(session, event)`` for every user message and model answer, for a search."""
        return _spoken(self.database.run_now(_read_spoken))

    async def fetch_spoken(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """:meth:`spoken`, without blocking the event loop."""
        return _spoken(await self.database.run(_read_spoken))

    # -- turns cut off -----------------------------------------------------------------------

    async def orphaned(self) -> list[str]:
        """The sessions whose turn's process is gone (another's, died): to be adopted."""
        select = self.database.sql(
            "SELECT id, owner FROM sessions WHERE owner <> '' AND owner <> ? ORDER BY id"
        )
        owner = self.database.owner
        rows = await self.database.run(
            lambda connection: connection.execute(select, (owner,)).fetchall()
        )
        alive: dict[str, bool] = {}
        found = []
        for session, other in rows:
            if other not in alive:
                alive[other] = await self.database.is_alive(other)
            if not alive[other]:
                found.append(str(session))
        return found

    async def adopt(self, session: str) -> bool | None:
        """Take over the turn of ``session`` when its process is gone (or is this one):
        True; False when a live process runs it; None when no turn of it is marked running
        (a log imported with a turn cut off)."""
        database = self.database
        select = database.sql("SELECT owner FROM sessions WHERE id = ?")
        row = await database.run(
            lambda connection: connection.execute(select, (session,)).fetchone()
        )
        owner = "" if row is None else str(row[0])
        if not owner:
            return None
        if owner == database.owner:
            return True
        if await database.is_alive(owner):
            return False
        update = database.sql("UPDATE sessions SET owner = ? WHERE id = ? AND owner = ?")
        values = (database.owner, session, owner)
        return bool(
            await database.run(lambda connection: connection.execute(update, values).rowcount)
        )

    # -- import ----------------------------------------------------------------------------

    async def insert(self, session: str, rows: list[tuple[int, str, str, str]]) -> int:
        """Add ``(seq, type, time, line)`` events to ``session`` unless it has that ``seq``
        already; how many were new."""
        insert = self._insert

        def write(connection: Any) -> int:
            added = 0
            connection.execute("BEGIN")
            try:
                for seq, kind, time, line in rows:
                    added += int(
                        connection.execute(insert, (session, seq, kind, time, line)).rowcount
                    )
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
            return added

        return await self.database.run(write)


def _events(rows: list[Any]) -> list[dict[str, Any]] | None:
    return [json.loads(row[0]) for row in rows] if rows else None


def _read_outlines(connection: Any) -> tuple[list[Any], list[Any]]:
    spans = (
        "SELECT session, min(time), max(time), "
        "sum(CASE WHEN type = 'turn/start' THEN 1 ELSE 0 END) "
        "FROM session_events GROUP BY session"
    )
    marked = (
        "SELECT session, type, event FROM session_events "
        "WHERE type IN ('turn/start', 'session/title') ORDER BY session, seq"
    )
    return connection.execute(spans).fetchall(), connection.execute(marked).fetchall()


def _outlines(rows: list[Any], events: list[Any]) -> list[dict[str, Any]]:
    outlines = {
        str(session): {
            "id": str(session),
            "created": created,
            "updated": updated,
            "turns": int(turns or 0),
            "first": None,
            "title": None,
        }
        for session, created, updated, turns in rows
    }
    for session, kind, line in events:
        outline = outlines.get(str(session))
        if outline is None:
            continue
        if kind == "session/title":
            outline["title"] = json.loads(line)
        elif outline["first"] is None:
            outline["first"] = json.loads(line)
    return list(outlines.values())


def _read_spoken(connection: Any) -> list[Any]:
    select = (
        f"SELECT session, event FROM session_events WHERE type IN {SPOKEN!r} ORDER BY session, seq"
    )
    return list(connection.execute(select).fetchall())


def _spoken(rows: list[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for session, line in rows:
        yield str(session), json.loads(line)
