"""Parameter specs: checked when a tool is defined, emitted as JSON Schema, compiled to checks.

A spec node is a small mapping (``{"type": "string", "description": ...}``). :func:`compile_node`
turns one into a pair: its JSON Schema and a *check*, a closure tree built once that
validates a value with JSON Schema 2020-12 semantics (``"1"`` is not an integer, ``true`` is
not a number, ``1.0`` is an integer, ``oneOf`` means exactly one) and returns None, or every
violation as ``(path, message)``. Paths are built only on failure, so a valid call allocates
nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..errors import ToolDefinitionError as SpecError
from .checks import (
    SCALAR_CHECKS,
    Acceptor,
    Check,
    all_of,
    array_check,
    const_check,
    enum_check,
    finish_paths,
    flat_acceptor,
    format_issues,
    json_equal,
    object_check,
    one_of_check,
    show,
)

TYPES = ("string", "number", "integer", "boolean", "null", "array", "object", "json")
COMMON_KEYS = frozenset({"type", "description", "default", "examples", "enum", "const", "oneOf"})
KEYS_BY_TYPE: dict[str | None, frozenset[str]] = {
    "array": COMMON_KEYS | {"items"},
    "object": COMMON_KEYS | {"properties", "additionalProperties"},
}
MAX_DEPTH = 64
"""How many containers (nodes, property maps, JSON lists and dicts) may nest."""


# -- compiling ---------------------------------------------------------------------------


def compile_properties(
    properties: Any, where: str, closed: bool = False, _path: tuple[int, ...] = ()
) -> tuple[dict[str, Any], Check]:
    """Compile a property map (``parameters``, or an object's ``properties``).

    Returns the object's JSON Schema and its check. The object is open unless ``closed``.
    """
    schema, checks, required = _properties(properties, where, closed, _path)
    return schema, object_check(checks, required, closed)


def compile_parameters(
    properties: Any, where: str
) -> tuple[dict[str, Any], Check, Acceptor | None]:
    """Compile a tool's ``parameters``: the open object's schema, its check, and its
    :func:`~harness.tools.checks.flat_acceptor` (None unless every property is a plain scalar)."""
    schema, checks, required = _properties(properties, where, False, ())
    return schema, object_check(checks, required, False), flat_acceptor(checks, required)


def _properties(
    properties: Any, where: str, closed: bool, _path: tuple[int, ...]
) -> tuple[dict[str, Any], dict[str, Check], tuple[str, ...]]:
    if not isinstance(properties, Mapping):
        raise SpecError(f"{where}: expected a mapping of property name to spec node")
    _path = _enter(properties, where, _path)
    schemas: dict[str, Any] = {}
    checks: dict[str, Check] = {}
    required: list[str] = []
    for key, node in properties.items():
        if not isinstance(key, str):
            raise SpecError(f"{where}: property names must be strings, got {key!r}")
        path = f"{where}.{key}" if where else key
        if not isinstance(node, Mapping):
            raise SpecError(f"{path}: expected a spec node such as {{'type': 'string'}}")
        is_required = node.get("required", False)
        if not isinstance(is_required, bool):
            raise SpecError(f"{path}.required: expected true or false, got {is_required!r}")
        if is_required:
            required.append(key)
        schemas[key], checks[key] = compile_node(node, path, True, _path)
    schema: dict[str, Any] = {"type": "object", "properties": schemas}
    if required:
        schema["required"] = required
    if closed:
        schema["additionalProperties"] = False
    return schema, checks, tuple(required)


def compile_node(
    node: Mapping[str, Any], where: str, is_property: bool = False, _path: tuple[int, ...] = ()
) -> tuple[dict[str, Any], Check]:
    """Compile one spec node to its JSON Schema and check (``is_property``: may be required).

    Besides unknown keys and malformed values, a node no value can satisfy is rejected: an
    ``enum`` value or a ``const`` of the wrong type, a ``const`` outside the ``enum``. Spec
    nodes that contain themselves and values that are not JSON are rejected too.
    """
    _path = _enter(node, where, _path)
    kind = node.get("type")
    if kind is not None and kind not in TYPES:
        raise SpecError(
            f"{where}.type: unknown type {kind!r}; use one of {', '.join(TYPES)}"
            + _suggest(kind, TYPES)
        )
    allowed = KEYS_BY_TYPE.get(kind, COMMON_KEYS)
    shown = allowed | {"required"} if is_property else allowed
    for key in node:
        if key not in shown:
            hint = "" if key != "required" else " ('required' belongs on object properties)"
            raise SpecError(
                f"{where}: unknown key {key!r}{hint}{_suggest(key, shown)}; "
                f"allowed keys are {', '.join(sorted(shown))}"
            )
    if "oneOf" in node and kind is not None:
        raise SpecError(f"{where}: use either 'type' or 'oneOf', not both")
    if kind is None and "oneOf" not in node and "const" not in node and "enum" not in node:
        raise SpecError(f"{where}: a spec node needs 'type', 'oneOf', 'const' or 'enum'")

    schema: dict[str, Any] = {}
    checks: list[Check] = []
    if kind == "json":
        pass
    elif kind == "array":
        schema["type"] = "array"
        item_check: Check | None = None
        if "items" in node:
            if not isinstance(node["items"], Mapping):
                raise SpecError(f"{where}.items: expected a spec node")
            schema["items"], item_check = compile_node(node["items"], f"{where}[]", False, _path)
        checks.append(array_check(item_check))
    elif kind == "object":
        schema["type"] = "object"
        additional = node.get("additionalProperties", True)
        if not isinstance(additional, bool):
            raise SpecError(f"{where}.additionalProperties: expected true or false")
        if "properties" in node:
            inner, check = compile_properties(node["properties"], where, not additional, _path)
            schema.update(inner)
            checks.append(check)
        else:
            if not additional:
                schema["additionalProperties"] = False
            checks.append(object_check({}, (), not additional))
    elif kind is not None:
        schema["type"] = kind
        checks.append(SCALAR_CHECKS[kind])
    if "oneOf" in node:
        options = node["oneOf"]
        if not isinstance(options, list) or not options:
            raise SpecError(f"{where}.oneOf: expected a non-empty list of spec nodes")
        compiled = []
        for index, option in enumerate(options):
            if not isinstance(option, Mapping):
                raise SpecError(f"{where}.oneOf[{index}]: expected a spec node")
            compiled.append(compile_node(option, f"{where}.oneOf[{index}]", False, _path))
        schema["oneOf"] = [option_schema for option_schema, _ in compiled]
        checks.append(one_of_check([check for _, check in compiled]))
    shape = all_of(checks)  # what the type and oneOf demand; enum and const must fit it
    if "enum" in node:
        values = node["enum"]
        if not isinstance(values, list) or not values:
            raise SpecError(f"{where}.enum: expected a non-empty list of values")
        for index, value in enumerate(values):
            _satisfiable(value, shape, f"{where}.enum[{index}]", _path)
        schema["enum"] = list(values)
        checks.append(enum_check(tuple(values)))
    if "const" in node:
        _satisfiable(node["const"], shape, f"{where}.const", _path)
        if "enum" in node and not any(json_equal(node["const"], v) for v in node["enum"]):
            raise SpecError(
                f"{where}.const: {show(node['const'])} is not one of the enum values, so no "
                "value can match; drop one of them"
            )
        schema["const"] = node["const"]
        checks.append(const_check(node["const"]))
    if "description" in node and not isinstance(node["description"], str):
        raise SpecError(f"{where}.description: expected a string")
    if "examples" in node and not isinstance(node["examples"], list):
        raise SpecError(f"{where}.examples: expected a list of example values")
    if "default" in node:
        check_json(node["default"], f"{where}.default", _path)
    for index, example in enumerate(node.get("examples", ())):
        check_json(example, f"{where}.examples[{index}]", _path)
    for key in ("description", "default", "examples"):
        if key in node:
            schema[key] = node[key]
    return schema, all_of(checks)


def check_json(value: Any, where: str, _path: tuple[int, ...] = ()) -> None:
    """Raise unless ``value`` is plain JSON: null, booleans, finite numbers, strings, lists
    and string-keyed dicts, nested at most :data:`MAX_DEPTH` deep and without cycles."""
    if value is None or isinstance(value, bool | int | str):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SpecError(f"{where}: {value!r} is not a JSON value (JSON has no NaN or infinity)")
        return
    if isinstance(value, list):
        _path = _enter(value, where, _path)
        for index, item in enumerate(value):
            check_json(item, f"{where}[{index}]", _path)
        return
    if isinstance(value, dict):
        _path = _enter(value, where, _path)
        for key, item in value.items():
            if not isinstance(key, str):
                raise SpecError(f"{where}: key {key!r} is not a string (JSON keys are strings)")
            check_json(item, f"{where}.{key}", _path)
        return
    raise SpecError(
        f"{where}: {show(value)} ({type(value).__name__}) is not a JSON value; use null, "
        "booleans, numbers, strings, lists and dicts"
    )


def _satisfiable(value: Any, shape: Check, where: str, path: tuple[int, ...]) -> None:
    check_json(value, where, path)
    issues = shape(value)
    if issues:
        raise SpecError(
            f"{where}: {show(value)} can never be valid here "
            f"({format_issues(finish_paths(issues))})"
        )


def _enter(node: Any, where: str, path: tuple[int, ...]) -> tuple[int, ...]:
    """The path of containers down to ``node``; raise on a cycle or on absurd depth."""
    if id(node) in path:
        raise SpecError(f"{where}: contains itself (a cycle); a spec must be a finite tree")
    if len(path) >= MAX_DEPTH:
        raise SpecError(f"{where}: nested too deeply (more than {MAX_DEPTH} levels)")
    return (*path, id(node))


def is_single_node(spec: Mapping[str, Any]) -> bool:
    """True when an output spec is one node (a string ``type``), not a property map."""
    if isinstance(spec.get("type"), str):
        return True
    return any(key in spec and not isinstance(spec[key], Mapping) for key in ("oneOf", "const"))


def compile_output(spec: Mapping[str, Any], where: str) -> tuple[dict[str, Any], Check]:
    """Compile an output spec: a single node, or a property map (an object value)."""
    if is_single_node(spec):
        return compile_node(spec, where)
    return compile_properties(spec, where)


def _suggest(word: Any, options: Any) -> str:
    if not isinstance(word, str):
        return ""
    import difflib  # only for a misspelt word: not loaded at start-up

    close = difflib.get_close_matches(word, list(options), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
