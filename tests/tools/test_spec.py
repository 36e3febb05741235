"""define_tool's parameter spec: every node type, nested paths, definition-time errors."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from harness import ToolArgsError, ToolDefinitionError, define_tool
from harness.tools.definition import ToolDefinition


def make(parameters: dict[str, Any], **extra: Any) -> ToolDefinition:
    return define_tool(
        name="t", description="A test tool", parameters=parameters, execute=lambda a: a, **extra
    )


def issues(definition: ToolDefinition, args: Any) -> str | None:
    try:
        definition.bind(args)
    except ToolArgsError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize(
    ("node", "valid", "invalid", "message"),
    [
        ({"type": "string"}, ["", "x"], [1, None, True], "expected string, got {}"),
        ({"type": "number"}, [1, 1.5, -2], ["1", True, None], "expected number, got {}"),
        ({"type": "integer"}, [1, 1.0, -3], [1.5, "1", True], "expected integer, got {}"),
        ({"type": "boolean"}, [True, False], [0, "true", None], "expected boolean, got {}"),
        ({"type": "null"}, [None], [0, "", False], "expected null, got {}"),
        ({"type": "array"}, [[], [1, "a"]], [{}, "a"], "expected array, got {}"),
        ({"type": "object"}, [{}, {"k": 1}], [[], 1], "expected object, got {}"),
        ({"type": "json"}, [None, 1, "a", [1], {"a": 1}], [], ""),
    ],
)
def test_each_type(
    node: dict[str, Any], valid: list[Any], invalid: list[Any], message: str
) -> None:
    from harness.tools.checks import json_type

    tool = make({"v": node})
    for value in valid:
        assert issues(tool, {"v": value}) is None, value
    for value in invalid:
        assert issues(tool, {"v": value}) == "v: " + message.format(json_type(value)), value


def test_enum_and_const_use_json_equality() -> None:
    tool = make({"mode": {"type": "string", "enum": ["fast", "slow"]}, "one": {"const": 1}})
    assert issues(tool, {"mode": "fast", "one": 1.0}) is None
    assert issues(tool, {"mode": "medium"}) == 'mode: expected one of "fast", "slow", got "medium"'
    assert issues(tool, {"one": True}) == "one: expected 1, got true"
    assert issues(make({"n": {"type": "integer", "enum": [1, 2]}}), {"n": True}) == (
        "n: expected integer, got boolean"
    )


def test_one_of_means_exactly_one() -> None:
    tool = make({"v": {"oneOf": [{"type": "number"}, {"type": "integer"}, {"type": "string"}]}})
    assert issues(tool, {"v": 1.5}) is None
    assert issues(tool, {"v": "x"}) is None
    assert issues(tool, {"v": 2}) == "v: matches 2 of the oneOf options; it must match exactly one"
    assert issues(tool, {"v": None}) == (
        "v: matches none of the oneOf options (expected number, got null | "
        "expected integer, got null | expected string, got null)"
    )


def test_nested_paths_collect_every_violation() -> None:
    tool = make(
        {
            "a": {
                "type": "object",
                "required": True,
                "properties": {
                    "b": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"c": {"type": "string", "required": True}},
                            "additionalProperties": False,
                        },
                    }
                },
            },
            "n": {"type": "integer", "required": True},
        }
    )
    assert issues(tool, {"a": {"b": [{"c": "ok"}, {"c": 1}, {"x": 1}]}, "n": "2"}) == (
        "a.b[1].c: expected string, got integer; a.b[2].c: required property is missing; "
        "a.b[2].x: unexpected property (not allowed here); n: expected integer, got string"
    )
    assert issues(tool, {}) == "a: required property is missing; n: required property is missing"
    assert issues(tool, []) == "expected object, got array"


def test_root_stays_open_and_extra_keys_pass_through() -> None:
    tool = make({"a": {"type": "string"}})
    body = tool.bind({"a": "x", "extra": 1})
    assert body() == {"a": "x", "extra": 1}


def test_emitted_schema_for_every_node_form() -> None:
    tool = make(
        {
            "s": {"type": "string", "description": "d", "default": "x", "examples": ["y"]},
            "e": {"type": "string", "enum": ["a"]},
            "c": {"const": 3},
            "arr": {"type": "array", "items": {"type": "integer"}},
            "obj": {
                "type": "object",
                "properties": {"k": {"type": "boolean", "required": True}},
                "additionalProperties": False,
            },
            "any": {"type": "json", "description": "anything"},
            "alt": {"oneOf": [{"type": "null"}, {"type": "number"}]},
            "r": {"type": "number", "required": True},
        }
    )
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "s": {"type": "string", "description": "d", "default": "x", "examples": ["y"]},
            "e": {"type": "string", "enum": ["a"]},
            "c": {"const": 3},
            "arr": {"type": "array", "items": {"type": "integer"}},
            "obj": {
                "type": "object",
                "properties": {"k": {"type": "boolean"}},
                "required": ["k"],
                "additionalProperties": False,
            },
            "any": {"description": "anything"},
            "alt": {"oneOf": [{"type": "null"}, {"type": "number"}]},
            "r": {"type": "number"},
        },
        "required": ["r"],
    }
    jsonschema.Draft202012Validator.check_schema(tool.parameters)


def test_default_is_documentation_only() -> None:
    tool = make({"n": {"type": "integer", "default": 5}})
    assert tool.bind({})() == {}


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        (
            {"text": {"type": "string", "requried": True}},
            "tool 't': parameters.text: unknown key 'requried' (did you mean 'required'?); "
            "allowed keys are const, default, description, enum, examples, oneOf, required, "
            "type",
        ),
        (
            {"text": {"type": "str"}},
            "tool 't': parameters.text.type: unknown type 'str'; use one of string, number, "
            "integer, boolean, null, array, object, json (did you mean 'string'?)",
        ),
        (
            {"list": {"type": "array", "items": {"type": "string", "required": True}}},
            "tool 't': parameters.list[]: unknown key 'required' ('required' belongs on object "
            "properties); allowed keys are const, default, description, enum, examples, oneOf, "
            "type",
        ),
        (
            {"x": "string"},
            "tool 't': parameters.x: expected a spec node such as {'type': 'string'}",
        ),
        (
            {"x": {"description": "no type"}},
            "tool 't': parameters.x: a spec node needs 'type', 'oneOf', 'const' or 'enum'",
        ),
        (
            {"x": {"type": "string", "enum": []}},
            "tool 't': parameters.x.enum: expected a non-empty list of values",
        ),
        (
            {"x": {"type": "string", "required": "yes"}},
            "tool 't': parameters.x.required: expected true or false, got 'yes'",
        ),
        (
            {"x": {"type": "object", "properties": {"y": {"type": "nope"}}}},
            "tool 't': parameters.x.y.type: unknown type 'nope'; use one of string, number, "
            "integer, boolean, null, array, object, json",
        ),
    ],
)
def test_malformed_specs_are_rejected_at_definition(parameters: Any, message: str) -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        make(parameters)
    assert str(caught.value) == message


def test_other_definition_errors() -> None:
    with pytest.raises(ToolDefinitionError, match="tool name 'bad name' is invalid"):
        define_tool(name="bad name", description="d", execute=lambda a: a)
    with pytest.raises(ToolDefinitionError, match="description must be a non-empty string"):
        define_tool(name="t", description=" ", execute=lambda a: a)
    with pytest.raises(ToolDefinitionError, match="timeout must be a positive number"):
        make({}, timeout=0)
    with pytest.raises(ToolDefinitionError, match="unknown annotation 'readonly'"):
        make({}, annotations={"readonly": True})
    with pytest.raises(ToolDefinitionError, match="output has unknown keys"):
        make({}, output={"schema": {}, "format": "x"})


def test_output_schema_as_property_map_or_single_node() -> None:
    as_map = make({}, output={"schema": {"ok": {"type": "boolean", "required": True}}})
    assert as_map.output_schema == {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
    }
    single = make({}, output={"schema": {"type": "number"}})
    assert single.output_schema == {"type": "number"}
    assert single.check_output(3) == 3


def test_annotations_accept_both_spellings() -> None:
    a = make({}, annotations={"read_only": True, "openWorldHint": False})
    assert a.annotations.to_mcp() == {"readOnlyHint": True, "openWorldHint": False}
    assert a.concurrency_safe is True
    assert make({}).concurrency_safe is False


def _cyclic_object() -> dict[str, Any]:
    node: dict[str, Any] = {"type": "object"}
    node["properties"] = {"child": node}
    return node


def _cyclic_items() -> dict[str, Any]:
    node: dict[str, Any] = {"type": "array"}
    node["items"] = node
    return node


def _cyclic_value() -> list[Any]:
    value: list[Any] = []
    value.append(value)
    return value


def _deep(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        node = {"type": "array", "items": node}
    return node


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        (
            {"mode": {"type": "string", "enum": ["fast", 1]}},
            "parameters.mode.enum[1]: 1 can never be valid here (expected string, got integer)",
        ),
        (
            {"n": {"type": "integer", "enum": [1, True]}},
            "parameters.n.enum[1]: true can never be valid here (expected integer, got boolean)",
        ),
        (
            {"mode": {"enum": ["a", "b"], "const": "c"}},
            'parameters.mode.const: "c" is not one of the enum values, so no value can match; '
            "drop one of them",
        ),
        (
            {"n": {"type": "integer", "const": 1.5}},
            "parameters.n.const: 1.5 can never be valid here (expected integer, got number)",
        ),
        (
            {"flag": {"type": "boolean", "const": 1}},
            "parameters.flag.const: 1 can never be valid here (expected boolean, got integer)",
        ),
        (
            {"xs": {"type": "array", "items": {"type": "integer"}, "enum": [[1, "x"]]}},
            'parameters.xs.enum[0]: [1, "x"] can never be valid here ([1]: expected integer, '
            "got string)",
        ),
        (
            {"v": {"oneOf": [{"type": "string"}, {"type": "null"}], "const": 3}},
            "parameters.v.const: 3 can never be valid here (matches none of the oneOf options "
            "(expected string, got integer | expected null, got integer))",
        ),
        (
            {"s": {"type": "string", "default": {1, 2}}},
            "parameters.s.default: {1, 2} (set) is not a JSON value; use null, booleans, "
            "numbers, strings, lists and dicts",
        ),
        (
            {"s": {"type": "number", "examples": [1, float("nan")]}},
            "parameters.s.examples[1]: nan is not a JSON value (JSON has no NaN or infinity)",
        ),
        (
            {"s": {"type": "json", "default": {"a": {3: "x"}}}},
            "parameters.s.default.a: key 3 is not a string (JSON keys are strings)",
        ),
        (
            {"s": {"type": "json", "enum": [object]}},
            "parameters.s.enum[0]: <class 'object'> (type) is not a JSON value; use null, "
            "booleans, numbers, strings, lists and dicts",
        ),
        (
            {"s": {"type": "json", "default": _cyclic_value()}},
            "parameters.s.default[0]: contains itself (a cycle); a spec must be a finite tree",
        ),
        (
            {"tree": _cyclic_object()},
            "parameters.tree.child: contains itself (a cycle); a spec must be a finite tree",
        ),
        (
            {"list": _cyclic_items()},
            "parameters.list[]: contains itself (a cycle); a spec must be a finite tree",
        ),
        (
            {"deep": _deep(100)},
            "parameters.deep" + "[]" * 63 + ": nested too deeply (more than 64 levels)",
        ),
    ],
)
def test_unsatisfiable_non_json_and_cyclic_specs_are_rejected(
    parameters: dict[str, Any], message: str
) -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        make(parameters)
    assert str(caught.value) == "tool 't': " + message


def test_satisfiable_enum_and_const_combinations_still_define() -> None:
    tool = make(
        {
            "mode": {"type": "string", "enum": ["a", "b"], "const": "a", "default": "a"},
            "n": {"type": "integer", "const": 2.0, "examples": [2, {"k": [None, 1.5]}]},
            "v": {"oneOf": [{"type": "string"}, {"type": "null"}], "enum": ["x", None]},
        }
    )
    assert issues(tool, {"mode": "a", "n": 2, "v": None}) is None
    assert issues(tool, {"mode": "b"}) == 'mode: expected "a", got "b"'


@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), -1, 0, True, "5"])
def test_timeout_must_be_a_positive_finite_number(timeout: Any) -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        make({}, timeout=timeout)
    assert str(caught.value) == (
        "tool 't': timeout must be a positive number of seconds (None for no limit), "
        f"got {timeout!r}"
    )


def test_a_tool_declares_task_support_and_anything_else_is_refused_where_defined() -> None:
    from harness import define_tool, tool

    assert define_tool(name="t", description="d", execute=lambda a: 1).task is None
    assert define_tool(name="t", description="d", execute=lambda a: 1, task="required").task == (
        "required"
    )

    @tool(task="optional")
    def job() -> int:
        """Do a job."""
        return 1

    assert job.task == "optional"
    with pytest.raises(ToolDefinitionError) as caught:
        define_tool(name="t", description="d", execute=lambda a: 1, task="always")
    assert str(caught.value) == (
        "tool 't': task must be 'optional' or 'required' (None: no task support), got 'always'"
    )
    with pytest.raises(ToolDefinitionError) as caught:
        tool(task=True)(job.execute)  # type: ignore[call-overload]
    assert str(caught.value) == (
        "tool 'job': task must be 'optional' or 'required' (None: no task support), got True"
    )


def test_ask_first_is_for_task_tools_and_is_checked_where_defined() -> None:
    from harness import define_tool, tool

    assert (
        define_tool(name="t", description="d", execute=lambda a: 1, task="required").ask_first
        is False
    )

    @tool(task="optional", ask_first=True)
    def job() -> int:
        """Do a job."""
        return 1

    assert (job.task, job.ask_first) == ("optional", True)
    with pytest.raises(ToolDefinitionError) as caught:
        define_tool(name="t", description="d", execute=lambda a: 1, ask_first=True)
    assert str(caught.value) == (
        "tool 't': ask_first=True says when its task starts, but the tool runs as no task; "
        "give task='optional' or 'required' as well"
    )
    with pytest.raises(ToolDefinitionError) as caught:
        tool(task="required", ask_first="yes")(job.execute)  # type: ignore[call-overload]
    assert str(caught.value) == "tool 'job': ask_first must be True or False, got 'yes'"
