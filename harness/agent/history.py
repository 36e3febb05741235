"""The conversation as the model is sent it, rebuilt from a session's event log."""

from __future__ import annotations

import json
from typing import Any

from ..llm.base import AssistantMessage, Message, RequestedCall, ToolMessage, UserMessage
from ..tools import jsonvalue


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
    """What the model reads of a result: the canonical value, or error and code, as JSON; a
    result without a value (a mounted tool whose server sent no structuredContent), its
    blocks' text, other blocks named (``[image: image/png]``) rather than repeated."""
    if result.get("ok"):
        value: Any = result.get("result")
        if value is None and result.get("content"):
            return "\n".join(_text_of(block) for block in result["content"])
    else:
        value = {"error": result.get("error"), "code": result.get("code")}
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return json.dumps(str(jsonvalue.printable(value)), ensure_ascii=False)


def _text_of(block: Any) -> str:
    if not isinstance(block, dict):
        return str(block)
    if block.get("type") == "text":
        return str(block.get("text", ""))
    named = block.get("mime_type") or block.get("uri") or block.get("url") or ""
    return f"[{block.get('type')}: {named}]" if named else f"[{block.get('type')}]"


def tool_message(call_id: str, name: str, result: dict[str, Any]) -> ToolMessage:
    """A result (``ToolResult.to_dict()``) as the model reads it."""
    return ToolMessage(call_id, name, for_model(result), bool(result.get("ok")))


def history_of(events: list[dict[str, Any]]) -> list[Message]:
    """The messages a log describes."""
    history: list[Message] = []
    names: dict[str, str] = {}
    for event in events:
        kind = event.get("type")
        if kind == "turn/start":
            history.append(UserMessage(str(event.get("input", ""))))
        elif kind == "assistant/message":
            calls = tuple(
                RequestedCall(
                    str(item.get("id")),
                    str(item.get("name")),
                    item["args"]
                    if isinstance(item.get("args"), str)
                    else compact(item.get("args")),
                )
                for item in event.get("tool_calls") or []
            )
            names.update((c.id, c.name) for c in calls)
            thinking = event.get("thinking") or ()
            blocks = tuple(b for b in thinking if isinstance(b, dict))
            history.append(AssistantMessage(str(event.get("text") or ""), calls, blocks))
        elif kind == "tool/result" and not event.get("parent"):  # not a program's inner call
            call_id = str(event.get("id"))
            result = event.get("result") or {}
            name = names.get(call_id) or str(result.get("name") or "")
            history.append(tool_message(call_id, name, result))
    return history


def normal_call(item: RequestedCall) -> RequestedCall:
    args = arguments_of(item.arguments)
    return item if isinstance(args, str) else RequestedCall(item.id, item.name, compact(args))


def compact(value: Any) -> str:
    return json.dumps(value if value is not None else {}, ensure_ascii=False, separators=(",", ":"))
