from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from harness import Host

from .clean_tree import pytest_sessionfinish, pytest_sessionstart
from .helpers import ALL_ON, project_copy

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

__all__ = ["pytest_sessionfinish", "pytest_sessionstart"]  # the suite leaves the tree clean


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run every async test on both of anyio's backends."""
    return str(request.param)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty workspace the bundled file tools are pointed at (``HARNESS_WORKSPACE``)."""
    folder = tmp_path / "workspace"
    folder.mkdir()
    monkeypatch.setenv("HARNESS_WORKSPACE", str(folder))
    return folder


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """A project of the test's own: the pristine template and the bundled plugins, copied."""
    return project_copy(tmp_path / "project")


@pytest.fixture
async def host(config: Path, workspace: Path) -> AsyncIterator[Host]:
    """The default project (:func:`config`), running, with its file and git tools on."""
    async with Host(config, overrides=ALL_ON) as running:
        yield running


@pytest.fixture
def exported() -> Iterator[InMemorySpanExporter]:
    """Spans of this test, recorded in memory through harness's own tracer switch (the global
    provider is left alone). The SDK is imported here, so only the trace tests load it."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from harness.tools import traces

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    traces.use(provider)
    try:
        yield exporter
    finally:
        traces.use(None)
        provider.shutdown()
