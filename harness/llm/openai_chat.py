"""``harness:openai``: the ``llm`` service over any OpenAI-compatible chat completions API.

OpenAI, DeepSeek, vLLM, Ollama, llama.cpp's server and LM Studio all speak it. Requests are
streamed; tool-call argument deltas are assembled by their index; ``params`` adds request
fields (``temperature``, ``max_tokens``, ...). ``timeout`` is an idle timeout: the longest
silence tolerated while connecting or between two chunks. 429, 5xx, connection failures,
idle timeouts and streams that break before any text was shown are retried ``max_retries``
times with exponential backoff (a ``Retry-After`` header is honoured, up to 60 s); other
failures raise :class:`~harness.llm.base.LLMError` at once with what to check.

The official ``openai`` SDK is imported when the plugin loads, not when harness starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any
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
    from openai import AsyncOpenAI

    from ..context import Context


class OpenAIConfig(pydantic.BaseModel):
    """Config of a ``harness:openai`` entry."""

    model_config = pydantic.ConfigDict(extra="forbid")

    model: str = pydantic.Field(min_length=1)
    """The model name the server knows (``gpt-4.1-mini``, ``deepseek-chat``, ``qwen3:8b``...)."""
    label: str = ""
    """How people see the model (chat banner, console header, session log); default
    ``model``. ``--demo`` sets it to say the model is a scripted demo."""
    base_url: str = "https://api.openai.com/v1"
    """The API root, usually ending in ``/v1``."""
    api_key: str = ""
    """May be empty for a server on this machine or a private network."""
    params: dict[str, Any] = {}
    """Extra request fields, sent as they are."""
    timeout: float = pydantic.Field(300.0, gt=0)
    """Idle seconds: the longest wait for a connection or for the next chunk."""
    max_retries: int = pydantic.Field(2, ge=0, le=20)
    retry_backoff: float = pydantic.Field(0.5, ge=0)
    """Seconds before the first retry, doubled for each further one (capped at 30)."""
    headers: dict[str, str] = {}
    """Extra HTTP headers (an organisation or project header, say)."""

    @pydantic.field_validator("base_url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        return http_base_url(value, "https://api.openai.com/v1 or http://127.0.0.1:8000/v1")

    @pydantic.model_validator(mode="after")
    def _check_key(self) -> OpenAIConfig:
        if not self.api_key and not is_local(urlsplit(self.base_url).hostname or ""):
            raise ValueError(
                f"api_key is empty, and {self.base_url} is not a local server; set api_key "
                "(for instance api_key: ${OPENAI_API_KEY}) and export the key"
            )
        return self


class OpenAIChat(SDKProvider[OpenAIConfig]):
    """The ``llm`` service of a ``harness:openai`` entry."""

    name = "openai"
    Config = OpenAIConfig
    schema_format = "openai"
    client: AsyncOpenAI

    def __init__(self, ctx: Context, config: OpenAIConfig) -> None:
        import openai  # only now: harness starts without the SDK's import cost

        super().__init__(
            ctx,
            config,
            openai,
            openai.AsyncOpenAI,
            not_found_hint="check base_url (it usually ends in /v1)",
        )

    @property
    def label(self) -> str:
        """The model's name for people."""
        return self.config.label or self.config.model

    async def _stream(self, request: ChatRequest, show: Callable[[str], None]) -> Completion:
        body: dict[str, Any] = {
            **self.config.params,
            "model": self.config.model,
            "messages": openai_messages(request.system, request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = request.tools
            if not request.use_tools:
                body["tool_choice"] = "none"
        if request.max_tokens is not None:  # what OpenAI-compatible servers all read
            body["max_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stop:
            body["stop"] = list(request.stop)
        stream = await self.client.chat.completions.create(**body)
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        usage: dict[str, int] = {}
        finish: str | None = None
        async with stream:
            async for chunk in stream:
                if chunk.usage is not None:
                    usage = {
                        key: value
                        for key, value in chunk.usage.model_dump().items()
                        if isinstance(value, int)
                    }
                for choice in chunk.choices:
                    delta = choice.delta
                    if delta.content:
                        text.append(delta.content)
                        show(delta.content)
                    for piece in delta.tool_calls or ():
                        slot = calls.setdefault(
                            piece.index if piece.index is not None else len(calls),
                            {"id": None, "name": "", "arguments": []},
                        )
                        if piece.id:
                            slot["id"] = piece.id
                        if piece.function is not None:
                            if piece.function.name:
                                slot["name"] += piece.function.name
                            if piece.function.arguments:
                                slot["arguments"].append(piece.function.arguments)
                    if choice.finish_reason:
                        finish = choice.finish_reason
        tool_calls = tuple(
            RequestedCall(
                slot["id"] or f"call_{index}", slot["name"], "".join(slot["arguments"]) or "{}"
            )
            for index, slot in sorted(calls.items())
        )
        return Completion(
            "".join(text),
            tool_calls,
            usage,
            _FINISH.get(finish, finish) if finish is not None else None,
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
        )


_FINISH = {"function_call": "tool_calls", "content_filter": "refused"}
"""OpenAI's finish reasons that are not already the neutral names."""


def openai_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    """The neutral history as OpenAI chat messages (thinking blocks are not OpenAI's)."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        if isinstance(message, ToolMessage):
            out.append(
                {"role": "tool", "tool_call_id": message.call_id, "content": message.content}
            )
        elif isinstance(message, AssistantMessage):
            item: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.calls:
                item["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                    for c in message.calls
                ]
            out.append(item)
        else:
            out.append({"role": "user", "content": message.text})
    return out
