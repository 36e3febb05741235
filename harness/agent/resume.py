"""Where a turn cut off by a restart stands, read from its session's events.

A turn is open when its ``turn/start`` has no ``turn/end``. It goes on from its last
``step/start``: a step whose ``assistant/message`` is recorded has its answer (the model
is not asked again) and runs the calls that have no ``tool/result`` yet (the call journal
answers those that finished or were cut off); a step without one asks the model again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..llm.base import RequestedCall
from .history import compact


@dataclass
class OpenTurn:
    """A turn the log leaves open, and how far it got."""

    turn: int
    input: str
    step: int = 0
    """Its last step started (0: none)."""
    answered: bool = False
    """Whether that step's answer (``assistant/message``) is recorded."""
    ended: bool = False
    """Whether that step's ``step/end`` is recorded."""
    calls: list[RequestedCall] = field(default_factory=list)
    """The tool calls of that step's answer."""
    called: set[str] = field(default_factory=set)
    """The calls whose ``tool/call`` is recorded."""
    reported: set[str] = field(default_factory=set)
    """The calls whose ``tool/result`` is recorded."""


def open_turn(events: list[dict[str, Any]]) -> OpenTurn | None:
    """The turn ``events`` leave open, or None."""
    opened: OpenTurn | None = None
    for event in events:
        kind = event.get("type")
        if kind == "turn/start":
            opened = OpenTurn(_number(event.get("turn")), str(event.get("input", "")))
        elif opened is None:
            continue
        elif kind == "turn/end":
            opened = None
        elif kind == "step/start":
            opened.step = _number(event.get("step"))
            opened.answered = opened.ended = False
            opened.calls, opened.called, opened.reported = [], set(), set()
        elif kind == "assistant/message":
            opened.answered = True
            opened.calls = [_requested(item) for item in event.get("tool_calls") or []]
        elif kind == "tool/call" and not event.get("parent"):
            opened.called.add(str(event.get("id")))
        elif kind == "tool/result" and not event.get("parent"):
            opened.reported.add(str(event.get("id")))
        elif kind == "step/end":
            opened.ended = True
    return opened


def _number(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _requested(item: Any) -> RequestedCall:
    item = item if isinstance(item, dict) else {}
    args = item.get("args")
    text = args if isinstance(args, str) else compact(args)
    return RequestedCall(str(item.get("id")), str(item.get("name")), text)
