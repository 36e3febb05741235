"""Span export for the commands that run a host, by the standard ``OTEL_*`` variables.

When ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set (or
``OTEL_TRACES_EXPORTER=otlp``), and ``OTEL_SDK_DISABLED`` is not ``true``, the OpenTelemetry SDK
is installed as the tracer provider with a batching OTLP exporter over ``http/protobuf``
(for ``grpc``, run under ``opentelemetry-instrument``). The exporter reads its own variables
(endpoint, headers, timeout, compression); ``OTEL_SERVICE_NAME`` and
``OTEL_RESOURCE_ATTRIBUTES`` name the service (``harness`` by default). Without the SDK it
says what to install (``pip install 'cordis-harness[otel]'``) and runs untraced. An
already-installed provider (``opentelemetry-instrument harness run``) is left as it is. A
collector that does not answer is said in one line, and does not hold up the exit
(:mod:`.otel_collector`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

INSTALL = "pip install 'cordis-harness[otel]'"


def wanted(env: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """Whether the environment asks for span export."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    endpoint = env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    )
    return bool(endpoint) or "otlp" in exporter


def setup() -> Callable[[], None]:
    """Install the exporting provider when asked; returns what flushes and stops it."""
    if not wanted():
        return _nothing
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        _say(
            f"the OTEL_* variables ask for traces, but the OpenTelemetry SDK is missing: {INSTALL}"
        )
        return _nothing
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return _nothing  # somebody installed one already: theirs
    exporter = _exporter()
    if exporter is None:
        return _nothing
    named = os.environ.get("OTEL_SERVICE_NAME") or "service.name=" in os.environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    provider = TracerProvider(
        resource=Resource.create({} if named else {"service.name": "harness"})
    )
    from .otel_collector import Watch, endpoint

    watch = Watch(exporter, endpoint())  # a collector that does not answer: one line
    watch.attach()
    provider.add_span_processor(BatchSpanProcessor(watch))
    trace.set_tracer_provider(provider)

    def stop() -> None:
        watch.close()
        provider.shutdown()
        watch.detach()

    return stop


def _exporter() -> SpanExporter | None:
    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if protocol != "http/protobuf":
        _say(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r}: harness exports over http/protobuf "
            "(for grpc, run it under opentelemetry-instrument with the grpc exporter)"
        )
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        _say(f"traces over OTLP/HTTP need opentelemetry-exporter-otlp-proto-http: {INSTALL}")
        return None
    return OTLPSpanExporter()


def _say(message: str) -> None:
    click.echo(f"harness: {message}; running without traces", err=True)


def _nothing() -> None:
    return None
