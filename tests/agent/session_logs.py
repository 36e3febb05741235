"""Session logs written by hand, as harness writes them (for yesterday's sessions)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from harness.agent.log import dumps


def stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def yesterday_events(
    session_id: str, words: str = "the zebra parser", answer: str = "The Zebra parser reads a.txt."
) -> list[dict[str, Any]]:
    """One turn from yesterday: a question, two tool calls (one failing), an answer.

    Step 1 takes 1.5 s of model time and reports OpenAI-shaped usage; step 2 takes 0.25 s
    and reports Anthropic-shaped usage (with cached input tokens).
    """
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(days=1)
    rows: list[tuple[float, str, dict[str, Any]]] = [
        (0.0, "turn/start", {"turn": 1, "input": f"Please look at {words} for me"}),
        (0.1, "step/start", {"turn": 1, "step": 1}),
        (
            1.6,
            "assistant/message",
            {
                "text": "",
                "tool_calls": [
                    {"id": "c1", "name": "read_text_file", "args": {"path": "a.txt"}},
                    {"id": "c2", "name": "git_log_reader", "args": {"repoPath": "/nope"}},
                ],
            },
        ),
        (1.6, "tool/call", {"id": "c1", "name": "read_text_file", "args": {"path": "a.txt"}}),
        (1.6, "tool/call", {"id": "c2", "name": "git_log_reader", "args": {"repoPath": "/no"}}),
        (
            1.7,
            "tool/result",
            {
                "id": "c1",
                "duration_ms": 12.5,
                "result": {
                    "id": "c1",
                    "name": "read_text_file",
                    "ok": True,
                    "result": "hi",
                    "content": [],
                    "error": None,
                    "code": None,
                },
            },
        ),
        (
            1.8,
            "tool/result",
            {
                "id": "c2",
                "duration_ms": 40.0,
                "result": {
                    "id": "c2",
                    "name": "git_log_reader",
                    "ok": False,
                    "result": None,
                    "content": [],
                    "error": "not a repository",
                    "code": "tool_error",
                },
            },
        ),
        (
            1.8,
            "step/end",
            {"turn": 1, "step": 1, "usage": {"prompt_tokens": 100, "completion_tokens": 20}},
        ),
        (1.9, "step/start", {"turn": 1, "step": 2}),
        (2.15, "assistant/message", {"text": answer, "tool_calls": []}),
        (
            2.15,
            "step/end",
            {
                "turn": 1,
                "step": 2,
                "usage": {"input_tokens": 30, "cache_read_input_tokens": 100, "output_tokens": 9},
            },
        ),
        (2.2, "turn/end", {"turn": 1, "reason": "done", "error": None}),
    ]
    return [
        {
            "seq": n,
            "time": stamp(start + timedelta(seconds=at)),
            "type": kind,
            "session": session_id,
            **fields,
        }
        for n, (at, kind, fields) in enumerate(rows, 1)
    ]


def write_log(folder: Path, session_id: str, events: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.jsonl"
    path.write_text("".join(dumps(e) + "\n" for e in events), encoding="utf-8")
    return path
