"""``harness:anthropic``: the ``llm`` service over Anthropic's Messages API (the official SDK).

The Messages API carries what an OpenAI-compatible endpoint drops: ``tool_use`` blocks streamed
as ``input_json_delta`` pieces (assembled here by block index), thinking blocks with their
signatures (returned as :attr:`Completion.thinking`, kept in the history and passed back
unmodified before the text and tool calls of their message), prompt caching (``cache_control``
on the last tool, the system prompt and the newest message, so each step reads the previous
step's prefix from the cache), and its own usage fields (``input_tokens``, ``output_tokens``,
``cache_read_input_tokens``, ``cache_creation_input_tokens``), logged as they come. Retries,
the idle ``timeout`` and the failure messages are those of ``harness:openai``
(:mod:`harness.llm.retries`); an ``overloaded_error`` (HTTP 529, or an error event in the
stream) is retried like a 5xx.

The ``anthropic`` SDK is imported when the plugin loads, not when harness starts.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import pydantic

from .base import (
    AssistantMessage,
    ChatRequest,
    Completion,
    Message,
    RequestedCall,
    ToolMessage,
)
from .retries import is_local
from .sdk_provider import SDKProvider, http_base_url

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

    from ..context import Context

KEY_VARIABLE = "ANTHROPIC_API_KEY"
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refused",
    "pause_turn": "paused",
}
_ID = re.compile(r"[^a-zA-Z0-9_-]")


class AnthropicConfig(pydantic.BaseModel):
    """Config of a ``harness:anthropic`` entry."""

    model_config = pydantic.ConfigDict(extra="forbid")

    model: str = pydantic.Field(min_length=1)
    """The model name (``claude-sonnet-4-5``, ``claude-opus-4-1``, ``claude-haiku-4-5``...)."""
    base_url: str = "https://api.anthropic.com"
    """The API root, without ``/v1`` (the SDK adds ``/v1/messages``)."""
    api_key: str = ""
    """Empty: the ``ANTHROPIC_API_KEY`` variable; may stay empty for a local server."""
    max_tokens: int = pydantic.Field(8192, ge=1)
    """The answer's token limit (the API requires one; thinking counts toward it)."""
    thinking: int | Literal["adaptive"] | dict[str, Any] | None = None
    """Extended thinking: a budget of tokens (``4000``), ``adaptive``, or the API's object."""
    cache: bool = True
    """Mark the tools, the system prompt and the newest message for prompt caching."""
    cache_ttl: Literal["5m", "1h"] = "5m"
    params: dict[str, Any] = {}
    """Extra request fields, sent as they are (``temperature``, ``stop_sequences``...)."""
    timeout: float = pydantic.Field(300.0, gt=0)
    """Idle seconds: the longest wait for a connection or for the next event."""
    max_retries: int = pydantic.Field(2, ge=0, le=20)
    retry_backoff: float = pydantic.Field(0.5, ge=0)
    """Seconds before the first retry, doubled for each further one (capped at 30)."""
    headers: dict[str, str] = {}
    """Extra HTTP headers (``anthropic-beta``, say)."""

    @pydantic.field_validator("base_url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        value = http_base_url(value, "https://api.anthropic.com or http://127.0.0.1:8000")
        if value.endswith("/v1"):
            raise ValueError(
                f"base_url {value!r} ends in /v1, which the SDK adds itself "
                f"(it posts to /v1/messages); write {value[:-3]!r}"
            )
        return value

    @pydantic.field_validator("thinking")
    @classmethod
    def _check_thinking(cls, value: Any) -> Any:
        if isinstance(value, int):
            return {"type": "enabled", "budget_tokens": value}
        if value == "adaptive":
            return {"type": "adaptive"}
        if isinstance(value, dict) and not isinstance(value.get("type"), str):
            raise ValueError(
                "thinking needs a type, as in {type: enabled, budget_tokens: 4000}; "
                "or write a number of tokens, or adaptive"
            )
        return value

    @pydantic.model_validator(mode="after")
    def _check(self) -> AnthropicConfig:
        if not self.api_key:
            self.api_key = os.environ.get(KEY_VARIABLE, "")
        if not self.api_key and not is_local(urlsplit(self.base_url).hostname or ""):
            raise ValueError(
                f"no API key: api_key is empty and {KEY_VARIABLE} is not set; export "
                f"{KEY_VARIABLE} (or set api_key: ${{{KEY_VARIABLE}}} in the entry)"
            )
        thinking = self.thinking
        if isinstance(thinking, dict) and thinking.get("type") == "enabled":
            budget = thinking.get("budget_tokens")
            if not isinstance(budget, int) or not 1024 <= budget < self.max_tokens:
                raise ValueError(
                    f"thinking's budget_tokens must be a whole number from 1024 to below "
                    f"max_tokens ({self.max_tokens}); got {budget!r}"
                )
        return self


class AnthropicChat(SDKProvider[AnthropicConfig]):
    """The ``llm`` service of a ``harness:anthropic`` entry."""

    name = "anthropic"
    Config = AnthropicConfig
    schema_format = "anthropic"
    client: AsyncAnthropic

    def __init__(self, ctx: Context, config: AnthropicConfig) -> None:
        import anthropic  # only now: harness starts without the SDK's import cost

        super().__init__(
            ctx,
            config,
            anthropic,
            anthropic.AsyncAnthropic,
            key_hint=f"check the entry's api_key (or {KEY_VARIABLE})",
            not_found_hint="check base_url (the SDK adds /v1/messages to it)",
        )
        self._cache: dict[str, str] | None = None
        if config.cache:
            self._cache = {"type": "ephemeral"}
            if config.cache_ttl != "5m":
                self._cache["ttl"] = config.cache_ttl

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """The request body for ``request``."""
        cache = self._cache
        body: dict[str, Any] = {
            **self.config.params,
            "model": self.config.model,
            "max_tokens": request.max_tokens or self.config.max_tokens,
            "messages": anthropic_messages(request.messages, cache),
        }
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stop:
            body["stop_sequences"] = list(request.stop)
        if request.system:
            system: dict[str, Any] = {"type": "text", "text": request.system}
            if cache is not None:
                system["cache_control"] = cache
            body["system"] = [system]
        if request.tools:
            tools = list(request.tools)
            if cache is not None:
                tools[-1] = {**tools[-1], "cache_control": cache}
            body["tools"] = tools
            if not request.use_tools:
                body["tool_choice"] = {"type": "none"}
        if self.config.thinking is not None and request.max_tokens is None:
            # a request with its own budget (a tool's sampling) is answered without thinking,
            # whose budget must stay below max_tokens
            body["thinking"] = self.config.thinking
        return body

    async def _stream(self, request: ChatRequest, show: Callable[[str], None]) -> Completion:
        body = self.body(request)
        # the rest as raw JSON: params may hold fields this SDK version has no argument for
        core = {key: body.pop(key) for key in ("model", "max_tokens", "messages")}
        stream = await self.client.messages.create(**core, stream=True, extra_body=body)
        blocks: dict[int, dict[str, Any]] = {}
        usage: dict[str, int] = {}
        finish: str | None = None
        async with stream:
            async for event in stream:
                kind = event.type
                if kind == "content_block_delta":
                    delta = event.delta
                    block = blocks[event.index]
                    if delta.type == "text_delta":
                        block["text"].append(delta.text)
                        show(delta.text)
                    elif delta.type == "input_json_delta":
                        block["json"].append(delta.partial_json)
                    elif delta.type == "thinking_delta":
                        block["thinking"].append(delta.thinking)
                    elif delta.type == "signature_delta":
                        block["signature"] = block.get("signature", "") + delta.signature
                elif kind == "content_block_start":
                    blocks[event.index] = _started(event.content_block)
                elif kind == "message_start":
                    _count(usage, event.message.usage)
                elif kind == "message_delta":
                    _count(usage, event.usage)
                    if event.delta.stop_reason is not None:
                        finish = event.delta.stop_reason
        return _completion([blocks[index] for index in sorted(blocks)], usage, finish)


def _started(block: Any) -> dict[str, Any]:
    """The accumulator of a block that starts streaming."""
    kind = block.type
    if kind == "tool_use":
        start = json.dumps(block.input) if block.input else ""
        return {"type": kind, "id": block.id, "name": block.name, "json": [start]}
    if kind == "thinking":
        return {"type": kind, "thinking": [block.thinking], "signature": block.signature or ""}
    if kind == "redacted_thinking":
        return {"type": kind, "data": block.data}
    return {"type": kind, "text": [getattr(block, "text", "") or ""]}


def _count(usage: dict[str, int], reported: Any) -> None:
    """Merge reported counts (the message_delta ones are cumulative)."""
    for key, value in reported.model_dump().items():
        if isinstance(value, int) and not isinstance(value, bool):
            usage[key] = value


def _completion(
    blocks: list[dict[str, Any]], usage: dict[str, int], finish: str | None
) -> Completion:
    text: list[str] = []
    calls: list[RequestedCall] = []
    thinking: list[dict[str, Any]] = []
    for block in blocks:
        kind = block["type"]
        if kind == "text":
            text.append("".join(block["text"]))
        elif kind == "tool_use":
            calls.append(RequestedCall(block["id"], block["name"], "".join(block["json"]) or "{}"))
        elif kind == "thinking":
            thinking.append(
                {
                    "type": kind,
                    "thinking": "".join(block["thinking"]),
                    "signature": block["signature"],
                }
            )
        elif kind == "redacted_thinking":
            thinking.append({"type": kind, "data": block["data"]})
    read = usage.get("cache_read_input_tokens", 0) + usage.get("cache_creation_input_tokens", 0)
    return Completion(
        "".join(text),
        tuple(calls),
        usage,
        _FINISH.get(finish, finish) if finish is not None else None,
        tuple(thinking),
        input_tokens=usage["input_tokens"] + read if "input_tokens" in usage else None,
        output_tokens=usage.get("output_tokens"),
    )


def anthropic_messages(
    messages: list[Message], cache: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """The neutral history as Messages-API turns.

    Turns alternate: tool results and the text after them join one user turn (results first,
    as the API wants), an assistant turn with nothing to say is left out, and call ids are
    confined to the characters the API accepts (another provider's ids may hold others).
    ``cache`` marks the newest block, the moving end of the cached prefix.
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
            if message.text.strip() or message.calls:
                blocks = [dict(block) for block in message.thinking]
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
