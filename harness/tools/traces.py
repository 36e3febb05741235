"""OpenTelemetry spans after the GenAI semantic conventions, free when nothing records them.

Three kinds: ``execute_tool {gen_ai.tool.name}`` for a tool call (the whole pipeline: policy,
approval, validation, the body), ``chat {gen_ai.request.model}`` for a model request and
``invoke_agent harness`` for an agent turn, parented through the context (a turn's chat and
tool spans are its children; a program's inner calls are children of its ``run_code`` call).
Token counts (``gen_ai.usage.input_tokens`` / ``output_tokens``), call ids
(``gen_ai.tool.call.id``), the conversation (``gen_ai.conversation.id``) and failures
(``error.type``: the result's code, or the exception's class) are attributes, and a failed
span's status names that kind; arguments, results, messages and the text of errors (in the
status) only with ``trace_content: true`` (the ``harness:tools`` entry).

:func:`refresh` runs when a host starts: spans are made only while an OpenTelemetry tracer
provider is installed. Without one (``opentelemetry-api`` alone, or not even that) the hot
paths test one module attribute, :data:`ON`, and make nothing; ``opentelemetry`` is not even
imported unless something else imported it first.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from . import jsonvalue

ON = False
"""True while a tracer provider is installed (checked by :func:`refresh`)."""
_tracer: Any = None
_explicit: Any = None
AGENT = "harness"
"""``gen_ai.agent.name``: the span of a turn is ``invoke_agent harness``."""


def use(provider: Any) -> None:
    """Trace into ``provider`` instead of the global one (None: the global again)."""
    global _explicit
    _explicit = provider
    refresh()


def refresh() -> bool:
    """Look for a tracer provider; True when spans will be recorded from now on."""
    global ON, _tracer
    provider = _explicit
    if provider is None and "opentelemetry.trace" in sys.modules:
        from opentelemetry import trace

        provider = trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
            provider = None
    if provider is None:
        ON, _tracer = False, None
        return False
    from .. import __version__

    _tracer = provider.get_tracer("harness", __version__)
    ON = True
    return True


def tracer() -> Any:
    """The tracer spans are made with (None while :data:`ON` is False)."""
    return _tracer


def dumps(value: Any) -> str:
    """A JSON attribute value (``str()`` of what is not JSON, and a note for an int too long
    to write)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        value = jsonvalue.printable(value)
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return repr(value)


def open_tool(call: Any, content: bool) -> tuple[Any, Any]:
    """Start the span of one tool call and make it current: ``(span, token)`` for
    :func:`close_tool` (the kernel opens it after its entry checks, closes it before
    ``tools/result``; only while :data:`ON`)."""
    from opentelemetry import context, trace

    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.id,
        "gen_ai.tool.type": "function",
    }
    parent = getattr(call, "parent", None)
    if parent:
        attributes["harness.tool.parent_call.id"] = str(parent)
    if content:
        attributes["gen_ai.tool.call.arguments"] = dumps(call.args)
    span = _tracer.start_span(
        f"execute_tool {call.name}", kind=trace.SpanKind.INTERNAL, attributes=attributes
    )
    return span, context.attach(trace.set_span_in_context(span))


def close_tool(opened: tuple[Any, Any], result: Any, content: bool) -> None:
    """Record the call's outcome, end its span and restore the caller's context."""
    from opentelemetry import context

    span, token = opened
    context.detach(token)
    end_tool(span, result, content)
    span.end()


def carrier() -> dict[str, str]:
    """The current trace context as W3C headers (``traceparent``), for work shipped to
    another process (the Ray executor); empty while :data:`ON` is False."""
    if not ON:
        return {}
    from opentelemetry.propagate import inject

    headers: dict[str, str] = {}
    inject(headers)
    return headers


def resume(headers: dict[str, str] | None) -> Any:
    """Make the context of :func:`carrier` headers current; a token for :func:`leave`."""
    if not headers:
        return None
    from opentelemetry import context
    from opentelemetry.propagate import extract

    return context.attach(extract(headers))


def leave(token: Any) -> None:
    if token is not None:
        from opentelemetry import context

        context.detach(token)


def end_tool(span: Any, result: Any, content: bool) -> None:
    """Record a call's outcome on its span."""
    if result is None:
        return
    if not result.ok:
        fail(span, result.code or "error", result.error or "", content)
    if content:
        span.set_attribute("gen_ai.tool.call.result", dumps(result.to_dict()))


def fail(span: Any, kind: str, message: str, content: bool) -> None:
    """Mark ``span`` failed with ``error.type`` ``kind``. Its status says ``kind``, and the
    failure's ``message`` only with ``content``: an error's text quotes arguments, programs,
    output and results as often as not."""
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", kind)
    span.set_status(Status(StatusCode.ERROR, (message[:500] if content else "") or kind))


def failed(span: Any, exc: BaseException, content: bool) -> None:
    """Mark ``span`` failed by an exception (cancellation included)."""
    fail(span, type(exc).__qualname__, str(exc), content)


def log_event(level: str, message: str, content: bool) -> None:
    """A running tool's log entry (``ctx.log``) as an event of the current span: its level,
    and its message only with ``trace_content``."""
    from opentelemetry import trace

    attributes = {"level": level}
    if content:
        attributes["message"] = message
    trace.get_current_span().add_event("tool.log", attributes)
