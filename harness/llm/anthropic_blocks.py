"""The Messages API's content blocks, both ways: a streamed answer into a :class:`Completion`,
and the neutral history into the API's turns.

Blocks the agent does not read (signed thinking, and the server tools' blocks: a
``server_tool_use`` of the tool search tool and its ``tool_search_tool_result``) travel in
:attr:`Completion.thinking` and come back in the next request unmodified, in the order they
came, before the text and the tool calls of their message. The tools a server-side search
loaded (the ``tool_reference`` s of its result) are :attr:`Completion.loaded`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

from .base import AssistantMessage, Completion, Message, RequestedCall, ToolMessage

FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refused",
    "pause_turn": "paused",
}
SEARCH_RESULT = "tool_search_tool_result"
_ID = re.compile(r"[^a-zA-Z0-9_-]")
_THINKING = ("thinking", "redacted_thinking")


def started(block: Any) -> dict[str, Any]:
    """The accumulator of a block that starts streaming."""
    kind = block.type
    if kind in ("tool_use", "server_tool_use"):
        start = json.dumps(block.input) if block.input else ""
        return {"type": kind, "id": block.id, "name": block.name, "json": [start]}
    if kind == "thinking":
        return {"type": kind, "thinking": [block.thinking], "signature": block.signature or ""}
    if kind == "redacted_thinking":
        return {"type": kind, "data": block.data}
    if kind == "text":
        return {"type": kind, "text": [block.text or ""]}
    # a server tool's result (tool_search_tool_result...): whole in its start event
    return {"type": "block", "block": block.model_dump(mode="json", exclude_none=True)}


def count(usage: dict[str, int], reported: Any) -> None:
    """Merge reported counts (the message_delta ones are cumulative)."""
    for key, value in reported.model_dump().items():
        if isinstance(value, int) and not isinstance(value, bool):
            usage[key] = value


def completion(
    blocks: list[dict[str, Any]], usage: dict[str, int], finish: str | None
) -> Completion:
    """The answer made of a message's accumulated blocks, in order."""
    text: list[str] = []
    calls: list[RequestedCall] = []
    kept: list[dict[str, Any]] = []
    loaded: list[str] = []
    for block in blocks:
        kind = block["type"]
        if kind == "text":
            text.append("".join(block["text"]))
        elif kind == "tool_use":
            calls.append(RequestedCall(block["id"], block["name"], "".join(block["json"]) or "{}"))
        elif kind == "thinking":
            thought = "".join(block["thinking"])
            kept.append({"type": kind, "thinking": thought, "signature": block["signature"]})
        elif kind == "redacted_thinking":
            kept.append({"type": kind, "data": block["data"]})
        elif kind == "server_tool_use":
            raw = "".join(block["json"])
            kept.append(
                {"type": kind, "id": block["id"], "name": block["name"], "input": _input(raw)}
            )
        else:
            kept.append(block["block"])
            loaded.extend(n for n in referenced(block["block"]) if n not in loaded)
    read = usage.get("cache_read_input_tokens", 0) + usage.get("cache_creation_input_tokens", 0)
    return Completion(
        "".join(text),
        tuple(calls),
        usage,
        FINISH.get(finish, finish) if finish is not None else None,
        tuple(kept),
        input_tokens=usage["input_tokens"] + read if "input_tokens" in usage else None,
        output_tokens=usage.get("output_tokens"),
        loaded=tuple(loaded),
    )


def referenced(block: dict[str, Any]) -> list[str]:
    """The tool names a ``tool_search_tool_result`` block references (none for others)."""
    if block.get("type") != SEARCH_RESULT:
        return []
    content = block.get("content")
    references = content.get("tool_references") if isinstance(content, dict) else None
    if not isinstance(references, list):
        return []
    return [
        ref["tool_name"]
        for ref in references
        if isinstance(ref, dict) and isinstance(ref.get("tool_name"), str)
    ]


def _resolved(block: dict[str, Any], tools: Collection[str] | None) -> dict[str, Any]:
    """``block`` as it came, unless it references a tool the request no longer carries (one
    removed or denied since): the API refuses a reference it cannot resolve, so those go."""
    names = referenced(block)
    if tools is None or all(name in tools for name in names):
        return dict(block)
    content = dict(block["content"])
    content["tool_references"] = [
        ref for ref in content["tool_references"] if ref.get("tool_name") in tools
    ]
    return {**block, "content": content}


def anthropic_messages(
    messages: list[Message],
    cache: dict[str, str] | None = None,
    tools: Collection[str] | None = None,
) -> list[dict[str, Any]]:
    """The neutral history as Messages-API turns.

    Turns alternate: tool results and the text after them join one user turn (results first,
    as the API wants), an assistant turn with nothing to say is left out, and call ids are
    confined to the characters the API accepts (another provider's ids may hold others).
    ``cache`` marks the newest block, the moving end of the cached prefix. ``tools`` (the
    names the request defines) drops tool search references to tools it no longer has.
    """
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        elif blocks:
            out.append({"role": role, "content": blocks})

    for message in messages:
        if isinstance(message, ToolMessage):
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": _ID.sub("_", message.call_id),
                "content": message.content,
            }
            if not message.ok:
                result["is_error"] = True
            add("user", [result])
        elif isinstance(message, AssistantMessage):
            blocks: list[dict[str, Any]] = []
            served = any(b.get("type") not in _THINKING for b in message.thinking)
            if message.text.strip() or message.calls or served:
                blocks = [_resolved(block, tools) for block in message.thinking]
            if message.text.strip():
                blocks.append({"type": "text", "text": message.text})
            for call in message.calls:
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": _ID.sub("_", call.id),
                        "name": call.name,
                        "input": _input(call.arguments),
                    }
                )
            add("assistant", blocks)
        else:
            add("user", [{"type": "text", "text": message.text if message.text.strip() else "…"}])
    if cache is not None and out:
        last = out[-1]["content"]
        last[-1] = {**last[-1], "cache_control": cache}
    return out


def _input(arguments: str) -> dict[str, Any]:
    """A call's arguments as the object the API wants (``{}`` for text that was not one)."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
