"""The two scripted providers, and one view of what each was sent.

Tests that hold for any provider run against ``harness:openai`` (the OpenAI-compatible
scripted server) and ``harness:anthropic`` (the Messages-API one) alike. :func:`sent` reads a
request of either wire format as the same plain messages, so a test asserts once what the
model was sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from harness.testing import AnthropicServer, Rule, ScriptedServer

PROVIDERS = ("openai", "anthropic")


def server_for(provider: str, rules: list[Rule] | None = None) -> ScriptedServer:
    """A scripted server of ``provider`` (not started: use it as a context manager)."""
    kind = AnthropicServer if provider == "anthropic" else ScriptedServer
    return kind(rules or [])


def provider_of(server: ScriptedServer) -> str:
    return "anthropic" if isinstance(server, AnthropicServer) else "openai"


def model_entry(server: ScriptedServer, **config: Any) -> dict[str, Any]:
    """The cordis.yml entry of the model served by ``server``."""
    return {
        "id": "model",
        "name": f"harness:{provider_of(server)}",
        "config": {"model": "scripted", "base_url": server.url, "retry_backoff": 0.01, **config},
    }


def model_yaml(server: ScriptedServer, indent: str = "  ") -> str:
    """The ``name:`` and ``config:`` lines of that entry, for a YAML template."""
    entry = model_entry(server)
    lines = [f"name: {entry['name']}", "config:"]
    lines += [f"  {key}: {json.dumps(value)}" for key, value in entry["config"].items()]
    return ("\n" + indent).join(lines)


def after_text(server: ScriptedServer, pieces: int) -> int:
    """The chunks (OpenAI) or events (Anthropic) a stream sends up to its ``pieces``-th text
    piece: for a fault that strikes once that much text was shown."""
    return pieces + (3 if isinstance(server, AnthropicServer) else 1)


def call_id(server: ScriptedServer, number: int) -> str:
    """The id the server gives its ``number``-th tool call."""
    return f"{'toolu' if isinstance(server, AnthropicServer) else 'call'}_{number}"


@dataclass
class Sent:
    """One request, read the same whatever its wire format."""

    system: str
    messages: list[dict[str, Any]]
    """``{"role": "user"|"assistant"|"tool", "content": str, ...}``; tool messages carry
    ``tool_call_id``, assistant ones ``tool_calls`` (ids)."""
    tools: list[str]
    no_tools: bool
    """True when the request forbids tool calls (the wrap-up step)."""

    @property
    def roles(self) -> list[str]:
        return [message["role"] for message in self.messages]

    def results(self) -> list[dict[str, Any]]:
        return [message for message in self.messages if message["role"] == "tool"]


def sent(server: ScriptedServer, index: int) -> Sent:
    """Request ``index`` of ``server``, as plain messages."""
    body = server.requests[index]
    if isinstance(server, AnthropicServer):
        return _anthropic(body)
    messages = body.get("messages") or []
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    plain = []
    for message in messages[1:] if system else messages:
        item = {"role": message["role"], "content": message.get("content") or ""}
        if message["role"] == "tool":
            item["tool_call_id"] = message["tool_call_id"]
        if message.get("tool_calls"):
            item["tool_calls"] = [c["id"] for c in message["tool_calls"]]
        plain.append(item)
    return Sent(
        system,
        plain,
        [tool["function"]["name"] for tool in body.get("tools") or []],
        body.get("tool_choice") == "none",
    )


def _anthropic(body: dict[str, Any]) -> Sent:
    system = "".join(block["text"] for block in body.get("system") or [])
    plain: list[dict[str, Any]] = []
    for turn in body.get("messages") or []:
        content = turn["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if turn["role"] == "assistant":
            text = "".join(b["text"] for b in content if b["type"] == "text")
            item: dict[str, Any] = {"role": "assistant", "content": text}
            calls = [b["id"] for b in content if b["type"] == "tool_use"]
            if calls:
                item["tool_calls"] = calls
            plain.append(item)
            continue
        for block in content:
            if block["type"] == "tool_result":
                plain.append(
                    {
                        "role": "tool",
                        "tool_call_id": block["tool_use_id"],
                        "content": block["content"],
                    }
                )
            elif block["type"] == "text":
                plain.append({"role": "user", "content": block["text"]})
    return Sent(
        system,
        plain,
        [tool["name"] for tool in body.get("tools") or []],
        (body.get("tool_choice") or {}).get("type") == "none",
    )
