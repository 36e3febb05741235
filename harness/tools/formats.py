"""Tool schemas in the shapes OpenAI, Anthropic and MCP expect.

Only what the model needs leaves the host: name, description, the parameters' JSON Schema,
and for MCP the output schema and annotations. Timeouts and callbacks never do.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from .definition import ToolDefinition

Format = Literal["openai", "anthropic", "mcp"]
FORMATS: tuple[Format, ...] = ("openai", "anthropic", "mcp")


def openai(tool: ToolDefinition, strict: bool = False) -> dict[str, Any]:
    """``{"type": "function", "function": {...}}``; strict only when the tool qualifies."""
    function: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
    }
    if strict and qualifies_for_strict(tool.parameters):
        function["strict"] = True
        function["parameters"] = {**tool.parameters, "additionalProperties": False}
    return {"type": "function", "function": function}


def anthropic(tool: ToolDefinition) -> dict[str, Any]:
    """``{"name", "description", "input_schema"}``."""
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def mcp(tool: ToolDefinition) -> dict[str, Any]:
    """``{"name"[, "title"], "description", "inputSchema"[, "outputSchema"][, "annotations"]
    [, "icons"][, "_meta"]}``.

    MCP requires an object output schema, so a non-object canonical value is described
    (and sent as ``structuredContent``) wrapped as ``{"result": value}``.
    """
    out: dict[str, Any] = {"name": tool.name}
    if tool.title:
        out["title"] = tool.title
    out["description"] = tool.description
    out["inputSchema"] = tool.parameters
    output = mcp_output_schema(tool)
    if output is not None:
        out["outputSchema"] = output
    hints = tool.annotations.to_mcp()
    if hints:
        out["annotations"] = hints
    if tool.icons:
        out["icons"] = [dict(icon) for icon in tool.icons]
    if tool.meta:
        out["_meta"] = dict(tool.meta)
    return out


def mcp_output_schema(tool: ToolDefinition) -> dict[str, Any] | None:
    """The output schema as MCP wants it (an object), or None when the tool declares none."""
    schema = tool.output_schema
    if schema is None:
        return None
    if is_object_schema(schema):
        return schema
    return {"type": "object", "properties": {"result": schema}, "required": ["result"]}


def is_object_schema(schema: dict[str, Any]) -> bool:
    """True when the schema describes only objects."""
    return schema.get("type") == "object"


def qualifies_for_strict(parameters: dict[str, Any]) -> bool:
    """OpenAI's strict mode: every property required, nested objects closed, no open nodes.

    The root is closed by :func:`openai` itself; nested objects must declare
    ``additionalProperties: false``. Arrays need ``items``; ``oneOf``, ``$ref`` and
    any-JSON nodes disqualify a tool (it then keeps the plain form), and so does parameters
    written as full JSON Schema (``$schema``), which is sent as written.
    """
    if "$schema" in parameters:
        return False
    return _strict_object(parameters, root=True)


def _strict_object(schema: dict[str, Any], root: bool) -> bool:
    if not root and schema.get("additionalProperties") is not False:
        return False
    properties = schema.get("properties", {})
    if set(schema.get("required", ())) != set(properties):
        return False
    return all(_strict_node(node) for node in properties.values())


def _strict_node(node: Any) -> bool:
    if not isinstance(node, dict) or "oneOf" in node or "$ref" in node or "anyOf" in node:
        return False
    kind = node.get("type")
    if kind is None:
        return "const" in node or "enum" in node
    if kind == "object":
        return _strict_object(node, root=False)
    if kind == "array":
        return "items" in node and _strict_node(node["items"])
    return True


# -- snapshots ---------------------------------------------------------------------------

_READ_ONLY = (
    "this schema is a read-only snapshot shared by every caller of schemas(); "
    "copy.deepcopy() it to change it"
)


def _refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
    raise TypeError(_READ_ONLY)


class FrozenDict(dict[str, Any]):
    """A read-only dict: JSON-serialisable and equal to a plain dict; copies are plain."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {key: copy.deepcopy(value, memo) for key, value in self.items()}

    def __reduce__(self) -> tuple[Any, ...]:
        return dict, (dict(self),)


class FrozenList(list[Any]):
    """A read-only list: JSON-serialisable and equal to a plain list; copies are plain."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [copy.deepcopy(value, memo) for value in self]

    def __reduce__(self) -> tuple[Any, ...]:
        return list, (list(self),)


def freeze(value: Any) -> Any:
    """A deep, read-only copy of a JSON value (dicts and lists become frozen copies)."""
    if isinstance(value, dict):
        frozen = FrozenDict()
        for key, item in value.items():
            dict.__setitem__(frozen, key, freeze(item))
        return frozen
    if isinstance(value, list | tuple):
        return FrozenList(freeze(item) for item in value)
    return value
