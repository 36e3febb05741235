"""The ``llm`` service interface: one streamed chat completion per call.

A provider is a plugin that provides a service named ``llm`` with one method::

    async def complete(request: ChatRequest, on_text: Callable[[str], None] | None) -> Completion

``request.messages`` are OpenAI chat messages (``system``, ``user``, ``assistant`` with
``tool_calls``, ``tool`` with ``tool_call_id``), ``request.tools`` the registry's schemas in the
OpenAI format, ``request.tool_choice`` None (the model decides) or ``"none"`` (answer in text).
The provider translates them for its API, calls ``on_text`` with each piece of text as it
streams, retries what is worth retrying, and returns the whole answer, or raises
:class:`LLMError` with a message for the person at the terminal (what failed, what to check).
Cancellation (the caller's cancel scope) must stop the request promptly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..errors import HarnessError


class LLMError(HarnessError):
    """Raised when the model could not answer (after retries), with what to check."""


@dataclass(frozen=True, slots=True)
class RequestedCall:
    """A tool call the model asked for."""

    id: str
    name: str
    arguments: str
    """The raw JSON text the model produced (parsed and validated by the pipeline)."""


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One request to the model."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: Literal["none"] | None = None


@dataclass(frozen=True, slots=True)
class Completion:
    """The model's whole answer to one request."""

    text: str = ""
    tool_calls: tuple[RequestedCall, ...] = ()
    usage: dict[str, int] = field(default_factory=dict)
    """Token counts as the server reports them (``prompt_tokens``, ``completion_tokens``...)."""
    finish_reason: str | None = None


class LLM(Protocol):
    """What the agent needs from the ``llm`` service."""

    async def complete(
        self, request: ChatRequest, on_text: Callable[[str], None] | None = None
    ) -> Completion:
        """Send ``request``, stream text to ``on_text``, return the answer."""
        ...
