"""Hypothesis: arbitrary JSON args against generated specs.

execute never raises, and whatever it accepts satisfies the emitted JSON Schema (checked
with the jsonschema library); whatever jsonschema accepts, we accept too. A null ``args``
reads as no arguments.
"""

from __future__ import annotations

from typing import Any

import anyio
import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import Context, ToolsService, define_tool

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

    async def scenario() -> Any:
        async with Context() as root:
            await root.plugin(ToolsService)
            root.tools.register(definition)
            return await root.tools.execute({"id": "1", "name": "fuzz", "args": args})

    result = anyio.run(scenario)
    if args is None:  # a null "args" reads as no arguments
        args = {}
    schema_ok = validator.is_valid(args)
    if result.ok:
        assert schema_ok, (definition.parameters, args)
        assert result.result == args
    else:
        assert result.code == "invalid_args", result
        assert not schema_ok, (definition.parameters, args, result.error)
