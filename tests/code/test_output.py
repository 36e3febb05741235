"""``max_output`` bounds what a program gives back: its printed output and its value together.

The value of the last expression used to bypass it: 20 MB went to the model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from harness import Host
from harness.code.results import Output, to_json
from harness.mcp import McpSurface

from .conftest import project, run

pytestmark = pytest.mark.anyio

NOTE = "[value truncated: the program's value ({shape}) is longer than max_output (1000) allows"


async def test_a_huge_value_is_cut_at_max_output_over_mcp(tmp_path: Path) -> None:
    config = project(tmp_path, "{timeout: 20, max_output: 1000, max_memory: 128MiB}")
    async with Host(config) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        async with Client(surface.server) as client:
            result = await client.session.call_tool("run_code", {"code": '"x" * 20_000_000'})
    assert result.is_error is False
    value = (result.structured_content or {})["value"]
    note = NOTE.format(shape="a string of 20000000 characters")
    assert value == '"' + "x" * 999 + "\n" + note + "; output and value share it]"
    sent = json.dumps(result.model_dump(mode="json"))
    assert len(sent) < 10_000  # the value once as structured content, once as text


async def test_the_value_gets_what_the_output_left(tmp_path: Path) -> None:
    config = project(tmp_path, "{timeout: 20, max_output: 1000}")
    async with Host(config) as host:
        program = 'print("p" * 599)\n[{"n": i, "tag": "t"} for i in range(1000)]'
        result = await run(host, program)
        assert result.ok, result.error
        output, value = result.result["output"], result.result["value"]
        assert output == "p" * 599 + "\n"
        whole = json.dumps([{"n": i, "tag": "t"} for i in range(1000)])
        head, note = value.split("\n")
        assert head == whole[:400]
        assert note == (
            NOTE.format(shape="a list of 1000 items")
            + " after the 600 characters of output; output and value share it]"
        )
        # a value that fits is the value itself, as JSON
        fits = await run(host, 'print("p" * 599)\n[[1, 2], (3, "四"), {"k": None}]')
        assert fits.result["value"] == [[1, 2], [3, "四"], {"k": None}]
        # output past the limit leaves the value nothing but the note...
        full = await run(host, 'print("p" * 5000)\n["y" * 300]')
        assert full.result["value"] == NOTE.format(shape="a list of 1 items") + (
            " after the 1000 characters of output; output and value share it]"
        )
        # ...unless the value is no longer than the note would be
        small = await run(host, 'print("p" * 5000)\n["y" * 100]')
        assert small.result["value"] == ["y" * 100]


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=400)
    | st.binary(max_size=8)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner)
        | st.tuples(inner, inner)
        | st.frozensets(st.integers() | st.text(max_size=3), max_size=4)
        | st.dictionaries(st.text() | st.integers() | st.tuples(st.integers()), inner)
    ),
    max_leaves=40,
)


# a loaded CI machine draws the recursive values slowly: no deadline, no too_slow check
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=values, printed=st.integers(0, 300), limit=st.integers(1, 300))
def test_a_cut_value_is_the_head_of_its_json_text_and_shorter(
    value: Any, printed: int, limit: int
) -> None:
    output = Output(limit)
    output.write("stdout", "p" * printed)
    fitted = output.fit(value)
    whole = json.dumps(to_json(value), ensure_ascii=False)
    room = limit - output.kept
    if value is None or len(whole) <= room:
        assert fitted == to_json(value)
    elif fitted == to_json(value):  # no longer than the note it would get
        assert len(whole) <= room + 250
    else:
        assert isinstance(fitted, str)
        assert len(fitted) < len(whole)
        cut = "\n[value truncated: the program's value (" if room else "[value truncated: "
        assert fitted.startswith(whole[:room] + cut)
