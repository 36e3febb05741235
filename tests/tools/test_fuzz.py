"""Hypothesis: arbitrary JSON args against generated specs, straight through ``bind``.

``bind`` (what the pipeline runs before the body) raises nothing but ToolArgsError, and
whatever it accepts satisfies the emitted JSON Schema (checked with the jsonschema
library); whatever jsonschema accepts, it accepts too. A null ``args`` reads as no
arguments. No Context per example: the pipeline's handling of ToolArgsError is tested in
test_pipeline.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import ToolArgsError, ToolCall, define_tool

SCALARS = ["string", "number", "integer", "boolean", "null", "json"]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "c", "x"]), children, max_size=3)
    ),
    max_leaves=8,
)


def nodes(depth: int = 2) -> st.SearchStrategy[dict[str, Any]]:
    scalar = st.sampled_from(SCALARS).map(lambda t: {"type": t})
    enum = st.lists(json_values, min_size=1, max_size=3).map(lambda v: {"enum": v})
    const = json_values.map(lambda v: {"const": v})
    leaf = st.one_of(scalar, scalar, enum, const)
    if depth == 0:
        return leaf
    child = nodes(depth - 1)
    array = st.one_of(
        st.just({"type": "array"}), child.map(lambda item: {"type": "array", "items": item})
    )
    obj = st.builds(
        lambda props, closed: {
            "type": "object",
            "properties": props,
            "additionalProperties": not closed,
        },
        properties(child),
        st.booleans(),
    )
    one_of = st.lists(child, min_size=1, max_size=3).map(lambda options: {"oneOf": options})
    return st.one_of(leaf, array, obj, one_of)


def properties(node: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    entry = st.tuples(node, st.booleans()).map(lambda pair: {**pair[0], "required": pair[1]})
    return st.dictionaries(st.sampled_from(["a", "b", "c"]), entry, max_size=3)


args_values = st.one_of(
    st.dictionaries(st.sampled_from(["a", "b", "c", "z"]), json_values, max_size=4), json_values
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=properties(nodes()), args=args_values)
def test_accepted_args_satisfy_the_emitted_schema(spec: dict[str, Any], args: Any) -> None:
    definition = define_tool(name="fuzz", description="f", parameters=spec, execute=lambda a: a)
    validator = jsonschema.Draft202012Validator(definition.parameters)
    jsonschema.Draft202012Validator.check_schema(definition.parameters)

    call = ToolCall.of({"id": "1", "name": "fuzz", "args": args})
    assert call.args == ({} if args is None else args)  # a null "args" reads as no arguments
    schema_ok = validator.is_valid(call.args)
    if not schema_ok:
        with pytest.raises(ToolArgsError):
            definition.bind(call.args)
        return
    body = definition.bind(call.args)  # raises when we refuse what the schema accepts
    assert body() == call.args
