"""``harness sessions show ID --stats`` and reading an exported log back (DESIGN §15)."""

from __future__ import annotations

import json
from pathlib import Path

from ..agent.session_logs import write_log, yesterday_events
from ..helpers import run_harness

OLD = "20261130-093000-abc123"
CONFIG = "insert:\n  - id: agent\n    name: harness:agent\n"


def project(tmp_path: Path) -> Path:
    (tmp_path / "cordis.yml").write_text(CONFIG)
    write_log(tmp_path / ".harness" / "sessions", OLD, yesterday_events(OLD))
    return tmp_path


def test_stats_prints_each_turns_trajectory(tmp_path: Path) -> None:
    folder = project(tmp_path)
    shown = run_harness("sessions", "show", OLD, "--stats", "--json", cwd=folder)
    assert shown.returncode == 0, shown.stderr
    (turn,) = json.loads(shown.stdout)
    assert (turn["steps"], turn["input_tokens"], turn["output_tokens"]) == (2, 230, 29)
    table = run_harness("sessions", "show", OLD, "--stats", cwd=folder, env={"COLUMNS": "160"})
    assert table.returncode == 0, table.stderr
    for words in (
        "1750",
        "230",
        "29",
        "read_text_file  12 ms  ok",
        "git_log_reader  40 ms  tool_error",
    ):
        assert words in table.stdout, table.stdout


def test_an_exported_file_reads_back_without_a_project(tmp_path: Path) -> None:
    exported = write_log(tmp_path / "downloads", "session-x", yesterday_events(OLD))
    elsewhere = tmp_path / "empty"
    elsewhere.mkdir()
    shown = run_harness("sessions", "show", str(exported), cwd=elsewhere)
    assert shown.returncode == 0, shown.stderr
    assert "Please look at the zebra parser" in shown.stdout
    assert "The Zebra parser" in shown.stdout
    stats = run_harness("sessions", "show", str(exported), "--stats", "--json", cwd=elsewhere)
    assert json.loads(stats.stdout)[0]["steps"] == 2


def test_a_missing_or_foreign_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = run_harness("sessions", "show", str(tmp_path / "nope.jsonl"), cwd=tmp_path)
    assert missing.returncode != 0
    assert "cannot read the session log" in missing.stderr
    assert "Traceback" not in missing.stderr
    foreign = tmp_path / "notes.jsonl"
    foreign.write_text("hello\n")
    shown = run_harness("sessions", "show", str(foreign), cwd=tmp_path)
    assert shown.returncode != 0
    assert "holds no session events" in shown.stderr


def test_the_list_shows_a_renamed_title(tmp_path: Path) -> None:
    folder = project(tmp_path)
    events = yesterday_events(OLD)
    events.append({**events[-1], "seq": 13, "type": "session/title", "title": "Zebra work"})
    write_log(folder / ".harness" / "sessions", OLD, events)
    listed = run_harness("sessions", "--json", cwd=folder)
    assert listed.returncode == 0, listed.stderr
    assert [(i["id"], i["title"], i["turns"]) for i in json.loads(listed.stdout)] == [
        (OLD, "Zebra work", 1)
    ]
