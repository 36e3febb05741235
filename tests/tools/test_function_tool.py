"""@tool: the same definition from a function's signature, hints and docstring."""

from __future__ import annotations

import enum
from typing import Annotated, Any

import jsonschema
import pydantic
import pytest

from harness import Context, ToolArgsError, ToolDefinitionError, tool

from .conftest import tool_plugin


class Mode(enum.Enum):
    FAST = "fast"
    SLOW = "slow"


class Point(pydantic.BaseModel):
    x: int
    y: int


@tool
async def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@tool(name="search_notes", timeout=5, annotations={"read_only": True})
def search(
    query: Annotated[str, pydantic.Field(description="Words to look for")],
    limit: int = 10,
    mode: Mode = Mode.FAST,
    near: Point | None = None,
) -> list[str]:
    """Search the notes for a query.

    Use when the user asks about something they wrote down.

    Args:
        query: Ignored, the Field description wins.
        limit: How many results at most,
            counting from the best.
        mode: How hard to look.
    """
    return [f"{query}:{limit}:{mode.value}:{near.x if near else '-'}"]


def test_schema_from_signature_and_docstring() -> None:
    assert add.name == "add"
    assert add.description == "Add two numbers."
    assert add.parameters == {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    }
    assert add.output_schema == {"type": "number"}
    assert add.is_async


def test_descriptions_defaults_and_nested_models() -> None:
    assert search.name == "search_notes"
    assert search.timeout == 5.0
    assert search.concurrency_safe is True
    assert search.description == (
        "Search the notes for a query.\n\nUse when the user asks about something they wrote down."
    )
    props = search.parameters["properties"]
    assert props["query"] == {"type": "string", "description": "Words to look for"}
    assert props["limit"] == {
        "type": "integer",
        "default": 10,
        "description": "How many results at most, counting from the best.",
    }
    assert props["mode"]["description"] == "How hard to look."
    assert search.parameters["required"] == ["query"]
    assert search.output_schema == {"type": "array", "items": {"type": "string"}}
    jsonschema.Draft202012Validator.check_schema(search.parameters)


def test_args_validated_strictly_with_paths() -> None:
    with pytest.raises(ToolArgsError) as caught:
        search.bind({"query": 1, "limit": "3", "near": {"x": 1}})
    assert caught.value.issues == (
        "query: expected string, got integer",
        "limit: expected integer, got string",
        "near.y: required property is missing",
    )
    body = search.bind({"query": "q", "mode": "slow", "near": {"x": 2, "y": 3}, "extra": 1})
    assert body() == ["q:10:slow:2"]


def test_sphinx_docstring_params() -> None:
    @tool
    def scale(value: float, factor: float = 2.0) -> float:
        """Scale a value.

        :param value: The value to scale.
        :param factor: The factor.
        """
        return value * factor

    assert scale.description == "Scale a value."
    assert scale.parameters["properties"]["value"]["description"] == "The value to scale."
    assert scale.parameters["required"] == ["value"]


def test_definition_errors() -> None:
    def undocumented(a: int) -> int:
        return a

    with pytest.raises(ToolDefinitionError, match="give the function a docstring"):
        tool(undocumented)

    def star(*args: int) -> None:
        """Star."""

    with pytest.raises(ToolDefinitionError, match=r"\*args parameters cannot be described"):
        tool(star)


@pytest.mark.anyio
async def test_tool_result_is_the_return_value(root: Context) -> None:
    await root.plugin(tool_plugin(add, search))
    result = await root.tools.execute({"id": "1", "name": "add", "args": {"a": 10, "b": 20}})
    assert result.ok
    assert result.result == 30
    found = await root.tools.execute({"id": "2", "name": "search_notes", "args": '{"query":"x"}'})
    assert found.result == ["x:10:fast:-"]
    assert found.content == [{"type": "text", "text": '["x:10:fast:-"]'}]


@pytest.mark.anyio
async def test_return_value_checked_against_annotation(root: Context) -> None:
    @tool
    def liar() -> int:
        """Return a string despite the annotation."""
        return "nope"  # type: ignore[return-value]

    await root.plugin(tool_plugin(liar))
    result = await root.tools.execute({"id": "1", "name": "liar", "args": {}})
    assert result.code == "invalid_output"
    assert result.error == "Tool liar returned invalid output: expected integer, got string"


@pytest.mark.anyio
async def test_registering_a_plain_function(root: Context) -> None:
    def apply(ctx: Context) -> None:
        def shout(text: str) -> str:
            """Upper-case the text."""
            return text.upper()

        ctx.tools.register(shout)

    apply.inject = ["tools"]  # type: ignore[attr-defined]
    await root.plugin(apply)
    result = await root.tools.execute({"id": "1", "name": "shout", "args": {"text": "hi"}})
    assert result.result == "HI"


def test_any_parameter_is_open_json() -> None:
    @tool
    def store(value: Any) -> None:
        """Store any JSON value."""

    assert store.parameters["properties"]["value"] == {}
    assert store.output_schema is None


@pytest.mark.anyio
async def test_float_parameters_keep_whole_integers_as_int(root: Context) -> None:
    @tool
    def total(a: float, b: float | None = None, more: list[float] | None = None) -> float:
        """Add numbers."""
        return a + (b or 0) + sum(more or ())

    @tool
    def halves(values: dict[str, float]) -> dict[str, float]:
        """Keep the values."""
        return values

    assert total.parameters["properties"]["a"] == {"type": "number"}
    await root.plugin(tool_plugin(total, halves))
    cases = [
        ({"a": 1, "b": 2}, 3, "3"),
        ({"a": 1, "b": 2, "more": [3, 4]}, 10, "10"),
        ({"a": 1.5, "b": 2}, 3.5, "3.5"),
        ({"a": 1.0}, 1.0, "1.0"),
    ]
    for args, value, text in cases:
        result = await root.tools.execute({"name": "total", "args": args})
        assert (result.result, type(result.result)) == (value, type(value)), args
        assert result.content == [{"type": "text", "text": text}]
    kept = await root.tools.execute({"name": "halves", "args": {"values": {"x": 2, "y": 0.5}}})
    assert kept.result == {"x": 2, "y": 0.5}
    assert type(kept.result["x"]) is int
    refused = await root.tools.execute({"name": "total", "args": {"a": True}})
    assert refused.error == "Invalid arguments for tool total: a: expected number, got boolean"
