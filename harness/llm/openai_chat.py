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

import ipaddress
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
import pydantic

from ..service import Service
from .base import ChatRequest, Completion, LLMError, RequestedCall

if TYPE_CHECKING:
    from ..context import Context

_log = logging.getLogger("harness.llm")
MAX_RETRY_AFTER = 60.0


class OpenAIConfig(pydantic.BaseModel):
    """Config of a ``harness:openai`` entry."""

    model_config = pydantic.ConfigDict(extra="forbid")

    model: str = pydantic.Field(min_length=1)
    """The model name the server knows (``gpt-4.1-mini``, ``deepseek-chat``, ``qwen3:8b``...)."""
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
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"base_url {value!r} is not an http(s) URL; write it like "
                "https://api.openai.com/v1 or http://127.0.0.1:8000/v1"
            )
        return value.rstrip("/")

    @pydantic.model_validator(mode="after")
    def _check_key(self) -> OpenAIConfig:
        if not self.api_key and not _is_local(urlsplit(self.base_url).hostname or ""):
            raise ValueError(
                f"api_key is empty, and {self.base_url} is not a local server; set api_key "
                "(for instance api_key: ${OPENAI_API_KEY}) and export the key"
            )
        return self


def _is_local(host: str) -> bool:
    if host == "localhost" or host.endswith((".local", ".localhost", ".internal", ".lan")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "." not in host  # a bare host name on the local network
    return address.is_loopback or address.is_private or address.is_link_local


class OpenAIChat(Service):
    """The ``llm`` service of a ``harness:openai`` entry."""

    name = "openai"
    provides = ("llm",)
    Config = OpenAIConfig

    def __init__(self, ctx: Context, config: OpenAIConfig) -> None:
        super().__init__(ctx, "llm")
        import openai  # only now: harness starts without the SDK's import cost

        self.config = config
        self._openai = openai
        self.client = openai.AsyncOpenAI(
            api_key=config.api_key or "not-needed",
            base_url=config.base_url,
            timeout=openai.Timeout(config.timeout, connect=min(config.timeout, 30.0)),
            max_retries=0,  # retried here, so a stream that breaks is retried too
            default_headers=config.headers or None,
        )

    async def stop(self) -> None:
        await self.client.close()

    async def complete(
        self, request: ChatRequest, on_text: Callable[[str], None] | None = None
    ) -> Completion:
        """One streamed completion, retried as the config says."""
        shown = False

        def show(text: str) -> None:
            nonlocal shown
            shown = True
            if on_text is not None:
                on_text(text)

        attempts = self.config.max_retries + 1
        for attempt in range(1, attempts + 1):
            try:
                return await self._stream(request, show)
            except Exception as exc:
                retry, wait, message = self._classify(exc, attempt, attempts)
                if not retry or shown or attempt == attempts:
                    if shown and retry:
                        message += " (not retried: part of the answer was already shown)"
                    raise LLMError(message) from None
                _log.info(
                    "%s; retrying in %.2f s (attempt %d of %d)", message, wait, attempt, attempts
                )
                await anyio.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _stream(self, request: ChatRequest, show: Callable[[str], None]) -> Completion:
        body: dict[str, Any] = {
            **self.config.params,
            "model": self.config.model,
            "messages": request.messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = request.tools
            if request.tool_choice is not None:
                body["tool_choice"] = request.tool_choice
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
        return Completion("".join(text), tool_calls, usage, finish)

    def _classify(self, exc: Exception, attempt: int, attempts: int) -> tuple[bool, float, str]:
        """``(retry, seconds to wait, message)`` for a failed attempt."""
        openai = self._openai
        where = self.config.base_url
        wait = min(self.config.retry_backoff * 2 ** (attempt - 1), 30.0)
        tried = f" after {attempt} attempt{'s' if attempt > 1 else ''}"
        if isinstance(exc, openai.APITimeoutError):
            return (
                True,
                wait,
                (
                    f"no answer from the model server at {where} within {self.config.timeout:g} s"
                    f"{tried}; check that it is running, or raise the entry's timeout"
                ),
            )
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            if type(cause).__name__ in ("RemoteProtocolError", "ReadError"):
                return (
                    True,
                    wait,
                    (
                        f"the answer from the model server at {where} broke off mid-stream{tried} "
                        f"({type(cause).__name__}: {cause})"
                    ),
                )
            return (
                True,
                wait,
                (
                    f"cannot reach the model server at {where}{tried} ({type(cause).__name__}: "
                    f"{cause}); check that the server is running and that base_url is right"
                ),
            )
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            detail = _detail(exc)
            if status == 429 or status >= 500:
                after = _retry_after(exc)
                if after is not None:
                    wait = min(after, MAX_RETRY_AFTER)
                kind = "rate-limited the request" if status == 429 else "failed"
                return (
                    True,
                    wait,
                    (f"the model server at {where} {kind} (HTTP {status}){tried}: {detail}"),
                )
            if status in (401, 403):
                return (
                    False,
                    0,
                    (
                        f"the model server at {where} refused the credentials (HTTP {status}): "
                        f"{detail}; check the entry's api_key"
                    ),
                )
            if status == 404:
                return (
                    False,
                    0,
                    (
                        f"HTTP 404 from {where}: {detail}; check base_url (it usually ends in /v1) "
                        f"and that the server has the model {self.config.model!r}"
                    ),
                )
            return (
                False,
                0,
                f"the model server at {where} rejected the request (HTTP {status}): {detail}",
            )
        if _is_broken_stream(exc):
            return (
                True,
                wait,
                (
                    f"the answer from the model server at {where} broke off mid-stream{tried} "
                    f"({type(exc).__name__}: {exc})"
                ),
            )
        _log.warning("unexpected error from the model server at %s", where, exc_info=exc)
        return (
            False,
            0,
            (f"unexpected error from the model server at {where}: {type(exc).__name__}: {exc}"),
        )


def _detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:500]
    return str(getattr(exc, "message", exc))[:500]


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    value = None if response is None else response.headers.get("retry-after")
    try:
        return None if value is None else max(0.0, float(value))
    except ValueError:
        return None


def _is_broken_stream(exc: Exception) -> bool:
    """A transport failure while reading the stream (the SDK's HTTP library raises it)."""
    if isinstance(exc, EOFError | ConnectionError):
        return True
    return any(
        kind.__name__ in ("TransportError", "HTTPError", "StreamError")
        and kind.__module__.split(".")[0].startswith("httpx")
        for kind in type(exc).__mro__
    )
