"""An OTLP collector that does not answer: one line naming it, and no wait at exit.

The SDK's exporter retries a failed batch with backoff for up to its timeout (10 s) and
logs every retry through Python's last-resort handler: three raw ``Transient error
HTTPConnectionPool(...)`` lines per batch, and, at exit, the last batch's retries keep the
command alive about 7 s after its work is done. :class:`Watch` stands between them and the
terminal. It drops the exporter's log records and says once, per outage, that the collector
at that endpoint did not take the spans (``--debug`` shows the records instead). When the
command ends, a collector that failed since it last took a batch gets no more tries: what is
left is dropped at once, and so is a last batch whose first try fails.

The records are told apart by their logger only (the exporter's module, which it logs
through and hands its HTTP client), never by their wording.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from typing import Any

import click
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


def endpoint(env: dict[str, str] | os._Environ[str] = os.environ) -> str:
    """Where the exporter sends spans, resolved as the OTLP/HTTP exporter does."""
    traces = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if traces:
        return traces
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or "http://localhost:4318"
    return base + ("v1/traces" if base.endswith("/") else "/v1/traces")


class Watch(SpanExporter, logging.Filter):
    """The exporter, wrapped: its log records become one line, its retries end at exit."""

    def __init__(self, inner: SpanExporter, where: str) -> None:
        logging.Filter.__init__(self)
        self.inner: SpanExporter | None = inner
        """None once shut down."""
        self.where = where
        self.failing = False
        """True from a failed try until a batch goes through."""
        self.closing = False
        self._said = False
        self._lock = threading.Lock()
        self._logger = logging.getLogger(type(inner).__module__)

    def attach(self) -> None:
        self._logger.addFilter(self)

    def detach(self) -> None:
        self._logger.removeFilter(self)

    # -- the exporter --------------------------------------------------------------------

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        inner = self.inner
        if inner is None:
            return SpanExportResult.FAILURE
        result = inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            with self._lock:
                self.failing = self._said = False  # a later outage is said again
        return result

    def shutdown(self) -> None:
        with self._lock:
            if self.inner is None:
                return
            inner, self.inner = self.inner, None
        inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        inner = self.inner
        return True if inner is None else inner.force_flush(timeout_millis)

    def close(self) -> None:
        """The command ends: a collector that is failing gets no more tries."""
        with self._lock:
            self.closing = True
            failing = self.failing
        if failing:
            self.shutdown()

    # -- the log filter -----------------------------------------------------------------

    def filter(self, record: logging.LogRecord) -> bool:
        debug = logging.getLogger("harness").isEnabledFor(logging.DEBUG)
        if record.levelno < logging.WARNING:
            return debug
        with self._lock:
            self.failing = True
            say, self._said = not self._said, True
            closing = self.closing
        if say and not debug:
            click.echo(
                f"harness: the OpenTelemetry collector at {self.where} did not take the spans "
                f"({_why(record)}); they are dropped until it does",
                err=True,
            )
        if closing:  # the exporter is about to wait for a retry: end it now
            self.shutdown()
        return debug  # --debug: the exporter's own words instead of the line


def _why(record: logging.LogRecord) -> str:
    """What went wrong, from a record's arguments (an exception or a status code)."""
    args: Any = record.args if isinstance(record.args, tuple) else ()
    for arg in args:
        if isinstance(arg, BaseException):
            text = str(arg)
            return "connection refused" if "Connection refused" in text else type(arg).__name__
    for arg in args:
        if type(arg) is int and 100 <= arg < 600:
            return f"HTTP {arg}"
    return "no answer"
