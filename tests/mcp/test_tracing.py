"""The SDK's OpenTelemetry middleware runs only when a tracer provider is installed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp.server.lowlevel.server import Server
from opentelemetry import trace

from harness import Host
from harness.mcp import McpSurface

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def host(config: Path) -> AsyncIterator[Host]:
    async with Host(config) as running:
        yield running


def names(server: Server[object]) -> list[str]:
    return [type(layer).__name__ for layer in server.middleware]


def test_the_sdk_still_ships_its_tracing_middleware_by_that_name() -> None:
    # McpSurface drops it by class name: a rename in the SDK must fail here, loudly
    assert names(Server("probe")) == ["OpenTelemetryMiddleware"]


async def test_without_a_tracer_provider_no_span_is_made(host: Host) -> None:
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    assert names(McpSurface(host.ctx).server) == []


async def test_with_a_tracer_provider_requests_are_traced(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Installed(trace.TracerProvider):
        def get_tracer(self, *args: object, **kwargs: object) -> trace.Tracer:
            return trace.NoOpTracer()

    monkeypatch.setattr(trace, "get_tracer_provider", lambda: Installed())
    assert names(McpSurface(host.ctx).server) == ["OpenTelemetryMiddleware"]
