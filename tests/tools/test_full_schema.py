"""Parameters written as a JSON Schema 2020-12 document (a ``"$schema"`` key): listed as
written over MCP in both eras, validated as written with harness's ``invalid_args`` messages,
and refused when defined if they are not 2020-12, not an object, or not valid JSON Schema."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from harness import Context, ToolCall, ToolDefinitionError, ToolsService, define_tool
from harness.mcp import McpSurface

from .conftest import tool_plugin

pytestmark = pytest.mark.anyio
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string", "x-ui": {"widget": "text"}},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
    "x-owner": "conformance",
}


def contact() -> Any:
    return define_tool(
        name="contact",
        description="Record how to reach someone.",
        parameters=copy.deepcopy(SCHEMA),
        execute=lambda args: args,
    )


@pytest.fixture
async def loaded() -> AsyncIterator[Context]:
    async with Context() as ctx:
        await ctx.plugin(ToolsService)
        await ctx.plugin(tool_plugin(contact()))
        yield ctx


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_listed_over_mcp_as_written(loaded: Context, mode: str) -> None:
    surface = McpSurface(loaded)
    async with Client(surface.server, mode=mode) as client:
        (listed,) = (await client.list_tools()).tools
    assert listed.input_schema == SCHEMA
    assert loaded.tools.schemas("anthropic")[0]["input_schema"] == SCHEMA
    # sent as written: never closed or marked strict for OpenAI
    assert loaded.tools.schemas("openai", strict=True)[0]["function"] == {
        "name": "contact",
        "description": "Record how to reach someone.",
        "parameters": SCHEMA,
    }


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            {"contactMethod": "email"},
            "matches none of the anyOf alternatives (phone: required property is missing | "
            "email: required property is missing); email: required property is missing",
        ),
        (
            {"name": 3, "phone": "1", "zip": 1},
            "email: required property is missing; name: expected string, got integer; "
            "zip: unexpected property (not allowed here)",
        ),
        (
            '{"contactMethod": "phone", "email": "a", "address": {"city": 4}}',
            "address.city: expected string, got integer; phone: required property is missing",
        ),
    ],
)
async def test_validated_as_written(loaded: Context, args: Any, error: str) -> None:
    result = await loaded.tools.execute(ToolCall("c", "contact", args))
    assert (result.code, result.error) == (
        "invalid_args",
        f"Invalid arguments for tool contact: {error}",
    )


async def test_valid_arguments_reach_the_body(loaded: Context) -> None:
    args = {"contactMethod": "phone", "phone": "555", "address": {"city": "Oslo"}}
    result = await loaded.tools.execute(ToolCall("c", "contact", args))
    assert (result.code, result.result) == (None, args)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_invalid_call_over_mcp_is_an_error_result(loaded: Context) -> None:
    async with Client(McpSurface(loaded).server) as client:
        result = await client.call_tool("contact", {"phone": 5})
    assert result.is_error
    assert result.content[0].text == (  # type: ignore[union-attr]
        "Invalid arguments for tool contact: email: required property is missing; phone: "
        "expected string, got integer"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"$schema": "http://json-schema.org/draft-07/schema#"},
            "tool 'contact': parameters.$schema: 'http://json-schema.org/draft-07/schema#' is "
            "not JSON Schema 2020-12; write 'https://json-schema.org/draft/2020-12/schema' "
            "(or leave '$schema' out to use harness's parameter spec)",
        ),
        (
            {"type": "array"},
            "tool 'contact': parameters: a full JSON Schema of tool arguments needs \"type\": "
            '"object" at its root',
        ),
        (
            {"properties": {"a": {"type": "nope"}}},
            "tool 'contact': parameters: not valid JSON Schema: 'nope' is not valid under any "
            "of the given schemas",
        ),
    ],
)
def test_refused_when_defined(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolDefinitionError) as refused:
        define_tool(
            name="contact",
            description="Record how to reach someone.",
            parameters={**SCHEMA, **change},
            execute=lambda args: args,
        )
    assert str(refused.value) == message
