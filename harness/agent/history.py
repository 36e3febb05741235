"""Chat messages: what the model is sent, rebuilt from a session's event log."""

from __future__ import annotations

import json
from typing import Any

from ..llm.base import RequestedCall


def arguments_of(raw: str) -> Any:
    """The model's argument text as JSON when it parses to an object, else the raw text."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return value if isinstance(value, dict) else raw


def for_model(result: dict[str, Any]) -> str:
    """What the model reads of a result: the canonical value, or error and code, as JSON."""
    if result.get("ok"):
        value: Any = result.get("result")
    else:
        value = {"error": result.get("error"), "code": result.get("code")}
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return json.dumps(str(value), ensure_ascii=False)


def history_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chat messages a log describes."""
    history: list[dict[str, Any]] = []
    for event in events:
        kind = event.get("type")
        if kind == "turn/start":
            history.append({"role": "user", "content": str(event.get("input", ""))})
        elif kind == "assistant/message":
            calls = [
                RequestedCall(
                    str(item.get("id")),
                    str(item.get("name")),
                    item["args"]
                    if isinstance(item.get("args"), str)
                    else compact(item.get("args")),
                )
                for item in event.get("tool_calls") or []
            ]
            history.append(assistant_message(str(event.get("text") or ""), calls))
        elif kind == "tool/result" and not event.get("parent"):  # not a program's inner call
            result = event.get("result") or {}
            history.append(
                {"role": "tool", "tool_call_id": str(event.get("id")), "content": for_model(result)}
            )
    return history


def normal_call(item: RequestedCall) -> RequestedCall:
    args = arguments_of(item.arguments)
    return item if isinstance(args, str) else RequestedCall(item.id, item.name, compact(args))


def compact(value: Any) -> str:
    return json.dumps(value if value is not None else {}, ensure_ascii=False, separators=(",", ":"))


def assistant_message(text: str, calls: list[RequestedCall]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    return message
