"""A ``run_code`` span parents the spans of the calls its program makes."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness import Host

from ..spans import from_sdk, named
from .conftest import project, run

pytestmark = pytest.mark.anyio

PROGRAM = """
import asyncio
one, two = await asyncio.gather(add(a=1, b=2), echo(text="x"))
three = await multiply(a=2, b=3)
[one, two["text"]]
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_run_code_parents_its_inner_calls(
    tmp_path: Path, exported: InMemorySpanExporter
) -> None:
    async with Host(project(tmp_path)) as host:
        result = await run(host, PROGRAM, "rc1")
    assert result.code == "tool_error"  # multiply is denied by the policy: the program fails
    spans = [from_sdk(span) for span in exported.get_finished_spans()]
    [outer] = named(spans, "execute_tool run_code")
    inner = [s for s in named(spans, "execute_tool ") if s is not outer]
    assert sorted(s.attributes["gen_ai.tool.name"] for s in inner) == ["add", "echo", "multiply"]
    for span in inner:
        assert span.parent_id == outer.span_id
        assert span.trace_id == outer.trace_id
        assert span.attributes["harness.tool.parent_call.id"] == "rc1"
    [denied] = [s for s in inner if s.attributes["gen_ai.tool.name"] == "multiply"]
    assert denied.attributes["error.type"] == "denied"
    assert outer.attributes["gen_ai.tool.call.id"] == "rc1"
    assert outer.attributes["error.type"] == "tool_error"
    assert min(s.start for s in inner) >= outer.start
    assert max(s.end for s in inner) <= outer.end
