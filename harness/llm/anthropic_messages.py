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
stream) is retried like a 5xx. With ``request.deferred`` (the agent defers tools and
``search.native`` lets the API search them) those tools go with ``defer_loading: true`` after
the API's tool search tool (``tool_search``), and the server tool blocks of the answer round-trip
(:mod:`.anthropic_blocks`).

The ``anthropic`` SDK is imported when the plugin loads, not when harness starts.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import pydantic

from .anthropic_blocks import anthropic_messages, completion, count, started
from .base import ChatRequest, Completion
from .retries import is_local
from .sdk_provider import SDKProvider, http_base_url

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

    from ..context import Context

KEY_VARIABLE = "ANTHROPIC_API_KEY"
SEARCH_TOOLS = {
    "bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
}
"""The API's tool search tools: it searches the tools sent with ``defer_loading`` itself."""


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
    tool_search: Literal["bm25", "regex"] = "bm25"
    """The API's tool search tool, when the agent defers tools to it (``search.native``):
    natural-language queries ranked by BM25, or regular expressions the model writes."""

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
    native_search = True
    """The API searches deferred tools itself (``ChatRequest.deferred``)."""
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
            "messages": anthropic_messages(request.messages, cache, _names(request)),
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
        tools = list(request.tools)
        if request.deferred:  # the API's search tool leads; the cached prefix ends before
            tools.insert(0, SEARCH_TOOLS[self.config.tool_search])  # the deferred tools
        if tools:
            if cache is not None:
                tools[-1] = {**tools[-1], "cache_control": cache}
            tools += [{**tool, "defer_loading": True} for tool in request.deferred]
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
                    blocks[event.index] = started(event.content_block)
                elif kind == "message_start":
                    count(usage, event.message.usage)
                elif kind == "message_delta":
                    count(usage, event.usage)
                    if event.delta.stop_reason is not None:
                        finish = event.delta.stop_reason
        return completion([blocks[index] for index in sorted(blocks)], usage, finish)


def _names(request: ChatRequest) -> set[str] | None:
    """The tool names ``request`` defines, when the API may search some of them."""
    if not request.deferred:
        return None
    return {str(tool.get("name")) for tool in [*request.tools, *request.deferred]}
