"""``harness sessions`` and ``harness sessions show``: the record of past sessions.

``show`` takes a session id (looked up in the agent entry's sessions folder) or the path of
a JSONL log, such as a file the console's Export wrote: a name ending in ``.jsonl`` or
holding a path separator is read as a file, with no project needed. ``--stats`` prints each
turn's trajectory (:mod:`harness.agent.trajectory`) instead of the conversation.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.table import Table

from ..agent.log import read_events
from ..agent.session_list import Catalog
from ..agent.trajectory import trajectory
from ..tools.approval_contract import visible
from .chat import ChatError, _sessions_setting, _store, print_events
from .options import Options

MAX_FILE = 512 * 1024 * 1024


def list_sessions(options: Options, as_json: bool) -> None:
    """``harness sessions``: the latest first, with their titles (renames included)."""
    with _store(options) as store:
        listed = store.summaries() if store.folder is None else Catalog(store).summaries()
    listed.sort(key=lambda item: item["updated"] or "", reverse=True)
    if as_json:
        print(json.dumps(listed, indent=2, ensure_ascii=False))
        return
    table = Table("id", "title", "turns", "updated")
    table.columns[0].no_wrap = True
    for item in listed:
        table.add_row(item["id"], visible(item["title"]), str(item["turns"]), item["updated"] or "")
    Console().print(table)


def import_logs(options: Options, folder: str) -> int:
    """``harness sessions import FOLDER``: the exit code (1 when a line was a problem)."""
    from ..agent.session_import import import_logs as imported_from
    from ..agent.stored_sessions import is_store_url

    sessions, _ = _sessions_setting(options)
    if not is_store_url(sessions):
        raise ChatError(
            f"the agent's sessions are the folder {sessions!r}, not a store: set its "
            "sessions to a store URL (sqlite:///.harness/harness.db, or postgresql://...) "
            "and import again"
        )
    with _store(options) as store:
        done = anyio.run(imported_from, Path(folder), store.records)
        where = store.records.where
    for problem in done.problems:
        print(problem, file=sys.stderr)
    print(
        f"imported {done.added} events of {done.sessions} "
        + ("session" if done.sessions == 1 else "sessions")
        + f" into {where}"
        + (f" ({done.kept} were there already)" if done.kept else "")
        + (f"; {len(done.problems)} lines not imported (above)" if done.problems else "")
    )
    return 1 if done.problems else 0


def is_file(target: str) -> bool:
    """Whether ``show``'s argument names a log file rather than a session id."""
    return target.endswith(".jsonl") or os.sep in target or "/" in target


def load(options: Options | None, target: str) -> list[dict[str, Any]]:
    """The events of a session id, or of a JSONL file."""
    if is_file(target):
        path = Path(target)
        try:
            if path.stat().st_size > MAX_FILE:
                raise ChatError(f"{path} is larger than {MAX_FILE // 2**20} MB; not a session log?")
            data = path.read_bytes()
        except OSError as exc:
            raise ChatError(f"cannot read the session log {path}: {exc.strerror or exc}") from None
        events, _ = read_events(data, path)
        if data.strip() and not events:
            raise ChatError(f"{path} holds no session events (one JSON object per line)")
        return events
    assert options is not None
    with _store(options) as store:
        return list(store.load(target)[0])


def show(options: Options | None, target: str, as_json: bool, stats: bool) -> None:
    """``harness sessions show ID|FILE [--stats] [--json]``."""
    events = load(options, target)
    if not stats:
        print_events(events, as_json)
        return
    turns = trajectory(events)
    if as_json:
        print(json.dumps(turns, indent=2, ensure_ascii=False))
        return
    table = Table("turn", "steps", "model ms", "tokens in", "tokens out", "tool calls", "reason")
    for turn in turns:
        calls = "\n".join(
            f"{visible(str(t['name']))}  {_ms(t['duration_ms'])}  "
            + ("ok" if t["ok"] else str(t["code"] or "error"))
            for t in turn["tools"]
        )
        table.add_row(
            str(turn["turn"]),
            str(turn["steps"]),
            f"{turn['model_ms']:.0f}",
            _count(turn["input_tokens"]),
            _count(turn["output_tokens"]),
            calls or "-",
            str(turn["reason"] or "unfinished"),
        )
    Console(highlight=False).print(table)


def _ms(value: Any) -> str:
    return "-" if value is None else f"{float(value):.0f} ms"


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)
