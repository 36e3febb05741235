"""The agent's spans: ``invoke_agent harness`` for a turn, ``chat {model}`` for each request.

They follow the OpenTelemetry GenAI conventions (see :mod:`harness.tools.traces`); the tool
calls a turn makes are ``execute_tool`` spans the pipeline opens, children of the turn's span
through the context. With ``trace_content`` the turn's input and answer, and each request's
messages and answer, are attributes in the conventions' JSON shapes; without it, only counts,
names, ids and outcomes. Nothing here runs while no tracer provider is installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..llm.base import AssistantMessage, ChatRequest, Completion, Message, ToolMessage
from ..tools import traces


@dataclass
class TurnSpan:
    """The open span of a turn, and the tokens its requests used."""

    span: Any
    input_tokens: int = 0
    output_tokens: int = 0


def _model(llm: Any) -> tuple[str, str | None, str | None]:
    """``(provider name, model, base URL)`` of the ``llm`` service, as far as it says."""
    config = getattr(llm, "config", None)
    return (
        str(getattr(llm, "name", None) or type(llm).__name__),
        getattr(config, "model", None),
        getattr(config, "base_url", None),
    )


def _common(session_id: str, llm: Any) -> dict[str, Any]:
    provider, model, _ = _model(llm)
    attributes: dict[str, Any] = {
        "gen_ai.provider.name": provider,
        "gen_ai.conversation.id": session_id,
    }
    if model:
        attributes["gen_ai.request.model"] = model
    return attributes


@contextmanager
def turn_span(session_id: str, llm: Any, turn: int, text: str, content: bool) -> Iterator[TurnSpan]:
    """The span of one turn, current while it runs (only call it while ``traces.ON``)."""
    from opentelemetry.trace import SpanKind

    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": traces.AGENT,
        "harness.turn": turn,
        **_common(session_id, llm),
    }
    if content:
        attributes["gen_ai.input.messages"] = traces.dumps([_message("user", text)])
    with traces.tracer().start_as_current_span(
        f"invoke_agent {traces.AGENT}",
        kind=SpanKind.INTERNAL,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        yield TurnSpan(span)


def end_turn(
    opened: TurnSpan, reason: str, error: str | None, kind: str | None, answer: str, content: bool
) -> None:
    """Record a turn's outcome: tokens over its requests, why it ended, what failed."""
    span = opened.span
    span.set_attribute("gen_ai.usage.input_tokens", opened.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", opened.output_tokens)
    span.set_attribute("harness.turn.reason", reason)
    if reason == "error":
        traces.fail(span, kind or "error", error or "", content)
    if content and answer:
        span.set_attribute("gen_ai.output.messages", traces.dumps([_message("assistant", answer)]))


@contextmanager
def chat_span(session_id: str, llm: Any, request: ChatRequest, content: bool) -> Iterator[Any]:
    """The span of one model request, current while it runs (only while ``traces.ON``)."""
    from opentelemetry.trace import SpanKind

    _, model, base_url = _model(llm)
    attributes = {"gen_ai.operation.name": "chat", **_common(session_id, llm)}
    if base_url:
        parts = urlsplit(base_url)
        if parts.hostname:
            attributes["server.address"] = parts.hostname
            attributes["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)
    if content:
        attributes["gen_ai.system_instructions"] = traces.dumps(
            [{"type": "text", "content": request.system}]
        )
        attributes["gen_ai.input.messages"] = traces.dumps([_neutral(m) for m in request.messages])
        attributes["gen_ai.tool.definitions"] = traces.dumps(request.tools)
    with traces.tracer().start_as_current_span(
        f"chat {model}" if model else "chat",
        kind=SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        yield span


def end_chat(span: Any, turn: TurnSpan | None, answer: Completion, content: bool) -> None:
    if answer.input_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", answer.input_tokens)
        if turn is not None:
            turn.input_tokens += answer.input_tokens
    if answer.output_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", answer.output_tokens)
        if turn is not None:
            turn.output_tokens += answer.output_tokens
    if answer.finish_reason:
        span.set_attribute("gen_ai.response.finish_reasons", [answer.finish_reason])
    if content:
        message = AssistantMessage(answer.text, answer.tool_calls)
        span.set_attribute("gen_ai.output.messages", traces.dumps([_neutral(message)]))


def _message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _neutral(message: Message) -> dict[str, Any]:
    """A message in the conventions' shape: ``{role, parts: [...]}``."""
    if isinstance(message, ToolMessage):
        part = {"type": "tool_call_response", "id": message.call_id, "response": message.content}
        return {"role": "tool", "parts": [part]}
    if isinstance(message, AssistantMessage):
        parts: list[dict[str, Any]] = []
        if message.text:
            parts.append({"type": "text", "content": message.text})
        for call in message.calls:
            parts.append(
                {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
            )
        return {"role": "assistant", "parts": parts}
    return _message("user", message.text)
