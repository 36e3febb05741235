"""The store's tables, as versioned migrations: one list per SQL dialect, applied in order.

A store remembers the version it was written at (``harness_schema``). Opening it applies
the migrations it lacks, in one transaction; a store written by a newer harness (a version
this one does not know) is refused rather than misread.
"""

from __future__ import annotations

from ..errors import ConfigError

SQLITE: tuple[tuple[str, ...], ...] = (
    (  # 1: the call journal
        """CREATE TABLE journal (
            key TEXT PRIMARY KEY,
            tool TEXT NOT NULL,
            digest TEXT NOT NULL,
            state TEXT NOT NULL,
            owner TEXT NOT NULL,
            attempt INTEGER NOT NULL DEFAULT 1,
            result TEXT,
            started_at REAL NOT NULL,
            done_at REAL
        )""",
        "CREATE INDEX journal_done_at ON journal (done_at)",
    ),
    (  # 2: pending approvals of keyed calls
        """CREATE TABLE approvals (
            id TEXT PRIMARY KEY,
            key TEXT NOT NULL,
            tool TEXT NOT NULL,
            args TEXT NOT NULL,
            reason TEXT NOT NULL,
            session TEXT,
            client TEXT,
            owner TEXT NOT NULL,
            created_at REAL NOT NULL
        )""",
    ),
    (  # 3: secrets (an MCP entry's OAuth tokens)
        """CREATE TABLE secrets (
            name TEXT PRIMARY KEY,
            value TEXT NOT NULL,
            updated_at REAL NOT NULL
        )""",
    ),
    (  # 4: MCP tasks (the io.modelcontextprotocol/tasks extension)
        """CREATE TABLE tasks (
            id TEXT PRIMARY KEY,
            tool TEXT NOT NULL,
            status TEXT NOT NULL,
            owner TEXT NOT NULL,
            client TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            ttl_ms INTEGER,
            expires_at REAL,
            cancel_requested INTEGER NOT NULL DEFAULT 0,
            message TEXT,
            result TEXT,
            error TEXT,
            input_requests TEXT,
            input_responses TEXT
        )""",
        "CREATE INDEX tasks_expires_at ON tasks (expires_at)",
    ),
    (  # 5: agent sessions' events (agent.sessions: a store URL) and who runs their turns
        """CREATE TABLE session_events (
            session TEXT NOT NULL,
            seq INTEGER NOT NULL,
            type TEXT NOT NULL,
            time TEXT NOT NULL,
            event TEXT NOT NULL,
            PRIMARY KEY (session, seq)
        )""",
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            turn INTEGER NOT NULL
        )""",
    ),
    (  # 6: run_code programs paused on an approval (harness.code)
        """CREATE TABLE programs (
            key TEXT PRIMARY KEY,
            state TEXT NOT NULL,
            snapshot BLOB NOT NULL,
            owner TEXT NOT NULL,
            paused_at REAL NOT NULL
        )""",
    ),
)
"""SQLite's migrations: ``SQLITE[n]`` takes a store from version n to n + 1."""

POSTGRES: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE journal (
            key TEXT PRIMARY KEY,
            tool TEXT NOT NULL,
            digest TEXT NOT NULL,
            state TEXT NOT NULL,
            owner TEXT NOT NULL,
            attempt INTEGER NOT NULL DEFAULT 1,
            result TEXT,
            started_at DOUBLE PRECISION NOT NULL,
            done_at DOUBLE PRECISION
        )""",
        "CREATE INDEX journal_done_at ON journal (done_at)",
    ),
    (
        """CREATE TABLE approvals (
            id TEXT PRIMARY KEY,
            key TEXT NOT NULL,
            tool TEXT NOT NULL,
            args TEXT NOT NULL,
            reason TEXT NOT NULL,
            session TEXT,
            client TEXT,
            owner TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL
        )""",
    ),
    (
        """CREATE TABLE secrets (
            name TEXT PRIMARY KEY,
            value TEXT NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL
        )""",
    ),
    (
        """CREATE TABLE tasks (
            id TEXT PRIMARY KEY,
            tool TEXT NOT NULL,
            status TEXT NOT NULL,
            owner TEXT NOT NULL,
            client TEXT,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            ttl_ms INTEGER,
            expires_at DOUBLE PRECISION,
            cancel_requested INTEGER NOT NULL DEFAULT 0,
            message TEXT,
            result TEXT,
            error TEXT,
            input_requests TEXT,
            input_responses TEXT
        )""",
        "CREATE INDEX tasks_expires_at ON tasks (expires_at)",
    ),
    (
        """CREATE TABLE session_events (
            session TEXT NOT NULL,
            seq BIGINT NOT NULL,
            type TEXT NOT NULL,
            time TEXT NOT NULL,
            event TEXT NOT NULL,
            PRIMARY KEY (session, seq)
        )""",
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            turn INTEGER NOT NULL
        )""",
    ),
    (
        """CREATE TABLE programs (
            key TEXT PRIMARY KEY,
            state TEXT NOT NULL,
            snapshot BYTEA NOT NULL,
            owner TEXT NOT NULL,
            paused_at DOUBLE PRECISION NOT NULL
        )""",
    ),
)
"""PostgreSQL's migrations, version for version the same tables as :data:`SQLITE`."""

VERSION = len(SQLITE)
"""The schema version this harness writes."""
assert len(POSTGRES) == VERSION

CREATE_VERSION_TABLE = "CREATE TABLE IF NOT EXISTS harness_schema (version INTEGER NOT NULL)"


class StoreError(ConfigError):
    """Raised when the store cannot be opened: unreachable, locked, or of a newer version."""


def pending(found: int | None, where: str) -> range:
    """The migrations a store at version ``found`` (None: new) needs, by index; refuses a
    store of a newer version."""
    version = found or 0
    if version > VERSION:
        raise StoreError(
            f"the store {where} was written by a newer harness (schema version {version}; "
            f"this one knows versions up to {VERSION}): upgrade harness, or set url to "
            "another store"
        )
    return range(version, VERSION)
