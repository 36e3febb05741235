"""What the journal asks of a database, written once over the two dialects.

A :class:`Database` runs each operation as a function of one connection (one transaction):
:mod:`.sqlite` inline on the event loop while nothing else holds the file (a write is tens
of microseconds), :mod:`.postgres` on a pooled connection in a worker thread. Each process
that opens a store is an *owner*, alive for as long as it holds a lock the operating system
or the server releases when the process dies (``kill -9`` included): a call found
``started`` by an owner that is gone was cut off.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Row:
    """One journal entry."""

    tool: str
    digest: str
    """The call's arguments, as a digest: a key reused with other arguments is refused."""
    state: str
    """``started`` (its body may be running, or was cut off) or ``done``."""
    owner: str
    """The process that started it (or took it over); empty when its run was cancelled."""
    result: str | None
    """The result's JSON, once ``done``."""


def new_owner() -> str:
    """A fresh owner id: a positive 63-bit number (a PostgreSQL advisory lock's key)."""
    return str(secrets.randbits(63) or 1)


class Database:
    """The journal's operations over one store; :mod:`.sqlite` and :mod:`.postgres` give it
    connections (:meth:`run`), placeholders (:attr:`mark`) and owner locks."""

    where: str
    """The store as people name it (a path, or the URL without its password)."""
    owner: str
    """This process's owner id while the store is open."""
    mark = "?"
    """The dialect's query placeholder."""

    async def run(self, operation: Callable[[Any], T]) -> T:
        """``operation(connection)`` as one transaction."""
        raise NotImplementedError

    def run_now(self, operation: Callable[[Any], T]) -> T:
        """``operation(connection)`` as one transaction, blocking the caller: for the few
        reads a synchronous API makes (a session's events), each one short query."""
        raise NotImplementedError

    async def is_alive(self, owner: str) -> bool:
        """Whether the process ``owner`` still holds the store (True for this one)."""
        raise NotImplementedError

    async def close(self) -> None:
        """Release the owner lock and the connections."""
        raise NotImplementedError

    def sql(self, text: str) -> str:
        return text if self.mark == "?" else text.replace("?", self.mark)

    # -- the journal -----------------------------------------------------------------------

    async def claim(self, key: str, tool: str, digest: str) -> Row | None:
        """Record ``key`` as started by this owner; None when it is new, else its row."""
        insert = self.sql(
            "INSERT INTO journal (key, tool, digest, state, owner, started_at) "
            "VALUES (?, ?, ?, 'started', ?, ?) ON CONFLICT (key) DO NOTHING"
        )
        select = self.sql("SELECT tool, digest, state, owner, result FROM journal WHERE key = ?")
        values = (key, tool, digest, self.owner, time.time())

        def claim(connection: Any) -> Row | None:
            if connection.execute(insert, values).rowcount == 1:
                return None
            found = connection.execute(select, (key,)).fetchone()
            return None if found is None else Row(*found)

        return await self.run(claim)

    async def row(self, key: str) -> Row | None:
        select = self.sql("SELECT tool, digest, state, owner, result FROM journal WHERE key = ?")

        def read(connection: Any) -> Row | None:
            found = connection.execute(select, (key,)).fetchone()
            return None if found is None else Row(*found)

        return await self.run(read)

    async def finish(self, key: str, result: str) -> None:
        """Record this owner's run of ``key`` as done with ``result`` (JSON)."""
        update = self.sql(
            "UPDATE journal SET state = 'done', result = ?, done_at = ? "
            "WHERE key = ? AND owner = ? AND state = 'started'"
        )
        values = (result, time.time(), key, self.owner)
        await self.run(lambda connection: connection.execute(update, values))

    async def release(self, key: str) -> None:
        """Leave this owner's run of ``key`` started but owned by nobody: its body was cut off
        (cancelled), so a repeat is answered as for a process that died."""
        update = self.sql(
            "UPDATE journal SET owner = '' WHERE key = ? AND owner = ? AND state = 'started'"
        )
        values = (key, self.owner)
        await self.run(lambda connection: connection.execute(update, values))

    async def forget(self, key: str) -> None:
        """Drop this owner's started run of ``key``: it ended a round asking for input, so
        the next round runs the call as new."""
        delete = self.sql("DELETE FROM journal WHERE key = ? AND owner = ? AND state = 'started'")
        values = (key, self.owner)
        await self.run(lambda connection: connection.execute(delete, values))

    async def settle(self, key: str, gone: str, result: str | None) -> bool:
        """Resolve ``key``, started by the owner ``gone`` that is dead: done with ``result``,
        or (None) taken over by this owner to run again. False when another process
        resolved it first."""
        if result is None:
            text = (
                "UPDATE journal SET owner = ?, attempt = attempt + 1, started_at = ? "
                "WHERE key = ? AND owner = ? AND state = 'started'"
            )
            values: tuple[Any, ...] = (self.owner, time.time(), key, gone)
        else:
            text = (
                "UPDATE journal SET state = 'done', result = ?, done_at = ? "
                "WHERE key = ? AND owner = ? AND state = 'started'"
            )
            values = (result, time.time(), key, gone)
        update = self.sql(text)
        return bool(await self.run(lambda connection: connection.execute(update, values).rowcount))

    # -- pending approvals ---------------------------------------------------------------

    async def keep_approval(self, fields: dict[str, Any]) -> None:
        """Remember an open approval request of a keyed call (``fields``: its id, key,
        tool, args as JSON, reason, session, client), owned by this process."""
        insert = self.sql(
            "INSERT INTO approvals (id, key, tool, args, reason, session, client, owner, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING"
        )
        names = ("id", "key", "tool", "args", "reason", "session", "client")
        values = (*(fields[name] for name in names), self.owner, time.time())
        await self.run(lambda connection: connection.execute(insert, values))

    async def drop_approval(self, id: str) -> None:
        delete = self.sql("DELETE FROM approvals WHERE id = ?")
        await self.run(lambda connection: connection.execute(delete, (id,)))

    async def adopt_approvals(self) -> list[dict[str, Any]]:
        """The open requests of processes that died, now this one's (oldest first); each
        is adopted by one process only."""
        select = self.sql(
            "SELECT id, key, tool, args, reason, session, client, owner FROM approvals "
            "ORDER BY created_at"
        )
        update = self.sql("UPDATE approvals SET owner = ? WHERE id = ? AND owner = ?")

        def adopt(values: tuple[str, str, str]) -> Callable[[Any], int]:
            return lambda connection: int(connection.execute(update, values).rowcount)

        rows = await self.run(lambda connection: connection.execute(select).fetchall())
        alive: dict[str, bool] = {}
        adopted: list[dict[str, Any]] = []
        for id, key, tool, args, reason, session, client, owner in rows:
            if owner not in alive:
                alive[owner] = owner == self.owner or await self.is_alive(owner)
            if alive[owner]:
                continue
            if await self.run(adopt((self.owner, id, owner))):
                names = ("id", "key", "tool", "args", "reason", "session", "client")
                adopted.append(
                    dict(zip(names, (id, key, tool, args, reason, session, client), strict=True))
                )
        return adopted

    # -- paused programs -----------------------------------------------------------------

    async def keep_program(self, key: str, state: str, snapshot: bytes, paused_at: float) -> None:
        """Keep (or replace) the paused ``run_code`` program of the call ``key``: its
        ``state`` (JSON) and Monty ``snapshot``, owned by this process."""
        upsert = self.sql(
            "INSERT INTO programs (key, state, snapshot, owner, paused_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (key) DO UPDATE SET state = excluded.state, snapshot = "
            "excluded.snapshot, owner = excluded.owner, paused_at = excluded.paused_at"
        )
        values = (key, state, snapshot, self.owner, paused_at)
        await self.run(lambda connection: connection.execute(upsert, values))

    async def drop_program(self, key: str) -> None:
        """Forget the paused program of ``key`` (it runs again, ended, or was given up)."""
        delete = self.sql("DELETE FROM programs WHERE key = ?")
        await self.run(lambda connection: connection.execute(delete, (key,)))

    async def adopt_programs(self, key: str | None = None) -> list[dict[str, Any]]:
        """The paused programs of processes that died (only ``key``'s, when given), now this
        one's, oldest pause first: ``{key, state, snapshot, paused_at, gone}`` (``gone``: the
        dead owner). Each is adopted by one process only."""
        where = "" if key is None else " WHERE key = ?"
        select = self.sql(
            f"SELECT key, state, snapshot, owner, paused_at FROM programs{where} ORDER BY paused_at"
        )
        update = self.sql("UPDATE programs SET owner = ? WHERE key = ? AND owner = ?")
        chosen = () if key is None else (key,)

        def adopt(values: tuple[str, str, str]) -> Callable[[Any], int]:
            return lambda connection: int(connection.execute(update, values).rowcount)

        rows = await self.run(lambda connection: connection.execute(select, chosen).fetchall())
        alive: dict[str, bool] = {}
        adopted: list[dict[str, Any]] = []
        for found, state, snapshot, owner, paused_at in rows:
            if owner not in alive:
                alive[owner] = owner == self.owner or await self.is_alive(owner)
            if alive[owner]:
                continue
            if await self.run(adopt((self.owner, found, owner))):
                adopted.append(
                    {
                        "key": found,
                        "state": state,
                        "snapshot": bytes(snapshot),
                        "paused_at": float(paused_at),
                        "gone": owner,
                    }
                )
        return adopted

    # -- secrets -------------------------------------------------------------------------

    async def secret(self, name: str) -> str | None:
        """The secret kept under ``name`` (an MCP entry's OAuth tokens), or None."""
        select = self.sql("SELECT value FROM secrets WHERE name = ?")
        found = await self.run(lambda connection: connection.execute(select, (name,)).fetchone())
        return None if found is None else str(found[0])

    async def keep_secret(self, name: str, value: str) -> None:
        """Keep ``value`` under ``name``, replacing what was there."""
        upsert = self.sql(
            "INSERT INTO secrets (name, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) "
            "DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"
        )
        values = (name, value, time.time())
        await self.run(lambda connection: connection.execute(upsert, values))
        await self.protect()

    async def protect(self) -> None:
        """Make what holds the secrets readable by its owner only, where that is a file."""

    async def prune(self, days: float) -> int:
        """Forget calls finished more than ``days`` ago; how many."""
        delete = self.sql("DELETE FROM journal WHERE state = 'done' AND done_at < ?")
        cutoff = time.time() - days * 86400
        return int(
            await self.run(lambda connection: connection.execute(delete, (cutoff,)).rowcount)
        )
