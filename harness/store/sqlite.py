"""The store in an SQLite file (the default: ``sqlite:///.harness/harness.db``).

Writes run inline on the event loop: in WAL mode with ``synchronous=NORMAL`` a commit is a
write to the log file, without an fsync (a few tens of microseconds), and it survives the
process being killed, not the machine losing power. When another process holds the file's
write lock (``harness call`` beside ``harness run``), the operation waits for it in a worker
thread instead, so the event loop never blocks on it.

An owner holds an exclusive ``flock`` on its own file under ``<store>.owners/`` for as long
as the store is open; the kernel drops it when the process dies, however it dies.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TypeVar

import anyio

from .database import Database, new_owner
from .schema import CREATE_VERSION_TABLE, SQLITE, StoreError, pending

T = TypeVar("T")
WAIT_MS = 10_000
"""How long an operation waits for another process's write, in its worker thread."""


class SqliteDatabase(Database):
    """One SQLite store, opened by :meth:`open`."""

    def __init__(self, path: Path, fast: sqlite3.Connection, slow: sqlite3.Connection) -> None:
        self.path = path
        self.where = str(path)
        self._fast = fast
        self._slow = slow
        self._slow_lock = threading.Lock()
        self.owner = new_owner()
        self._owners = path.with_name(path.name + ".owners")
        self._lock: IO[bytes] | None = None

    @classmethod
    async def open(cls, path: Path, lock_timeout: float) -> SqliteDatabase:
        """Open (creating it and its folder) and migrate the store at ``path``."""
        return await anyio.to_thread.run_sync(cls._open, path, lock_timeout)

    @classmethod
    def _open(cls, path: Path, lock_timeout: float) -> SqliteDatabase:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fast = _connect(path, lock_timeout)
            slow = _connect(path, WAIT_MS / 1000)
        except (OSError, sqlite3.Error) as exc:
            raise _explained(exc, path, lock_timeout) from None
        database = cls(path, fast, slow)
        try:
            database._migrate()
            database._hold()
        except (OSError, sqlite3.Error) as exc:
            fast.close()
            slow.close()
            raise _explained(exc, path, lock_timeout) from None
        except BaseException:
            fast.close()
            slow.close()
            raise
        fast.execute("PRAGMA busy_timeout = 0")  # busy: the operation moves to a thread
        return database

    def _migrate(self) -> None:
        connection = self._fast
        connection.execute("BEGIN IMMEDIATE")
        try:
            connection.execute(CREATE_VERSION_TABLE)
            found = connection.execute("SELECT max(version) FROM harness_schema").fetchone()[0]
            steps = pending(found, self.where)
            for step in steps:
                for statement in SQLITE[step]:
                    connection.execute(statement)
            if steps:
                connection.execute("DELETE FROM harness_schema")
                connection.execute("INSERT INTO harness_schema VALUES (?)", (steps.stop,))
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise

    def _hold(self) -> None:
        self._owners.mkdir(exist_ok=True)
        for stale in self._owners.glob("*.lock"):  # the locks of processes that died
            _tidy(stale)
        # locked under a name no one looks at, then named: never seen unlocked (a tidy by
        # another process would take an unlocked file for a dead owner's)
        making = self._owners / f"{self.owner}.making"
        lock = making.open("wb")
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        making.rename(self._owners / f"{self.owner}.lock")
        self._lock = lock

    async def run(self, operation: Callable[[Any], T]) -> T:
        try:
            return operation(self._fast)
        except sqlite3.OperationalError as exc:
            if not _busy(exc):
                raise
        return await anyio.to_thread.run_sync(self._waiting, operation)

    def run_now(self, operation: Callable[[Any], T]) -> T:
        try:
            return operation(self._fast)
        except sqlite3.OperationalError as exc:
            if not _busy(exc):
                raise
        return self._waiting(operation)

    def _waiting(self, operation: Callable[[Any], T]) -> T:
        with self._slow_lock:
            return operation(self._slow)

    async def is_alive(self, owner: str) -> bool:
        if owner == self.owner:
            return True
        return not _tidy(self._owners / f"{owner}.lock")

    async def protect(self) -> None:
        for suffix in ("", "-wal", "-shm"):  # a secret is in the journal files too
            with contextlib.suppress(FileNotFoundError):
                self.path.with_name(self.path.name + suffix).chmod(0o600)

    async def close(self) -> None:
        self._fast.close()
        with self._slow_lock:
            self._slow.close()
        if self._lock is not None:
            lock, self._lock = self._lock, None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._owners / f"{self.owner}.lock")
            lock.close()


def _tidy(file: Path) -> bool:
    """Remove an owner's lock file if its process is gone; whether it is (or was) gone."""
    try:
        handle = file.open("rb")
    except FileNotFoundError:
        return True
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        with contextlib.suppress(FileNotFoundError):
            file.unlink()  # its owner is gone for good
        return True


def _connect(path: Path, timeout: float) -> sqlite3.Connection:
    connection = sqlite3.connect(
        path, timeout=timeout, isolation_level=None, check_same_thread=False
    )
    try:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
    except BaseException:
        connection.close()
        raise
    return connection


def _busy(exc: sqlite3.OperationalError) -> bool:
    return getattr(exc, "sqlite_errorcode", None) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _explained(exc: BaseException, path: Path, lock_timeout: float) -> StoreError:
    """Why the store at ``path`` cannot be opened, and what to do."""
    if isinstance(exc, sqlite3.OperationalError) and _busy(exc):
        return StoreError(
            f"the store {path} is locked by another process (waited {lock_timeout:g} s): "
            "let it finish or stop it, raise lock_timeout, or set url to another file"
        )
    if isinstance(exc, sqlite3.DatabaseError) and "not a database" in str(exc):
        return StoreError(
            f"{path} is not an SQLite database: move it away, or set url to another file"
        )
    if isinstance(exc, BlockingIOError):
        return StoreError(f"the store {path} could not take its owner lock: {exc}")
    return StoreError(f"the store {path} cannot be opened: {exc}; check the path and its rights")
