"""Name repair, filters and the JSON Schema adapter, from the outside of each function."""

from __future__ import annotations

import hashlib

import pytest

from harness.errors import ToolArgsError
from harness.gateway.names import default_prefix, mount_name, selected
from harness.gateway.schema import NullOmitter, UnusableSchema, compile_checker, input_schema
from harness.tools.definition import NAME_PATTERN


def digest(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:8]


@pytest.mark.parametrize(
    ("prefix", "upstream", "expected"),
    [
        ("up_", "echo", "up_echo"),
        ("", "get-sum", "get-sum"),
        ("", "files.read", f"files_read_{digest('files.read')}"),
        ("up_", "a b/c", f"up_a_b_c_{digest('a b/c')}"),
        ("up_", "x" * 70, "up_" + "x" * 52 + "_" + digest("x" * 70)),
    ],
)
def test_names_are_kept_or_repaired_deterministically(
    prefix: str, upstream: str, expected: str
) -> None:
    name = mount_name(prefix, upstream)
    assert name == expected
    assert NAME_PATTERN.match(name)
    assert mount_name(prefix, upstream) == name


def test_two_names_never_repair_to_one() -> None:
    assert mount_name("", "a.b") != mount_name("", "a_b")
    assert mount_name("", "a.b") != mount_name("", "a:b")


def test_default_prefix_and_filters() -> None:
    assert default_prefix("my.server") == "my_server_"
    assert selected("read_file", ["read_*"], [])
    assert not selected("read_file", ["*"], ["read_*"])
    assert not selected("Read_file", ["read_*"], [])


def test_schemas_become_objects_every_format_accepts() -> None:
    assert input_schema({}, 1024) == {"type": "object", "properties": {}}
    kept = {"type": "object", "properties": {"a": {"type": "string"}}, "$defs": {}}
    assert input_schema(kept, 1024) == kept
    with pytest.raises(UnusableSchema, match="type 'array'"):
        input_schema({"type": "array"}, 1024)
    with pytest.raises(UnusableSchema, match="not valid JSON Schema"):
        compile_checker({"type": "object", "properties": {"a": {"type": "nope"}}})


def test_violations_are_listed_with_paths() -> None:
    check = compile_checker(
        {
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
                "mode": {"enum": ["a", "b"]},
            },
            "required": ["items"],
            "additionalProperties": False,
            "$defs": {
                "item": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                }
            },
        }
    )
    check({"items": [{"name": "x"}], "mode": "a"})
    with pytest.raises(ToolArgsError) as caught:
        check({"items": [{"name": 1}, {}], "mode": "c", "extra": True})
    assert str(caught.value) == (
        "extra: unexpected property (not allowed here); items[0].name: expected string, got "
        "integer; items[1].name: required property is missing; mode: 'c' is not one of "
        "['a', 'b']"
    )


def test_a_remote_ref_is_never_fetched() -> None:
    check = compile_checker(
        {"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:9/schema.json"}}}
    )
    with pytest.raises(ToolArgsError, match=r"\$ref that does not resolve"):
        check({"a": 1})


def test_optional_nulls_the_schema_refuses_are_taken_as_not_given() -> None:
    parameters = {
        "type": "object",
        "properties": {
            "region": {"type": "string"},
            "verbose": {"type": "boolean"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "mode": {"$ref": "#/$defs/mode"},
        },
        "required": ["region"],
        "$defs": {"mode": {"enum": ["fast", None]}},
    }
    omit = NullOmitter(parameters)
    given = {"region": "eu", "verbose": None, "note": None, "mode": None, "extra": None}
    # verbose refuses null: dropped; note and mode admit it: kept; extra is not a property
    assert omit(given) == {"region": "eu", "note": None, "mode": None, "extra": None}
    assert omit({"region": None}) == {"region": None}  # required: the check refuses it
    plain = {"region": "eu"}
    assert omit(plain) is plain  # no null, nothing copied
    assert omit(["not", "a", "dict"]) == ["not", "a", "dict"]
