"""The registry: effects of the caller, duplicates, change events, schema formats."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest

from harness import Context, ToolConflict, ToolsService, define_tool, tool
from harness.tools.formats import qualifies_for_strict

from .conftest import tool_plugin

pytestmark = pytest.mark.anyio

LOOKUP = define_tool(
    name="lookup",
    description="Look up a word",
    parameters={
        "word": {"type": "string", "required": True},
        "opts": {
            "type": "object",
            "required": True,
            "properties": {"lang": {"type": "string", "required": True}},
            "additionalProperties": False,
        },
    },
    output={"schema": {"type": "string"}},
    annotations={"read_only": True, "open_world": False},
    timeout=3,
    execute=lambda args: args["word"],
)
LOOSE = define_tool(
    name="loose",
    description="Take anything",
    parameters={"data": {"type": "json", "required": True}, "maybe": {"type": "string"}},
    output={"schema": {"ok": {"type": "boolean"}}},
    execute=lambda args: {"ok": True},
)


async def test_duplicate_name_raises_naming_the_holder(root: Context) -> None:
    await root.plugin(tool_plugin(LOOKUP, name="first"))
    second = root.plugin(tool_plugin(LOOKUP, name="second"))
    with pytest.raises(ToolConflict) as caught:
        await second
    assert str(caught.value) == (
        "tool 'lookup' is already registered by plugin 'first'; plugin 'second' cannot "
        "register it too (rename one of them or unload the holder)"
    )
    assert second.state == "failed"
    assert root.tools.list() == ["lookup"]
    assert root.tools.owner("lookup") == "plugin 'first'"


async def test_register_returns_dispose_and_emits_changes(root: Context) -> None:
    changes: list[tuple[str, str]] = []
    root.on("tools/change", lambda kind, name: changes.append((kind, name)))
    dispose = root.tools.register(LOOKUP)
    assert root.tools.list() == ["lookup"]
    dispose()
    dispose()
    assert root.tools.list() == []
    fiber = await root.plugin(tool_plugin(LOOSE))
    await fiber.dispose()
    assert changes == [
        ("added", "lookup"),
        ("removed", "lookup"),
        ("added", "loose"),
        ("removed", "loose"),
    ]


async def test_anthropic_and_mcp_formats(root: Context) -> None:
    await root.plugin(tool_plugin(LOOKUP, LOOSE))
    anthropic = root.tools.schemas("anthropic")
    assert anthropic[0] == {
        "name": "lookup",
        "description": "Look up a word",
        "input_schema": LOOKUP.parameters,
    }
    mcp = root.tools.schemas("mcp")
    assert mcp[0] == {
        "name": "lookup",
        "description": "Look up a word",
        "inputSchema": LOOKUP.parameters,
        "outputSchema": {
            "type": "object",
            "properties": {"result": {"type": "string"}},
            "required": ["result"],
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    }
    assert mcp[1]["outputSchema"] == LOOSE.output_schema
    assert "annotations" not in mcp[1]
    for entry in mcp:
        assert "timeout" not in str(entry)
    for schema in [*(e["input_schema"] for e in anthropic), *(e["outputSchema"] for e in mcp)]:
        jsonschema.Draft202012Validator.check_schema(schema)
    with pytest.raises(ValueError, match="unknown schema format 'gemini'"):
        root.tools.schemas("gemini")


async def test_strict_openai_only_for_qualifying_tools(root: Context) -> None:
    await root.plugin(tool_plugin(LOOKUP, LOOSE))
    strict = root.tools.schemas("openai", strict=True)
    assert strict[0]["function"]["strict"] is True
    assert strict[0]["function"]["parameters"]["additionalProperties"] is False
    assert "strict" not in strict[1]["function"]
    assert "additionalProperties" not in strict[1]["function"]["parameters"]
    assert "strict" not in root.tools.schemas("openai")[0]["function"]
    for entry in strict:
        jsonschema.Draft202012Validator.check_schema(entry["function"]["parameters"])


async def test_strict_default_comes_from_service_config() -> None:
    async with Context() as root:
        await root.plugin(ToolsService, {"strict": True})
        await root.plugin(tool_plugin(LOOKUP))
        assert root.tools.schemas()[0]["function"]["strict"] is True


@pytest.mark.parametrize(
    ("parameters", "expected"),
    [
        ({"a": {"type": "string", "required": True}}, True),
        ({"a": {"type": "string"}}, False),
        ({"a": {"type": "json", "required": True}}, False),
        ({"a": {"type": "object", "required": True}}, False),
        ({"a": {"type": "object", "required": True, "additionalProperties": False}}, True),
        ({"a": {"type": "array", "required": True}}, False),
        ({"a": {"type": "array", "items": {"type": "integer"}, "required": True}}, True),
        ({"a": {"oneOf": [{"type": "string"}], "required": True}}, False),
        ({"a": {"type": "string", "enum": ["x"], "required": True}}, True),
        ({}, True),
    ],
)
def test_strict_eligibility(parameters: dict[str, Any], expected: bool) -> None:
    definition = define_tool(name="t", description="d", parameters=parameters, execute=print)
    assert qualifies_for_strict(definition.parameters) is expected


def test_strict_eligibility_of_function_tools() -> None:
    @tool
    def both(a: int, b: str) -> None:
        """Both required."""

    @tool
    def optional(a: int = 1) -> None:
        """One optional."""

    assert qualifies_for_strict(both.parameters)
    assert not qualifies_for_strict(optional.parameters)


@pytest.mark.parametrize("format", ["openai", "anthropic", "mcp"])
async def test_schemas_are_read_only_snapshots(root: Context, format: Any) -> None:
    await root.plugin(tool_plugin(LOOKUP))
    first = root.tools.schemas(format)
    with pytest.raises(TypeError, match="read-only snapshot"):
        first[0]["name" if format != "openai" else "type"] = "changed"
    params = {
        "openai": lambda schema: schema["function"]["parameters"],
        "anthropic": lambda schema: schema["input_schema"],
        "mcp": lambda schema: schema["inputSchema"],
    }[format](first[0])
    with pytest.raises(TypeError, match="read-only snapshot"):
        params["required"].append("extra")
    with pytest.raises(TypeError, match="read-only snapshot"):
        params["properties"].pop("word")
    assert LOOKUP.parameters["required"] == ["word", "opts"]
    # built once per change: the same snapshot until the registry changes
    second = root.tools.schemas(format)
    assert second is not first
    assert second[0] is first[0]
    first.append({"mine": True})  # the list is the caller's own
    assert len(root.tools.schemas(format)) == 1
    copied = copy.deepcopy(second[0])
    copied["extra"] = [1]
    assert type(copied) is dict
    assert json.loads(json.dumps(second[0])) == second[0]
    dispose = root.tools.register(LOOSE)
    after = root.tools.schemas(format)
    assert after[0] is not first[0]
    assert after[0] == first[0]
    assert len(after) == 2
    dispose()
    assert len(root.tools.schemas(format)) == 1


async def test_strict_and_plain_snapshots_are_kept_apart(root: Context) -> None:
    await root.plugin(tool_plugin(LOOKUP))
    strict = root.tools.schemas("openai", strict=True)[0]["function"]
    plain = root.tools.schemas("openai")[0]["function"]
    assert strict["strict"] is True
    assert "strict" not in plain


def _named(name: str) -> Any:
    return define_tool(name=name, description=f"Tool {name}", execute=lambda args: name)


async def test_tools_are_ordered_by_their_plugins_position(root: Context) -> None:
    first = root.plugin(tool_plugin(_named("b1"), _named("b2"), name="b"))
    await first
    await root.plugin(tool_plugin(_named("a1"), name="a"))
    root.tools.register(_named("loose"))  # the root's own tools have no position: last
    assert root.tools.list() == ["b1", "b2", "a1", "loose"]
    root.tools.order_by({"a": 0, "b": 1})
    assert root.tools.list() == ["a1", "b1", "b2", "loose"]
    assert [s["name"] for s in root.tools.schemas("mcp")] == ["a1", "b1", "b2", "loose"]
    await first.dispose()
    assert root.tools.list() == ["a1", "loose"]
    await root.plugin(tool_plugin(_named("b1"), _named("b2"), name="b"))
    assert root.tools.list() == ["a1", "b1", "b2", "loose"]
