"""Python stubs generated from tool schemas: the program's view of the registry.

They do two jobs. They go in ``run_code``'s description, so the model knows each tool's
signature and what it returns; and Monty's type checker checks the program against them
before it runs, so a misspelt argument or a wrong type is an ``invalid_args`` answer instead
of a failed call halfway through. A tool whose name is not a Python identifier (or whose
parameters are not) has no stub of its own; ``call_tool("name", {...})`` reaches it.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable
from typing import Any

from ..tools.define import ToolDefinition

CALL_TOOL = "call_tool"
HEADER = "from typing import Any, Literal, TypedDict\n"
CALL_TOOL_STUB = (
    f"async def {CALL_TOOL}(name: str, args: dict[str, Any] | None = None) -> Any:\n"
    '    """Call any allowed tool by name (for names that are not identifiers)."""\n'
    "    ...\n"
)
_SIMPLE = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_DOC_LIMIT = 400


def is_identifier(name: str) -> bool:
    """A name a program can call directly (not a keyword, not ``call_tool``)."""
    return name.isidentifier() and not keyword.iskeyword(name) and name != CALL_TOOL


def callable_name(definition: ToolDefinition) -> bool:
    """Whether the tool gets a function of its own (its name and parameters are identifiers)."""
    properties = definition.parameters.get("properties") or {}
    return is_identifier(definition.name) and all(is_identifier(key) for key in properties)


def type_of(node: Any) -> str:
    """The Python annotation of one JSON Schema node (lenient: unknown shapes are ``Any``)."""
    if not isinstance(node, dict):
        return "Any"
    if "const" in node:
        return _literal([node["const"]])
    if isinstance(node.get("enum"), list) and node["enum"]:
        return _literal(node["enum"])
    for key in ("oneOf", "anyOf"):
        if isinstance(node.get(key), list) and node[key]:
            return " | ".join(dict.fromkeys(type_of(child) for child in node[key]))
    kind = node.get("type")
    if isinstance(kind, list):
        return " | ".join(dict.fromkeys(type_of({**node, "type": k}) for k in kind)) or "Any"
    if kind in _SIMPLE:
        return "float" if kind == "number" else _SIMPLE[kind]
    if kind == "array":
        return f"list[{type_of(node.get('items'))}]"
    if kind == "object":
        return "dict[str, Any]"
    return "Any"


def _literal(values: list[Any]) -> str:
    if all(isinstance(v, str | int | bool) or v is None for v in values):
        return f"Literal[{', '.join(repr(v) for v in values)}]"
    return "Any"


def _class_name(tool: str) -> str:
    words = re.split(r"[^0-9a-zA-Z]+", tool)
    return "".join(word[:1].upper() + word[1:] for word in words if word) + "Result"


def _doc(text: str, indent: str = "    ") -> str:
    text = " ".join(text.split())
    if len(text) > _DOC_LIMIT:
        text = text[: _DOC_LIMIT - 1] + "…"
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return f'{indent}"""{text}"""\n'


def stub(definition: ToolDefinition) -> str:
    """The stub of one tool: a TypedDict for an object result, then its ``async def``."""
    out = ""
    returns = "Any"
    schema = definition.output_schema
    if isinstance(schema, dict):
        properties = schema.get("properties")
        if schema.get("type") == "object" and isinstance(properties, dict) and properties:
            returns = _class_name(definition.name)
            required = set(schema.get("required") or [])
            total = "" if set(properties) == required else ", total=False"
            out += f"class {returns}(TypedDict{total}):\n"
            for key, node in properties.items():
                if is_identifier(key):
                    out += f"    {key}: {type_of(node)}\n"
            if not any(is_identifier(key) for key in properties):
                out += "    pass\n"
            out += "\n"
        else:
            returns = type_of(schema)
    parameters = definition.parameters
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    params = [f"{key}: {type_of(node)}" for key, node in properties.items() if key in required]
    params += [
        f"{key}: {type_of(node)} | None = None"
        for key, node in properties.items()
        if key not in required
    ]
    out += f"async def {definition.name}({', '.join(params)}) -> {returns}:\n"
    out += _doc(definition.description)
    out += "    ...\n"
    return out


def positional(definition: ToolDefinition) -> list[str]:
    """Parameter names in the stub's order: what positional arguments bind to."""
    parameters = definition.parameters
    properties = list(parameters.get("properties") or {})
    required = set(parameters.get("required") or [])
    return [k for k in properties if k in required] + [k for k in properties if k not in required]


def stubs(definitions: Iterable[ToolDefinition]) -> str:
    """The whole stub file: the header, each callable tool's stub, and ``call_tool``."""
    parts = [HEADER]
    others = []
    for definition in definitions:
        if callable_name(definition):
            parts.append(stub(definition))
        else:
            others.append(definition.name)
    parts.append(CALL_TOOL_STUB)
    if others:
        listed = ", ".join(repr(name) for name in others)
        parts.append(f"# reachable only through call_tool: {listed}\n")
    return "\n".join(parts)
