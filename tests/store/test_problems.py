"""A store that cannot be used at start is a located problem of its entry (``harness check``):
locked by another process, written by a newer harness, or a PostgreSQL nobody answers at."""

from __future__ import annotations

import json
import socket
import sqlite3
from pathlib import Path

from harness.store.schema import VERSION

from ..helpers import run_harness, write


def project(folder: Path, url: str) -> Path:
    return write(
        folder / "cordis.yml",
        f"""
        insert:
          - id: tools
            name: harness:tools
          - id: store
            name: harness:store
            config:
              url: {url}
              lock_timeout: 0.2
        """,
    )


def problems(folder: Path) -> list[dict[str, object]]:
    checked = run_harness("check", "--json", cwd=folder)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    return list(json.loads(checked.stdout)["problems"])


def test_a_locked_store_is_a_problem_at_its_entry(tmp_path: Path) -> None:
    config = project(tmp_path, "sqlite:///.harness/harness.db")
    (tmp_path / ".harness").mkdir()
    holder = sqlite3.connect(tmp_path / ".harness" / "harness.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process in the middle of a write
    try:
        found = problems(tmp_path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert found == [
        {
            "file": str(config),
            "line": 6,
            "entry": "store",
            "message": f"the store {tmp_path / '.harness' / 'harness.db'} is locked by another "
            "process (waited 0.2 s): let it finish or stop it, raise lock_timeout, or set url "
            "to another file",
        }
    ]


def test_a_store_of_a_newer_harness_is_a_problem_at_its_entry(tmp_path: Path) -> None:
    config = project(tmp_path, "sqlite:///newer.db")
    with sqlite3.connect(tmp_path / "newer.db") as db:
        db.execute("CREATE TABLE harness_schema (version INTEGER NOT NULL)")
        db.execute("INSERT INTO harness_schema VALUES (?)", (VERSION + 1,))
    db.close()
    assert problems(tmp_path) == [
        {
            "file": str(config),
            "line": 6,
            "entry": "store",
            "message": f"the store {tmp_path / 'newer.db'} was written by a newer harness (schema "
            f"version {VERSION + 1}; this one knows versions up to {VERSION}): upgrade harness, "
            "or set url to another store",
        }
    ]


def test_an_unreachable_postgres_is_a_problem_at_its_entry(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = project(tmp_path, f"postgresql://harness:secret@127.0.0.1:{port}/harness")
    [found] = problems(tmp_path)
    assert (found["file"], found["line"], found["entry"]) == (str(config), 6, "store")
    message = str(found["message"])
    assert message.startswith(
        f"cannot reach the store postgresql://harness:***@127.0.0.1:{port}/harness: "
    )
    assert message.endswith("; start the database, or fix url")
    assert "secret" not in message


def test_a_store_of_an_older_harness_is_migrated_forward_keeping_its_rows(tmp_path: Path) -> None:
    from harness.store.schema import SQLITE

    project(tmp_path, "sqlite:///.harness/harness.db")
    (tmp_path / ".harness").mkdir()
    db = sqlite3.connect(tmp_path / ".harness" / "harness.db", isolation_level=None)
    db.execute("CREATE TABLE harness_schema (version INTEGER NOT NULL)")
    for migration in SQLITE[:3]:  # a store written at version 3, before tasks
        for statement in migration:
            db.execute(statement)
    db.execute("INSERT INTO harness_schema VALUES (3)")
    db.execute("INSERT INTO secrets VALUES ('oauth/x', '{}', 1.0)")
    db.close()
    checked = run_harness("check", "--json", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    db = sqlite3.connect(tmp_path / ".harness" / "harness.db")
    try:
        assert db.execute("SELECT version FROM harness_schema").fetchall() == [(VERSION,)]
        assert db.execute("SELECT name FROM secrets").fetchall() == [("oauth/x",)]
        assert db.execute("SELECT count(*) FROM tasks").fetchall() == [(0,)]
    finally:
        db.close()
