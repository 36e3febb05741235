"""MCP tasks kept in the store, so that any replica sharing it answers them (``store.tasks``).

The process that runs a task's body (its *owner*) writes the task's row as it goes: created,
its status message, the input requests it waits on, and once the body ends its result or
error. ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` on any process read and write the
row: an update adds answers to ``input_responses`` (for the keys ``input_requests`` holds), a
cancel sets ``cancelled`` and ``cancel_requested``; the owner sees both by watching its
running tasks' rows (:meth:`StoredTasks.watch`) and delivers them to the body. A row whose
status is not terminal while its owner is dead (``kill -9``, a restart) is answered
``failed`` with the ``interrupted`` message, and recorded so by whichever process sees it
first. A row past its ``expires_at`` is gone (removed when a task is created). A task is
created only while the store keeps fewer than the MCP side's limit.

Writes that merge JSON into a column (input requests and answers) compare the column with
what they read in the same statement and try again when another process changed it first.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

from .database import Database

__all__ = ["INTERRUPTED", "TERMINAL", "StoredTasks"]

TERMINAL = ("completed", "failed", "cancelled")
INTERRUPTED = "the host stopped while this task ran; it may or may not have taken effect"
INTERNAL_ERROR = -32603
COLUMNS = (
    "id, tool, status, owner, client, created_at, updated_at, ttl_ms, expires_at, "
    "cancel_requested, message, result, error, input_requests, input_responses"
)
LIVE = "status NOT IN ('completed', 'failed', 'cancelled')"


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def _fields(row: tuple[Any, ...]) -> dict[str, Any]:
    """A row as the MCP side reads a task (JSON columns parsed)."""
    (id, tool, status, owner, client, created, updated, ttl_ms, expires, cancel, message) = row[:11]
    return {
        "id": id,
        "tool": tool,
        "status": status,
        "owner": owner,
        "client": client,
        "created_at": float(created),
        "updated_at": float(updated),
        "ttl_ms": ttl_ms,
        "expires_at": None if expires is None else float(expires),
        "cancel_requested": bool(cancel),
        "message": message,
        "result": _loads(row[11]),
        "error": _loads(row[12]),
        "requests": _loads(row[13]) or {},
        "responses": _loads(row[14]) or {},
        "requests_text": row[13] or "",
        "responses_text": row[14] or "",
    }


class StoredTasks:
    """The tasks of one open store (see the module)."""

    def __init__(self, database: Database) -> None:
        self.database = database

    @property
    def owner(self) -> str:
        return self.database.owner

    async def _one(self, id: str) -> dict[str, Any] | None:
        select = self.database.sql(f"SELECT {COLUMNS} FROM tasks WHERE id = ?")
        row = await self.database.run(lambda c: c.execute(select, (id,)).fetchone())
        return None if row is None else _fields(row)

    async def _write(self, text: str, values: tuple[Any, ...]) -> int:
        statement = self.database.sql(text)
        return int(await self.database.run(lambda c: c.execute(statement, values).rowcount))

    # -- the owner's writes ----------------------------------------------------------------

    async def create(
        self,
        id: str,
        tool: str,
        client: str | None,
        at: float,
        ttl_ms: int,
        limit: int | None = None,
    ) -> bool:
        """Record a new ``working`` task run by this process (and forget expired ones);
        False, recording nothing, when the store keeps ``limit`` tasks already (None: no
        limit; on PostgreSQL, replicas creating tasks at the same moment may pass it by a
        few)."""
        await self.purge()
        count = self.database.sql("SELECT COUNT(*) FROM tasks")
        insert = self.database.sql(
            f"INSERT INTO tasks ({COLUMNS}) VALUES "
            "(?, ?, 'working', ?, ?, ?, ?, ?, ?, 0, NULL, NULL, NULL, NULL, NULL)"
        )
        values = (id, tool, self.owner, client, at, at, ttl_ms, at + ttl_ms / 1000)

        def create(connection: Any) -> bool:
            if limit is not None and connection.execute(count).fetchone()[0] >= limit:
                return False
            connection.execute(insert, values)
            return True

        return await self.database.run(create)

    async def save(
        self,
        id: str,
        status: str | None,
        message: str | None,
        result: Any = None,
        error: Any = None,
    ) -> bool:
        """This owner's write of a task's ``status`` (None: unchanged) and message; a
        terminal status with its result or error, its requests and answers cleared. Never
        over a terminal status (a cancel from elsewhere wins); whether it was written."""
        sets = "message = ?, updated_at = ?"
        values: tuple[Any, ...] = (message, time.time())
        if status is not None:
            sets += ", status = ?"
            values += (status,)
        if status in TERMINAL:
            sets += ", result = ?, error = ?, input_requests = NULL, input_responses = NULL"
            values += (_dumps(result), _dumps(error))
        return bool(
            await self._write(
                f"UPDATE tasks SET {sets} WHERE id = ? AND owner = ? AND {LIVE}",
                (*values, id, self.owner),
            )
        )

    async def ask(self, id: str, requests: dict[str, Any]) -> bool:
        """Add ``requests`` (by key, on the wire) to what the task waits on, now
        ``input_required``; False when the task ended meanwhile (cancelled elsewhere)."""
        while True:
            row = await self._one(id)
            if row is None or row["status"] in TERMINAL:
                return False
            merged = {**row["requests"], **requests}
            if await self._write(
                "UPDATE tasks SET input_requests = ?, status = 'input_required', updated_at = ? "
                f"WHERE id = ? AND {LIVE} AND COALESCE(input_requests, '') = ?",
                (_dumps(merged), time.time(), id, row["requests_text"]),
            ):
                return True

    async def take_answers(self, id: str, keys: Iterable[str]) -> dict[str, Any]:
        """The answers given so far to ``keys``, removed from the row."""
        wanted = set(keys)
        while True:
            row = await self._one(id)
            if row is None:
                return {}
            answers = {key: value for key, value in row["responses"].items() if key in wanted}
            if not answers:
                return {}
            left = {key: value for key, value in row["responses"].items() if key not in wanted}
            if await self._write(
                "UPDATE tasks SET input_responses = ? "
                "WHERE id = ? AND COALESCE(input_responses, '') = ?",
                (_dumps(left or None), id, row["responses_text"]),
            ):
                return answers

    async def watch(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """What the owner needs of its running tasks' rows, by id: ``status``,
        ``cancel_requested``, ``answered`` (answers wait), ``expires_at``. A task missing
        from the answer is gone (expired)."""
        chosen = list(ids)
        if not chosen:
            return {}
        marks = ", ".join("?" * len(chosen))
        select = self.database.sql(
            "SELECT id, status, cancel_requested, input_responses, expires_at FROM tasks "
            f"WHERE id IN ({marks})"
        )
        rows = await self.database.run(lambda c: c.execute(select, tuple(chosen)).fetchall())
        return {
            id: {
                "status": status,
                "cancel_requested": bool(cancel),
                "answered": bool(responses),
                "expires_at": None if expires is None else float(expires),
            }
            for id, status, cancel, responses, expires in rows
        }

    # -- any process ---------------------------------------------------------------------

    async def get(self, id: str) -> dict[str, Any] | None:
        """The task ``id`` (None: unknown or expired); a running one whose owner died is
        recorded ``failed`` (interrupted) first."""
        row = await self._one(id)
        if row is None or _expired(row, time.time()):
            return None
        if row["status"] in TERMINAL or row["owner"] == self.owner:
            return row
        if await self.database.is_alive(row["owner"]):
            return row
        await self._interrupt(row)
        return await self._one(id)

    async def _interrupt(self, row: dict[str, Any]) -> None:
        error = {"code": INTERNAL_ERROR, "message": f"interrupted: {INTERRUPTED}"}
        await self._write(
            "UPDATE tasks SET status = 'failed', error = ?, message = NULL, "
            "input_requests = NULL, input_responses = NULL, updated_at = ? "
            f"WHERE id = ? AND owner = ? AND {LIVE}",
            (_dumps(error), time.time(), row["id"], row["owner"]),
        )

    async def answer(self, id: str, responses: dict[str, Any]) -> bool:
        """Deliver ``responses`` for the keys the task waits on (others are ignored);
        whether any was taken."""
        while True:
            row = await self._one(id)
            if row is None:
                return False
            requests = row["requests"]
            taken = {
                key: value
                for key, value in responses.items()
                if key in requests and isinstance(value, dict)
            }
            if not taken:
                return False
            left = {key: value for key, value in requests.items() if key not in taken}
            if await self._write(
                "UPDATE tasks SET input_requests = ?, input_responses = ?, updated_at = ? "
                "WHERE id = ? AND COALESCE(input_requests, '') = ? "
                "AND COALESCE(input_responses, '') = ?",
                (
                    _dumps(left or None),
                    _dumps({**row["responses"], **taken}),
                    time.time(),
                    id,
                    row["requests_text"],
                    row["responses_text"],
                ),
            ):
                return True

    async def cancel(self, id: str) -> bool:
        """Mark a running task ``cancelled`` (its owner cancels the body when it sees it);
        whether it was running."""
        return bool(
            await self._write(
                "UPDATE tasks SET status = 'cancelled', cancel_requested = 1, "
                "input_requests = NULL, input_responses = NULL, updated_at = ? "
                f"WHERE id = ? AND {LIVE}",
                (time.time(), id),
            )
        )

    async def listing(self, terminal: bool = False) -> list[dict[str, Any]]:
        """The tasks not expired, oldest first; only running ones unless ``terminal``. A
        running task whose owner died is recorded ``failed`` (and shown so, when
        ``terminal``)."""
        where = "" if terminal else f" WHERE {LIVE}"
        select = self.database.sql(f"SELECT {COLUMNS} FROM tasks{where} ORDER BY created_at")
        rows = await self.database.run(lambda c: c.execute(select).fetchall())
        now = time.time()
        alive: dict[str, bool] = {}
        listed: list[dict[str, Any]] = []
        for row in map(_fields, rows):
            if _expired(row, now):
                continue
            owner = row["owner"]
            if row["status"] not in TERMINAL:
                if owner not in alive:
                    alive[owner] = await self.database.is_alive(owner)
                if not alive[owner]:
                    await self._interrupt(row)
                    found = await self._one(row["id"])
                    if found is None or (found["status"] in TERMINAL and not terminal):
                        continue
                    row = found
            listed.append(row)
        return listed

    async def purge(self) -> int:
        """Forget the tasks past their ``expires_at``; how many."""
        return await self._write("DELETE FROM tasks WHERE expires_at < ?", (time.time(),))


def _expired(row: dict[str, Any], now: float) -> bool:
    expires: float | None = row["expires_at"]
    return expires is not None and now > expires
