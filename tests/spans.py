"""Spans as plain records, from the SDK's in-memory exporter or from OTLP protobuf alike.

:func:`check_tree` is the done-when check of the traces: one turn with two tool calls is one
``invoke_agent`` span whose children are its ``chat`` and ``execute_tool`` spans.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness.testing import ScriptedServer

from .providers import call_id, provider_of


@dataclass
class Span:
    name: str
    kind: str
    """``internal``, ``client``, ``server``..."""
    trace_id: int
    span_id: int
    parent_id: int | None
    attributes: dict[str, Any]
    error: bool
    start: int
    end: int


def from_sdk(span: Any) -> Span:
    """A span of ``opentelemetry.sdk`` (``ReadableSpan``)."""
    context = span.get_span_context()
    return Span(
        span.name,
        span.kind.name.lower(),
        context.trace_id,
        context.span_id,
        span.parent.span_id if span.parent is not None else None,
        {key: tuple(v) if isinstance(v, list | tuple) else v for key, v in span.attributes.items()},
        span.status.status_code.name == "ERROR",
        span.start_time,
        span.end_time,
    )


def from_otlp(body: bytes) -> list[Span]:
    """The spans of one ``ExportTraceServiceRequest`` (protobuf, as OTLP/HTTP posts it)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    kinds = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
    spans = []
    for resource in request.resource_spans:
        for scope in resource.scope_spans:
            for span in scope.spans:
                spans.append(
                    Span(
                        span.name,
                        kinds.get(span.kind, "unspecified"),
                        int.from_bytes(span.trace_id, "big"),
                        int.from_bytes(span.span_id, "big"),
                        int.from_bytes(span.parent_span_id, "big") if span.parent_span_id else None,
                        {a.key: _value(a.value) for a in span.attributes},
                        span.status.code == 2,
                        span.start_time_unix_nano,
                        span.end_time_unix_nano,
                    )
                )
    return spans


def service_names(body: bytes) -> list[str]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    return [
        _value(a.value)
        for resource in request.resource_spans
        for a in resource.resource.attributes
        if a.key == "service.name"
    ]


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    return getattr(value, kind) if kind else None


def named(spans: list[Span], prefix: str) -> list[Span]:
    return [span for span in spans if span.name.startswith(prefix)]


def check_tree(spans: list[Span], server: ScriptedServer, session: str) -> None:
    """One turn span; its children: two chat spans and the echo and add execute_tool spans."""
    [agent] = named(spans, "invoke_agent")
    chats = named(spans, "chat ")
    tools = sorted(named(spans, "execute_tool "), key=lambda t: t.attributes["gen_ai.tool.call.id"])
    assert agent.name == "invoke_agent harness"
    assert len(chats) == 2
    assert [t.name for t in tools] == ["execute_tool echo", "execute_tool add"]
    for child in chats + tools:
        assert child.parent_id == agent.span_id, child
        assert child.trace_id == agent.trace_id
    provider = provider_of(server)
    a = agent.attributes
    assert a["gen_ai.operation.name"] == "invoke_agent"
    assert a["gen_ai.agent.name"] == "harness"
    assert a["gen_ai.conversation.id"] == session
    assert a["gen_ai.provider.name"] == provider
    assert a["gen_ai.request.model"] == "scripted"
    for chat in chats:
        c = chat.attributes
        assert chat.name == "chat scripted"
        assert chat.kind == "client"
        assert c["gen_ai.operation.name"] == "chat"
        assert c["gen_ai.provider.name"] == provider
        assert c["gen_ai.request.model"] == "scripted"
        assert c["server.address"] == "127.0.0.1"
        assert c["gen_ai.usage.input_tokens"] > 0
        assert c["gen_ai.usage.output_tokens"] > 0
    assert [c.attributes["gen_ai.response.finish_reasons"] for c in chats] == [
        ("tool_calls",),
        ("stop",),
    ]
    for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):
        assert a[key] == sum(c.attributes[key] for c in chats)
    for number, tool in enumerate(tools, 1):
        t = tool.attributes
        assert t["gen_ai.operation.name"] == "execute_tool"
        assert t["gen_ai.tool.call.id"] == call_id(server, number)
        assert t["gen_ai.tool.type"] == "function"
        assert "error.type" not in t
        assert not tool.error
    assert [t.attributes["gen_ai.tool.name"] for t in tools] == ["echo", "add"]
    # the calls run after the first request and before the second
    assert min(t.start for t in tools) >= chats[0].end
    assert chats[1].start >= max(t.end for t in tools)


class Receiver:
    """An OTLP/HTTP trace receiver: ``POST /v1/traces`` with protobuf bodies."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.services: list[str] = []
        self.paths: list[str] = []
        self.changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                with receiver.changed:
                    receiver.paths.append(self.path)
                    if self.headers.get("content-type") == "application/x-protobuf":
                        receiver.spans += from_otlp(body)
                        receiver.services += service_names(body)
                    receiver.changed.notify_all()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait_for(self, prefix: str, timeout: float = 30) -> list[Span]:
        """Every span received once one named ``prefix...`` has arrived."""
        with self.changed:
            found = self.changed.wait_for(lambda: named(self.spans, prefix), timeout)
            assert found, f"no {prefix} span within {timeout} s; received {self.spans}"
            return list(self.spans)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
