"""Item: JSON means JSON — NaN, ±Infinity and lone surrogates never pass as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from harness import Host
from harness.mcp import McpSurface

from .conftest import harness, run

pytestmark = pytest.mark.anyio


def strict_json(text: str) -> Any:
    """Parse as a strict JSON reader would (no NaN/Infinity literals)."""

    def refuse(name: str) -> Any:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


async def test_infinite_result_is_invalid_output(host: Host) -> None:
    result = await run(host, "multiply", {"a": 1e308, "b": 10})
    assert result.code == "invalid_output"
    assert "$ is inf, which JSON cannot represent" in (result.error or "")
    assert strict_json(json.dumps(result.to_dict()))["code"] == "invalid_output"
    fine = await run(host, "multiply", {"a": 1e300, "b": 10})
    assert fine.ok
    assert fine.result == 1e301


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        ('{"a": NaN, "b": 1}', "NaN is not a JSON number"),
        ('{"a": Infinity, "b": 1}', "Infinity is not a JSON number"),
        ('{"a": -Infinity, "b": 1}', "-Infinity is not a JSON number"),
        ('{"a": 1e400, "b": 1}', "$.a is inf"),
        ({"a": float("nan"), "b": 1}, "$.a is nan"),
        ({"a": 1, "b": float("-inf")}, "$.b is -inf"),
    ],
)
async def test_non_finite_arguments_are_invalid_args(host: Host, args: Any, shown: str) -> None:
    result = await run(host, "multiply", args)
    assert result.code == "invalid_args", result
    assert shown in (result.error or "")


@pytest.mark.parametrize(
    "args", ['{"text": "\\ud800 alone"}', {"text": "\udc00"}, {"text": "ok", "\ud83d": 1}]
)
async def test_lone_surrogates_are_invalid_args(host: Host, args: Any) -> None:
    result = await run(host, "echo", args)
    assert result.code == "invalid_args", result
    assert "lone surrogate" in (result.error or "")
    pair = await run(host, "echo", '{"text": "\\ud83d\\ude00"}')  # a proper pair is fine
    assert pair.ok
    assert pair.result == {"text": "Echo: \U0001f600"}


async def test_deeply_nested_json_text_is_invalid_args(host: Host) -> None:
    result = await run(host, "echo", "[" * 100_000 + "]" * 100_000)
    assert result.code == "invalid_args"
    assert "nested too deeply" in (result.error or "")


def test_harness_call_json_output_is_strict_json(config: Path, workspace: Path) -> None:
    done = harness("call", "multiply", '{"a": 1e308, "b": 10}', "--json", "-c", str(config))
    report = strict_json(done.stdout)
    assert report["code"] == "invalid_output"
    assert done.returncode == 1
    literal = harness("call", "multiply", '{"a": NaN, "b": 1}', "--json", "-c", str(config))
    assert strict_json(literal.stdout)["code"] == "invalid_args"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the MCP SDK client runs on asyncio
async def test_mcp_client_gets_an_error_not_a_broken_result(host: Host) -> None:
    surface = McpSurface(host.ctx)
    surface.attach()
    async with Client(surface.server) as client:
        result = await client.call_tool("multiply", {"a": 1e308, "b": 10})
        assert result.is_error
        assert "invalid output" in result.content[0].text  # type: ignore[union-attr]
        fine = await client.call_tool("multiply", {"a": 2, "b": 3})
        assert fine.structured_content == {"result": 6.0}
