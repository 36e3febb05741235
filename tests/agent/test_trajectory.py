"""Trajectories and the session list, from logs on disk (DESIGN §15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.agent.log import SessionStore, dumps, read_events
from harness.agent.session_list import (
    Catalog,
    check_query,
    check_title,
    summary,
    summary_of_bytes,
)
from harness.agent.trajectory import tokens_of, trajectory
from harness.errors import RecordError

from .session_logs import write_log, yesterday_events


def test_a_turns_trajectory_comes_from_the_log_alone() -> None:
    (turn,) = trajectory(yesterday_events("s1"))
    assert turn["turn"] == 1
    assert turn["steps"] == 2
    assert turn["reason"] == "done"
    assert turn["model_ms"] == pytest.approx(1750.0)  # 1.5 s + 0.25 s
    assert turn["input_tokens"] == 100 + 130
    assert turn["output_tokens"] == 20 + 9
    assert [
        (t["name"], t["duration_ms"], t["ok"], t["code"], t["step"]) for t in turn["tools"]
    ] == [
        ("read_text_file", 12.5, True, None, 1),
        ("git_log_reader", 40.0, False, "tool_error", 1),
    ]


def test_usage_in_either_providers_fields() -> None:
    assert tokens_of({"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}) == (5, 2)
    both = {"input_tokens": 3, "cache_creation_input_tokens": 4, "cache_read_input_tokens": 5}
    assert tokens_of({**both, "output_tokens": 1}) == (12, 1)
    assert tokens_of({}) == (None, None)
    assert tokens_of(None) == (None, None)


def test_an_unfinished_turn_and_a_call_without_result() -> None:
    events = yesterday_events("s1")[:5]  # cut after the tool/call events: a crash
    (turn,) = trajectory(events)
    assert turn["reason"] is None
    assert turn["input_tokens"] is None
    assert [t["ok"] for t in turn["tools"]] == [None, None]


def test_the_fast_summary_agrees_with_the_full_parse(tmp_path: Path) -> None:
    events = yesterday_events("s1") * 3  # three turns
    path = write_log(tmp_path, "s1", events)
    fast = summary_of_bytes("s1", path.read_bytes(), path)
    assert fast == summary("s1", read_events(path.read_bytes())[0])
    assert fast["turns"] == 3
    assert fast["title"] == "Please look at the zebra parser for me"
    # a tool argument that looks like an event is no turn
    fake = {**events[3], "args": {"x": '{"seq":1,"time":"t","type":"turn/start"}'}}
    line = dumps(fake).encode() + b'\n{"seq":9,"time":"z","type":"turn/start"}'  # partial
    fast = summary_of_bytes("s1", path.read_bytes() + line, path)
    assert fast["turns"] == 3


def test_a_title_event_names_the_session_and_survives_a_new_catalog(tmp_path: Path) -> None:
    events = yesterday_events("s1")
    events.append({**events[-1], "seq": 99, "type": "session/title", "title": "Zebra work"})
    write_log(tmp_path, "s1", events)
    (item,) = Catalog(SessionStore(tmp_path)).summaries()
    assert item["title"] == "Zebra work"
    assert item["turns"] == 1


def test_search_matches_messages_not_tool_arguments(tmp_path: Path) -> None:
    write_log(tmp_path, "s1", yesterday_events("s1"))
    write_log(tmp_path, "s2", yesterday_events("s2", "the lion", "Lions roar."))
    catalog = Catalog(SessionStore(tmp_path))
    assert catalog.matches("s1", "ZEBRA")
    assert not catalog.matches("s2", "zebra")
    assert catalog.matches("s1", "zebra parser reads")
    assert catalog.matches("s2", "LIONS")
    assert not catalog.matches("s1", 'a.txt"}')  # arguments are no message


@pytest.mark.parametrize("bad", ["", "   ", "x" * 201, "a\x1b[31mb", "evil\u202etxt", 3])
def test_titles_and_queries_refuse_what_cannot_be_shown(bad: object) -> None:
    with pytest.raises(RecordError):
        check_title(bad)
    with pytest.raises(RecordError):
        check_query(bad)
    assert check_title("  Zebra work ") == "Zebra work"
