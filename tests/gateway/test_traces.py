"""The trace goes on across the gateway: a mounted call's span parents the upstream's spans.

The upstream is ``harness mcp`` (stdio), exporting over OTLP/HTTP to a receiver the test
starts; the local host records into memory. The MCP client carries the W3C trace context in
the request's ``_meta``, and the upstream's spans join the local call's trace beneath it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness import Host

from ..helpers import HARNESS
from ..spans import Receiver, Span, from_sdk, named
from .conftest import write_config

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).parents[2]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.close()


def ancestors(span: Span, spans: list[Span]) -> list[int]:
    by_id = {s.span_id: s for s in spans}
    chain = []
    parent = span.parent_id
    while parent is not None:
        chain.append(parent)
        parent = by_id[parent].parent_id if parent in by_id else None
    return chain


async def test_a_mounted_call_parents_the_upstream_spans(
    tmp_path: Path, exported: InMemorySpanExporter, receiver: Receiver
) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    inner_config = write_config(inner, [{"id": "echo", "name": str(ROOT / "plugins" / "echo.py")}])
    entry = {
        "id": "inner",
        "name": "harness:mcp-client",
        "config": {
            "command": HARNESS,
            "args": ["mcp", "-c", str(inner_config)],
            "env": {
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
                "OTEL_BSP_SCHEDULE_DELAY": "50",
                # a stdio upstream gets a minimal environment: run this tree's code
                "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            },
        },
    }
    async with Host(write_config(tmp_path, [entry])) as host:
        echoed = await host.tools.execute(
            {"id": "c1", "name": "inner_echo", "args": {"text": "hi"}}
        )
        assert echoed.result == {"text": "Echo: hi"}
        remote = receiver.wait_for("execute_tool echo")
    [local] = named([from_sdk(s) for s in exported.get_finished_spans()], "execute_tool inner_echo")
    [upstream] = named(remote, "execute_tool echo")
    assert upstream.trace_id == local.trace_id
    chain = ancestors(upstream, remote)
    assert chain[-1] == local.span_id  # through the upstream's MCP server span, to ours
    assert len(chain) >= 1
    assert set(receiver.services) == {"harness"}
