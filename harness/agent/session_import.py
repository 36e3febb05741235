"""``harness sessions import FOLDER``: JSONL session logs moved into a store.

Each ``ID.jsonl`` of the folder becomes session ``ID``, event for event (the same JSON, by
its ``seq``). An event the store has already (same session and ``seq``) is left as it is,
so importing twice adds nothing. A line that is not an event (not JSON, no ``type`` or
``seq``, cut off) is a problem located ``file:line``; the other lines are imported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from ..store.session_records import SessionRecords
from .log import SessionNotFound, check_id, dumps

MAX_FILE = 512 * 1024 * 1024


@dataclass
class Imported:
    """What an import did."""

    sessions: int = 0
    added: int = 0
    """Events the store did not have."""
    kept: int = 0
    """Events it had already (an earlier import)."""
    problems: list[str] = field(default_factory=list)


Rows = list[tuple[int, str, str, str]]


async def import_logs(folder: Path, records: SessionRecords) -> Imported:
    """Import every session log of ``folder`` into the store of ``records``."""
    done = Imported()
    logs = await anyio.to_thread.run_sync(read_logs, folder, done.problems)
    for session, rows in logs:
        added = await records.insert(session, rows)
        done.sessions += 1
        done.added += added
        done.kept += len(rows) - added
    return done


def read_logs(folder: Path, problems: list[str]) -> list[tuple[str, Rows]]:
    """Each log's events as rows ``(seq, type, time, line)``; a problem per bad line."""
    logs: list[tuple[str, Rows]] = []
    done = Imported(problems=problems)
    if not folder.is_dir():
        problems.append(f"{folder}: not a folder of session logs")
        return logs
    for path in sorted(folder.glob("*.jsonl")):
        try:
            check_id(path.stem)
        except SessionNotFound as exc:
            done.problems.append(f"{path}: {exc}")
            continue
        try:
            if path.stat().st_size > MAX_FILE:
                done.problems.append(f"{path}: larger than {MAX_FILE // 2**20} MB")
                continue
            data = path.read_bytes()
        except OSError as exc:
            done.problems.append(f"{path}: cannot be read: {exc.strerror or exc}")
            continue
        rows: Rows = []
        lines = data.split(b"\n")
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            if number == len(lines):  # no newline after it: cut off by a crash
                done.problems.append(f"{where}: a partial last line (the log was cut off)")
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError as exc:
                done.problems.append(f"{where}: not JSON ({exc.msg})")
                continue
            except ValueError:  # not UTF-8
                done.problems.append(f"{where}: not JSON (not UTF-8 text)")
                continue
            seq = event.get("seq") if isinstance(event, dict) else None
            if not isinstance(event, dict) or not isinstance(event.get("type"), str):
                done.problems.append(f"{where}: not an event (an object with a type)")
            elif not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
                done.problems.append(f"{where}: the event has no seq (1, 2, ...)")
            else:
                rows.append((seq, event["type"], str(event.get("time") or ""), dumps(event)))
        if rows:
            logs.append((path.stem, rows))
    return logs
