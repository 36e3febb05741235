"""The scripted Messages-API server's tool search tool: deferred tools, searched server-side.

A request may send tools with ``defer_loading: true`` beside one of the API's tool search
tools (``tool_search_tool_bm25_20251119`` or ``tool_search_tool_regex_20251119``). A reply
with ``search`` makes the scripted model use it: the answer starts with a ``server_tool_use``
block (``{"query"}`` for BM25, ``{"pattern"}`` for the regex variant) and its
``tool_search_tool_result``, whose ``tool_references`` name the deferred tools found (at most
5, best first). The search here is plain word overlap (or ``re.search``) over each tool's
name, description and parameters: it tests the wiring, not a ranking.

:func:`check_deferral` refuses what the real API refuses: deferred tools without a tool
search tool, a deferred tool search tool, a search tool of an unknown type or name, a
``server_tool_use`` without its result in the same turn, and a ``tool_reference`` to a tool
the request does not define.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .anthropic_checks import RequestError

SEARCH_TOOLS = {
    "tool_search_tool_bm25_20251119": "tool_search_tool_bm25",
    "tool_search_tool_regex_20251119": "tool_search_tool_regex",
}
FOUND = 5
_WORD = re.compile(r"[a-z0-9]+")


def search_tool(body: dict[str, Any]) -> dict[str, Any] | None:
    """The request's tool search tool, if it has one."""
    tools = body.get("tools") or []
    return next((t for t in tools if t.get("type") in SEARCH_TOOLS), None)


def _text(tool: dict[str, Any]) -> str:
    schema = tool.get("input_schema") or {}
    return " ".join([str(tool.get("name")), str(tool.get("description", "")), json.dumps(schema)])


def found(body: dict[str, Any], query: str) -> list[str]:
    """The deferred tools of ``body`` that ``query`` finds, best first."""
    tool = search_tool(body)
    deferred = [t for t in body.get("tools") or [] if t.get("defer_loading")]
    if tool is not None and tool["type"].startswith("tool_search_tool_regex"):
        pattern = re.compile(query)
        return [str(t["name"]) for t in deferred if pattern.search(_text(t))][:FOUND]
    words = set(_WORD.findall(query.lower()))
    scored = []
    for position, t in enumerate(deferred):
        score = len(words & set(_WORD.findall(_text(t).replace("_", " ").lower())))
        if score:
            scored.append((-score, position, str(t["name"])))
    return [name for _, _, name in sorted(scored)[:FOUND]]


def search_blocks(body: dict[str, Any], query: str, block_id: str) -> list[dict[str, Any]]:
    """The blocks of a server-side search for ``query`` (none without a search tool)."""
    tool = search_tool(body)
    if tool is None:
        return []
    regex = tool["type"].startswith("tool_search_tool_regex")
    use = {
        "type": "server_tool_use",
        "id": block_id,
        "name": tool["name"],
        "input": {"pattern": query} if regex else {"query": query},
    }
    references = [{"type": "tool_reference", "tool_name": n} for n in found(body, query)]
    result = {
        "type": "tool_search_tool_result",
        "tool_use_id": block_id,
        "content": {"type": "tool_search_tool_search_result", "tool_references": references},
    }
    return [use, result]


def check_deferral(body: dict[str, Any]) -> None:
    """Raise :class:`RequestError` where the real API refuses the request's deferral."""
    tools = body.get("tools") or []
    names = {str(t.get("name")) for t in tools}
    searchers = [t for t in tools if str(t.get("type", "")).startswith("tool_search_tool_")]
    for index, tool in enumerate(searchers):
        if SEARCH_TOOLS.get(tool["type"]) != tool.get("name"):
            raise RequestError(
                f"tools.{index}: unknown tool search tool {tool['type']!r} named "
                f"{tool.get('name')!r}"
            )
        if tool.get("defer_loading"):
            raise RequestError("the tool search tool itself cannot have defer_loading")
    if any(t.get("defer_loading") for t in tools) and not searchers:
        raise RequestError(
            "tools with defer_loading need a tool search tool (tool_search_tool_bm25 or "
            "tool_search_tool_regex) in tools"
        )
    if all(t.get("defer_loading") for t in tools) and tools:
        raise RequestError("at least one tool must not be deferred")
    for number, turn in enumerate(body.get("messages") or []):
        content = turn.get("content") if isinstance(turn, dict) else None
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        results = {
            b.get("tool_use_id") for b in blocks if str(b.get("type")).endswith("_tool_result")
        }
        for index, block in enumerate(blocks):
            where = f"messages.{number}.content.{index}"
            if block.get("type") == "server_tool_use" and block.get("id") not in results:
                raise RequestError(f"{where}: server_tool_use {block.get('id')} has no result")
            if block.get("type") == "tool_search_tool_result":
                refs = (block.get("content") or {}).get("tool_references") or []
                for ref in refs:
                    if ref.get("tool_name") not in names:
                        raise RequestError(
                            f"{where}: tool_reference {ref.get('tool_name')!r} does not match "
                            "any tool in tools"
                        )
