"""The hot path's shortcuts give exactly the answers of the full checks they skip.

A call of plain scalar arguments is judged in one pass by the tool's acceptor
(``checks.flat_acceptor``: JSON-ness and exact types together), else by exact type first
(``checks.object_check``) and its JSON-ness by a flat scan (``run._plain``); a scalar value is
rendered without the general renderer. Random arguments and values — NaN, infinities, lone
surrogates, bools where numbers are expected, integral floats, missing and extra keys — are
checked against independent oracles: the ``jsonschema`` library on the emitted schema, and
JSON text itself.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import Context, ToolCall, ToolsService, define_tool
from harness.tools import jsonvalue
from harness.tools.schema import compile_parameters

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.sampled_from(["\ud800", "caf\u00e9", "\udfff x", 1.0, 2.5, -0.0]),
)
KEYS = st.sampled_from(["a", "n", "s", "t", "z", "extra", "\u00e9", "\ud800"])
PARAMETERS = {
    "a": {"type": "number", "required": True},
    "n": {"type": "integer"},
    "s": {"type": "string"},
    "t": {"type": "boolean"},
    "z": {"type": "null"},
}


def is_json(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        return False
    return True


async def run_calls(calls: list[Any], tool: Any) -> list[Any]:
    async with Context() as root:
        await root.plugin(ToolsService)
        root.tools.register(tool)
        return [await root.tools.execute(call) for call in calls]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(KEYS, SCALARS, max_size=6), min_size=1, max_size=8))
def test_arguments_are_judged_as_the_schema_and_json_say(argument_sets: list[Any]) -> None:
    async def echo(args: dict[str, Any]) -> str:
        return "ran"

    tool = define_tool(name="echo", description="e", parameters=PARAMETERS, execute=echo)
    calls = [ToolCall(str(i), "echo", args) for i, args in enumerate(argument_sets)]
    results = anyio.run(run_calls, calls, tool)
    validator = jsonschema.Draft202012Validator(tool.parameters)
    for args, result in zip(argument_sets, results, strict=True):
        expected_ok = is_json(args) and validator.is_valid(args)
        assert result.ok is expected_ok, (args, result.error)
        if not result.ok:
            assert result.code == "invalid_args", (args, result)


@settings(max_examples=100, deadline=None)
@given(st.lists(SCALARS, min_size=1, max_size=8))
def test_scalar_values_render_as_their_json_text(values: list[Any]) -> None:
    async def give(args: dict[str, Any]) -> Any:
        return values[args["i"]]

    tool = define_tool(
        name="give", description="g", parameters={"i": {"type": "integer"}}, execute=give
    )
    calls = [ToolCall(str(i), "give", {"i": i}) for i in range(len(values))]
    for value, result in zip(values, anyio.run(run_calls, calls, tool), strict=True):
        if not is_json(value):
            assert result.code == "invalid_output", (value, result)
            continue
        assert result.ok, (value, result.error)
        assert result.result is value
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        assert result.content == [{"type": "text", "text": text}]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(KEYS, SCALARS, max_size=6))
def test_the_acceptor_says_yes_only_to_json_that_passes_the_full_check(args: Any) -> None:
    schema, check, accepts = compile_parameters(PARAMETERS, "parameters")
    assert accepts is not None
    validator = jsonschema.Draft202012Validator(schema)
    if accepts(args):
        assert is_json(args), args
        assert validator.is_valid(args), args
        assert check(args) is None, args
        assert jsonvalue.problem(args) is None, args
    elif is_json(args) and validator.is_valid(args):
        # a no is only "ask the full check": here, only for what the acceptor leaves to it
        assert (
            any(type(v) is float and k == "n" for k, v in args.items())
            or any(type(v) is str and not v.isascii() for v in args.values())
            or set(args) - set(PARAMETERS)
        ), args


def test_the_acceptor_says_no_to_every_kind_of_trouble() -> None:
    _, _, accepts = compile_parameters(PARAMETERS, "parameters")
    assert accepts is not None
    assert accepts({"a": 1})
    assert accepts({"a": 1.5, "s": "x", "t": True, "z": None})
    _, _, all_required = compile_parameters(
        {"a": {"type": "number", "required": True}, "b": {"type": "string", "required": True}},
        "parameters",
    )
    assert all_required is not None
    assert all_required({"a": 1, "b": "x"})
    assert not all_required({"a": 1})
    assert not all_required({"a": 1, "c": "x"})
    assert not all_required({"a": 1, "b": "x", "c": 1})
    troubles: list[dict[Any, Any]] = [
        {},  # a required property missing
        {"n": 1},
        {"a": True},  # a bool is not a number
        {"a": "1"},
        {"a": float("nan")},
        {"a": 1, "more": 2},  # a key the spec does not name: the full check judges it
        {"a": 1, "more": float("inf")},
        {"a": 1, "s": "caf\u00e9"},  # non-ASCII strings take the full check
        {"a": 1, "\u00e9": 1},
        {"a": 1, 3: 1},
        {"a": 1, "more": [1]},  # containers take the full check
        {"a": 1, "more": {"b": 1}},
        {"a": 1, "n": 2.0},  # an integral float: valid, but not by exact type
    ]
    for bad in troubles:
        assert accepts(bad) is False, bad


@pytest.mark.parametrize(
    "parameters",
    [
        {},
        {"a": {"type": "string", "enum": ["x"]}},
        {"a": {"type": "array"}},
        {"a": {"type": "object", "properties": {}}},
        {"\u00e9": {"type": "string"}},
        {"a": {"type": "json"}},
    ],
)
def test_no_acceptor_for_properties_exact_types_cannot_judge(parameters: Any) -> None:
    assert compile_parameters(parameters, "parameters")[2] is None


def test_property_names_never_reach_the_acceptors_source() -> None:
    """The acceptor is written out for its spec; a hostile property name (a tool's schema may
    come from an upstream MCP server) is a value it compares, never code it runs."""
    hostile = [
        '"); import os; os._exit(1); ("',
        "a\nreturn True",
        "k0",
        "M",
        "args",
        "__import__('os').system('false')",
    ]
    parameters = {key: {"type": "string", "required": True} for key in hostile}
    _, check, accepts = compile_parameters(parameters, "parameters")
    assert accepts is not None
    args = {key: key for key in hostile}
    assert accepts(args) is True
    assert check(args) is None
    assert accepts({**args, hostile[0]: 1}) is False
    assert accepts({key: key for key in hostile[1:]}) is False


@pytest.mark.anyio
async def test_a_scalar_results_text_is_made_on_first_read_and_kept() -> None:
    """The kernel leaves a plain scalar's text to the first reader: the blocks are the same as
    made at once, one list on every read, and a pickled or compared result carries them."""
    import pickle

    from harness import ToolResult

    async def give(args: dict[str, Any]) -> Any:
        return [3.5, 7, "text"][args["i"]]

    tool = define_tool(
        name="give", description="g", parameters={"i": {"type": "integer"}}, execute=give
    )
    results = await run_calls([ToolCall(str(i), "give", {"i": i}) for i in range(3)], tool)
    for result, text in zip(results, ["3.5", "7", "text"], strict=True):
        again = pickle.loads(pickle.dumps(result))
        assert again.content == [{"type": "text", "text": text}]
        assert result.content is result.content
        assert result.content == [{"type": "text", "text": text}]
        assert again == result
        assert result == ToolResult(result.id, "give", result.result, result.content)
        assert "content=[{'type': 'text', 'text': " in repr(result)
        assert result.to_dict()["content"] == [{"type": "text", "text": text}]
    assert ToolResult("1", "x").content == []
