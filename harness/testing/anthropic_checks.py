"""What the scripted Messages-API server refuses, as the real API does (HTTP 400).

The checks are the rules a client most easily breaks when it translates a conversation:
alternating turns, every ``tool_use`` answered by a ``tool_result`` first in the next turn,
ids of the allowed characters, tools defined when tool blocks appear, non-empty text, a valid
thinking budget, and thinking blocks handed back exactly as they were signed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_BLOCKS = {
    "user": {"text", "image", "document", "tool_result"},
    "assistant": {
        "text",
        "tool_use",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "tool_search_tool_result",
    },
}


class RequestError(ValueError):
    """A request the API would refuse (the message is what it would say)."""


def check(body: dict[str, Any], signature: Callable[[str], str]) -> None:
    """Raise :class:`RequestError` when the real API would refuse ``body``."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise RequestError("model: Field required")
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise RequestError("max_tokens: Field required (a positive integer)")
    turns = body.get("messages")
    if not isinstance(turns, list) or not turns:
        raise RequestError("messages: at least one message is required")
    thinking = body.get("thinking") or {}
    if thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            raise RequestError("thinking.enabled.budget_tokens: Input should be >= 1024")
        if budget >= max_tokens:
            raise RequestError("`max_tokens` must be greater than `thinking.budget_tokens`")
    choice = (body.get("tool_choice") or {}).get("type", "auto")
    if choice not in ("auto", "any", "tool", "none"):
        raise RequestError(f"tool_choice.type: unknown value {choice!r}")
    if thinking.get("type") in ("enabled", "adaptive") and choice in ("any", "tool"):
        raise RequestError("Thinking may not be enabled when tool_choice forces tool use.")
    marks = sum(1 for tool in body.get("tools") or [] if "cache_control" in tool)
    system = body.get("system")
    if isinstance(system, list):
        marks += sum(1 for block in system if "cache_control" in block)
        for block in system:
            _text(block, "system")
    uses_tools = False
    for number, turn in enumerate(turns):
        where = f"messages.{number}"
        role = turn.get("role") if isinstance(turn, dict) else None
        if role not in ("user", "assistant"):
            raise RequestError(f"{where}.role: Input should be 'user' or 'assistant'")
        expected = "user" if number % 2 == 0 else "assistant"
        if role != expected:
            raise RequestError(
                f"{where}: roles must alternate between user and assistant, starting with user"
            )
        content = turn.get("content")
        if isinstance(content, str):
            if not content.strip():
                raise RequestError(f"{where}: text content blocks must contain non-whitespace text")
            continue
        if not isinstance(content, list) or not content:
            raise RequestError(f"{where}: all messages must have non-empty content")
        for index, block in enumerate(content):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind not in _BLOCKS[role]:
                raise RequestError(f"{where}.content.{index}.type: {kind!r} is not allowed here")
            marks += "cache_control" in block
            if kind == "text":
                _text(block, f"{where}.content.{index}")
            elif kind in ("tool_use", "tool_result"):
                uses_tools = True
                key = "id" if kind == "tool_use" else "tool_use_id"
                if not _ID.match(str(block.get(key, ""))):
                    raise RequestError(
                        f"{where}.content.{index}.{key}: String should match pattern "
                        f"'^[a-zA-Z0-9_-]+$'"
                    )
                if kind == "tool_use" and not isinstance(block.get("input"), dict):
                    raise RequestError(f"{where}.content.{index}.input: Input should be an object")
            elif kind == "thinking" and block.get("signature") != signature(
                str(block.get("thinking"))
            ):
                raise RequestError(
                    f"{where}.content.{index}: Invalid `signature` in `thinking` block"
                )
        _answered(turns, number)
    if uses_tools and not body.get("tools"):
        raise RequestError(
            "Requests which include `tool_use` or `tool_result` blocks must define tools."
        )
    if marks > 4:
        raise RequestError(
            f"A maximum of 4 blocks with cache_control may be provided. Found {marks}."
        )
    if thinking.get("type") in ("enabled", "adaptive"):
        _thinking_continued(turns)


def _text(block: Any, where: str) -> None:
    if not isinstance(block, dict) or not str(block.get("text", "")).strip():
        raise RequestError(f"{where}: text content blocks must contain non-whitespace text")


def _answered(turns: list[Any], number: int) -> None:
    """Every tool_use of assistant turn ``number`` has its tool_result first in the next turn."""
    turn = turns[number]
    if turn["role"] == "assistant":
        ids = [
            b["id"] for b in turn["content"] if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
        if not ids or number + 1 == len(turns):
            return
        following = turns[number + 1]["content"]
        blocks = following if isinstance(following, list) else []
        results = []
        for block in blocks:
            if block.get("type") != "tool_result":
                break
            results.append(block.get("tool_use_id"))
        missing = [i for i in ids if i not in results]
        if missing:
            raise RequestError(
                f"messages.{number + 1}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                "corresponding `tool_result` block in the next message, before any other content."
            )
    elif number > 0 and isinstance(turn["content"], list):
        previous = turns[number - 1]["content"]
        issued = {
            b.get("id") for b in previous if isinstance(b, dict) and b.get("type") == "tool_use"
        }
        for index, block in enumerate(turn["content"]):
            if block.get("type") == "tool_result" and block.get("tool_use_id") not in issued:
                raise RequestError(
                    f"messages.{number}.content.{index}: unexpected `tool_use_id` found in "
                    "`tool_result` blocks; each must match a `tool_use` block in the previous "
                    "message"
                )


def _thinking_continued(turns: list[Any]) -> None:
    """With thinking on, an assistant turn a tool result continues must start with thinking."""
    last = turns[-1]
    content = last["content"] if isinstance(last["content"], list) else []
    if len(turns) < 2 or not any(b.get("type") == "tool_result" for b in content):
        return
    first = turns[-2]["content"][0]
    if first.get("type") not in ("thinking", "redacted_thinking"):
        raise RequestError(
            f"messages.{len(turns) - 2}.content.0.type: Expected `thinking` or "
            f"`redacted_thinking`, but found `{first.get('type')}`. When `thinking` is enabled, "
            "a final `assistant` message must start with a thinking block."
        )
