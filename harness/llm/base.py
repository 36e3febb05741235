"""The ``llm`` service interface: one streamed model request per call, in neutral terms.

A provider is a plugin that provides a service named ``llm``::

    schema_format: str   # "openai" or "anthropic": the shape of request.tools it wants
    async def complete(request: ChatRequest, on_text: Callable[[str], None] | None) -> Completion

The agent speaks no provider's dialect: ``request.system`` is the system prompt,
``request.messages`` the history as :class:`UserMessage`, :class:`AssistantMessage` and
:class:`ToolMessage` (tool results, each naming its call), ``request.tools`` the visible tools'
schemas in the provider's ``schema_format`` (the registry builds and caches them), and
``request.use_tools`` False when the model must answer in text (the wrap-up step: the tools stay
listed, so the calls in the history remain valid). The provider translates all of it for its
API, calls ``on_text`` with each piece of text as it streams, retries what is worth retrying,
and returns the whole answer, or raises :class:`LLMError` with a message for the person at the
terminal (what failed, what to check). Cancellation (the caller's cancel scope) must stop the
request promptly. Whatever a provider needs back in later requests (Anthropic's signed thinking
blocks) travels in :attr:`Completion.thinking`: the agent logs it with the answer and hands it
back in the :class:`AssistantMessage`, unread. A provider whose API searches tools itself
(``native_search = True``: Anthropic's tool search tool) takes ``request.deferred``, sends those
tools deferred, and names the ones its API loaded in :attr:`Completion.loaded`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import HarnessError


class LLMError(HarnessError):
    """Raised when the model could not answer (after retries), with what to check.

    ``code`` says what failed, for traces (``error.type``): an HTTP status (``"429"``), an
    error event's type (``"overloaded_error"``), ``timeout``, ``connection_error``,
    ``stream_broken``, or ``error``.
    """

    def __init__(self, message: str, code: str = "error") -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class RequestedCall:
    """A tool call the model asked for."""

    id: str
    name: str
    arguments: str
    """The raw JSON text the model produced (parsed and validated by the pipeline)."""


@dataclass(frozen=True, slots=True)
class UserMessage:
    """What the person said (or the agent's wrap-up note)."""

    text: str


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """What the model answered: text, tool calls, and the provider's blocks to hand back."""

    text: str = ""
    calls: tuple[RequestedCall, ...] = ()
    thinking: tuple[dict[str, Any], ...] = ()
    """Opaque blocks from :attr:`Completion.thinking`, returned to the provider as they came."""


@dataclass(frozen=True, slots=True)
class ToolMessage:
    """The result of one tool call, as the model reads it."""

    call_id: str
    name: str
    content: str
    """The canonical value, or ``{"error", "code"}``, as compact JSON."""
    ok: bool = True


Message = UserMessage | AssistantMessage | ToolMessage

FINISH_REASONS = ("stop", "tool_calls", "length", "refused", "paused")
"""The neutral ``finish_reason`` values (None when the server gave none)."""


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One request to the model."""

    system: str
    messages: list[Message]
    tools: list[dict[str, Any]] = field(default_factory=list)
    use_tools: bool = True
    """False: the model must answer in text now (it may not call the listed tools)."""
    max_tokens: int | None = None
    """The most tokens the answer may have (None: the provider's configured default); a
    tool's ``ctx.sample`` sets it."""
    temperature: float | None = None
    stop: tuple[str, ...] = ()
    """Sequences that end the answer."""
    deferred: list[dict[str, Any]] = field(default_factory=list)
    """Tools the provider's API searches itself (a provider with ``native_search`` only):
    sent deferred, loaded when the model's server-side search finds them, callable then."""


@dataclass(frozen=True, slots=True)
class Completion:
    """The model's whole answer to one request."""

    text: str = ""
    tool_calls: tuple[RequestedCall, ...] = ()
    usage: dict[str, int] = field(default_factory=dict)
    """Token counts in the provider's own fields (``prompt_tokens``, ``input_tokens``,
    ``cache_read_input_tokens``...), as the server reports them; logged in ``step/end``."""
    finish_reason: str | None = None
    """One of :data:`FINISH_REASONS`, mapped from the provider's own reason."""
    thinking: tuple[dict[str, Any], ...] = ()
    """Blocks the provider needs back in the next request (kept in the history and the log)."""
    input_tokens: int | None = None
    """Every input token of the request, cached ones included (None when not reported)."""
    output_tokens: int | None = None
    loaded: tuple[str, ...] = ()
    """The deferred tools a server-side search of the API loaded in this answer."""


class LLM(Protocol):
    """What the agent needs from the ``llm`` service."""

    schema_format: str
    """The registry schema format ``request.tools`` is given in (``openai``, ``anthropic``)."""

    async def complete(
        self, request: ChatRequest, on_text: Callable[[str], None] | None = None
    ) -> Completion:
        """Send ``request``, stream text to ``on_text``, return the answer."""
        ...
