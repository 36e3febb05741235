"""Each turn's trajectory, built from the session log alone (DESIGN §15).

A turn's record is ``{turn, steps, model_ms, input_tokens, output_tokens, tools}``: the
model requests it made, the time from each ``step/start`` to its ``assistant/message`` (or
``step/end`` when no answer came) summed, the tokens its ``step/end`` usages report, and one
``{id, name, step, duration_ms, ok, code}`` per tool call (``parent`` on a call a program made
in code mode). Usage fields are the provider's own: OpenAI's ``prompt_tokens`` and
``completion_tokens``, Anthropic's ``input_tokens`` (plus its cache read and cache creation
counts, which are input too) and ``output_tokens``. A turn whose usage was never reported
shows ``None`` tokens rather than a made-up zero. The same function serves the web API, the
console and ``harness sessions show ID --stats``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

_INPUT = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def tokens_of(usage: Any) -> tuple[int | None, int | None]:
    """``(input, output)`` tokens from one provider-shaped usage dict (None: not reported)."""
    if not isinstance(usage, dict):
        return None, None

    def count(key: str) -> int | None:
        value = usage.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    if count("input_tokens") is not None:  # Anthropic (cached tokens are input as well)
        read = sum(count(key) or 0 for key in _INPUT)
        return read, count("output_tokens")
    return count("prompt_tokens"), count("completion_tokens")


def _moment(event: dict[str, Any]) -> float | None:
    stamp = event.get("time")
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _add(total: int | None, more: int | None) -> int | None:
    if more is None:
        return total
    return more if total is None else total + more


def trajectory(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per turn of ``events``, in order."""
    turns: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    step_started: float | None = None
    step = 0
    calls: dict[str, dict[str, Any]] = {}
    for event in events:
        kind = event.get("type")
        if kind == "turn/start":
            current = {
                "turn": event.get("turn", len(turns) + 1),
                "steps": 0,
                "model_ms": 0.0,
                "input_tokens": None,
                "output_tokens": None,
                "tools": [],
                "reason": None,
                "started": event.get("time"),
            }
            turns.append(current)
            step_started, calls = None, {}
        elif current is None:
            continue
        elif kind == "step/start":
            current["steps"] += 1
            step = int(event.get("step") or current["steps"])
            step_started = _moment(event)
        elif kind in ("assistant/message", "step/end") and step_started is not None:
            ended = _moment(event)
            if ended is not None:
                current["model_ms"] = round(current["model_ms"] + (ended - step_started) * 1000, 3)
            step_started = None
        if kind == "step/end":
            used_in, used_out = tokens_of(event.get("usage"))
            current["input_tokens"] = _add(current["input_tokens"], used_in)
            current["output_tokens"] = _add(current["output_tokens"], used_out)
        elif kind == "tool/call":
            record: dict[str, Any] = {
                "id": event.get("id"),
                "name": event.get("name"),
                "step": step,
                "duration_ms": None,
                "ok": None,
                "code": None,
            }
            if event.get("parent"):
                record["parent"] = event.get("parent")
            calls[str(event.get("id"))] = record
            current["tools"].append(record)
        elif kind == "tool/result":
            result: dict[str, Any] = (
                event["result"] if isinstance(event.get("result"), dict) else {}
            )
            found = calls.get(str(event.get("id")))
            if found is None:  # a result with no call event: still a call that happened
                found = {"id": event.get("id"), "name": result.get("name"), "step": step}
                current["tools"].append(found)
            duration = event.get("duration_ms")
            found["duration_ms"] = duration if isinstance(duration, int | float) else None
            found["ok"] = bool(result.get("ok"))
            found["code"] = result.get("code")
        elif kind == "turn/end":
            current["reason"] = event.get("reason")
            current = None
    return turns
