"""The store in PostgreSQL (``url: postgresql://...``), which replicas share.

Operations run on a pooled connection (psycopg, ``psycopg_pool``) in a worker thread, so the
store works the same under asyncio and trio. An owner holds a session-level advisory lock
keyed by its id on a connection of its own; the server drops it when that connection ends,
which it does when the process dies. The schema is migrated under a transaction-level
advisory lock, so replicas starting together migrate it once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

from .database import Database, new_owner
from .schema import CREATE_VERSION_TABLE, POSTGRES, StoreError, pending

T = TypeVar("T")
MIGRATION_LOCK = 0x6861726E657373  # "harness": the advisory lock a schema migration holds
POOL_SIZE = 8


class PostgresDatabase(Database):
    """One PostgreSQL store, opened by :meth:`open`."""

    mark = "%s"

    def __init__(self, url: str, pool: Any, holder: Any) -> None:
        self.where = shown(url)
        self.owner = new_owner()
        self._pool = pool
        self._holder = holder
        """The connection that holds this owner's advisory lock."""

    @classmethod
    async def open(cls, url: str, lock_timeout: float) -> PostgresDatabase:
        """Connect, migrate, take the owner lock."""
        return await anyio.to_thread.run_sync(cls._open, url, lock_timeout)

    @classmethod
    def _open(cls, url: str, lock_timeout: float) -> PostgresDatabase:
        try:
            import psycopg
            import psycopg_pool
        except ImportError:
            raise StoreError(
                "a postgresql:// store needs psycopg and psycopg-pool, which are not "
                "installed: pip install 'cordis-harness[postgres]'"
            ) from None
        timeout = max(1, round(lock_timeout))
        try:
            holder = psycopg.connect(url, autocommit=True, connect_timeout=timeout)
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot reach the store {shown(url)}: {_first_line(exc)}; start the "
                "database, or fix url"
            ) from None
        try:
            _migrate(holder, shown(url), lock_timeout)
            database = cls(url, None, holder)
            holder.execute("SELECT pg_advisory_lock(%s)", (int(database.owner),))
            pool = psycopg_pool.ConnectionPool(
                url, min_size=1, max_size=POOL_SIZE, open=False, kwargs={"autocommit": True}
            )
            pool.open(wait=True, timeout=max(lock_timeout, 1.0))
        except psycopg.errors.LockNotAvailable:
            holder.close()
            raise StoreError(
                f"the store {shown(url)} is locked: another replica is migrating its schema "
                f"(waited {lock_timeout:g} s); start again once it is up, or raise lock_timeout"
            ) from None
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            holder.close()
            raise StoreError(f"the store {shown(url)} cannot be used: {_first_line(exc)}") from None
        except BaseException:
            holder.close()
            raise
        database._pool = pool
        return database

    async def run(self, operation: Callable[[Any], T]) -> T:
        return await anyio.to_thread.run_sync(self._in_thread, operation)

    def run_now(self, operation: Callable[[Any], T]) -> T:
        return self._in_thread(operation)

    def _in_thread(self, operation: Callable[[Any], T]) -> T:
        with self._pool.connection() as connection:  # autocommit: a statement is a transaction
            return operation(connection)

    async def is_alive(self, owner: str) -> bool:
        if owner == self.owner:
            return True
        key = int(owner)

        def probe(connection: Any) -> bool:
            free = connection.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]
            if free:  # nobody holds it: the owner is gone; give the lock back at once
                connection.execute("SELECT pg_advisory_unlock(%s)", (key,))
            return not free

        return await self.run(probe)

    async def close(self) -> None:
        await anyio.to_thread.run_sync(self._close)

    def _close(self) -> None:
        self._pool.close()
        self._holder.close()


def _migrate(connection: Any, where: str, lock_timeout: float) -> None:
    with connection.transaction():
        connection.execute(f"SET LOCAL lock_timeout = {max(1, int(lock_timeout * 1000))}")
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        connection.execute(CREATE_VERSION_TABLE)
        found = connection.execute("SELECT max(version) FROM harness_schema").fetchone()[0]
        steps = pending(found, where)
        for step in steps:
            for statement in POSTGRES[step]:
                connection.execute(statement)
        if steps:
            connection.execute("DELETE FROM harness_schema")
            connection.execute("INSERT INTO harness_schema VALUES (%s)", (steps.stop,))


def shown(url: str) -> str:
    """``url`` without its password."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
