"""Item: JSON means JSON — NaN, ±Infinity and lone surrogates never pass as JSON."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from harness import Host
from harness.mcp import McpSurface

from .conftest import PLUGINS, harness, run

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


LONG = """
from harness import define_tool, tool

inject = ["tools"]


@tool
def big() -> int:
    \"\"\"A number too long to write as JSON text.\"\"\"
    return 10**5000


@tool
def nested() -> dict:
    \"\"\"One inside an object.\"\"\"
    return {"n": [1, -(10**5000)]}


async def count(args):
    return args["n"] % 7


def apply(ctx):
    ctx.tools.register(big)
    ctx.tools.register(nested)
    ctx.tools.register(define_tool(
        name="count", description="n modulo 7", execute=count,
        parameters={"n": {"type": "integer", "required": True}}))
"""
TOO_LONG = "an integer of more than 4300 digits (the most a JSON number may have here)"


@pytest.fixture
def long_config(tmp_path: Path) -> Path:
    (tmp_path / "long.py").write_text(LONG, encoding="utf-8")
    config = tmp_path / "cordis.yml"
    config.write_text(
        f"insert:\n  - {{id: long, name: {tmp_path / 'long.py'}}}\n"
        f"  - {{id: multiply, name: {PLUGINS / 'multiply.py'}}}\n",
        encoding="utf-8",
    )
    return config


@pytest.fixture
async def long_host(long_config: Path) -> AsyncIterator[Host]:
    async with Host(long_config) as running:
        yield running


@pytest.mark.parametrize(("tool", "path"), [("big", "$"), ("nested", "$.n[1]")])
async def test_an_int_too_long_for_json_is_invalid_output(
    long_host: Host, tool: str, path: str
) -> None:
    result = await run(long_host, tool)
    assert result.code == "invalid_output", result
    assert result.error == (
        f"Tool {tool} returned invalid output: the result is not valid JSON: {path} is {TOO_LONG}"
    )
    assert strict_json(json.dumps(result.to_dict()))["code"] == "invalid_output"


@pytest.mark.parametrize(
    ("tool", "args", "shown"),
    [
        ("multiply", '{"a": 1' + "0" * 5000 + ', "b": 1}', "a number has more than 4300 digits"),
        ("multiply", {"a": 10**5000, "b": 1}, f"$.a is {TOO_LONG}"),
        ("count", {"n": -(10**5000)}, f"$.n is {TOO_LONG}"),  # the acceptor's quick yes too
    ],
)
async def test_an_int_too_long_for_json_is_invalid_args(
    long_host: Host, tool: str, args: Any, shown: str
) -> None:
    result = await run(long_host, tool, args)
    assert result.code == "invalid_args", result
    assert shown in (result.error or "")
    assert "set_int_max_str_digits" not in (result.error or "")
    fine = await run(long_host, "count", {"n": 10**4300 - 1})  # 4300 digits are fine
    assert fine.result == (10**4300 - 1) % 7


def test_harness_call_says_what_is_wrong_with_a_long_int(long_config: Path) -> None:
    for extra in ((), ("--json",)):
        done = harness("call", "big", *extra, "-c", str(long_config))
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stdout + done.stderr
        assert TOO_LONG in done.stdout + done.stderr
    assert strict_json(done.stdout)["code"] == "invalid_output"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the MCP SDK client runs on asyncio
async def test_mcp_client_gets_an_error_for_a_long_int(long_host: Host) -> None:
    surface = McpSurface(long_host.ctx)
    surface.attach()
    async with Client(surface.server) as client:
        result = await client.call_tool("big", {})
        assert result.is_error
        assert TOO_LONG in result.content[0].text  # type: ignore[union-attr]
        assert result.structured_content is None
        fine = await client.call_tool("multiply", {"a": 2, "b": 3})
        assert fine.structured_content == {"result": 6.0}
