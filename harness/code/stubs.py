"""Python stubs generated from tool schemas: the program's view of the registry.

They do two jobs. They go in ``run_code``'s description, so the model knows each tool's
signature and what it returns; and Monty's type checker checks the program against them
before it runs, so a misspelt argument or a wrong type is an ``invalid_args`` answer instead
of a failed call halfway through. A tool whose name is not a Python identifier, or is a name
the program already has (:mod:`.names`), or whose parameters are not identifiers, has no
stub of its own; ``call_tool("name", {...})`` reaches it.

Schemas and descriptions come from anywhere (an MCP server's are written by someone else):
every text lands in a string literal that Python reads back as that text, whatever quotes,
backslashes or control characters it holds, so one tool can never break the stubs of all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..tools.definition import ToolDefinition
from .names import CALL_TOOL, RESERVED, STUB_TYPES, is_free, is_identifier

HEADER = f"from typing import {', '.join(STUB_TYPES)}\n"
CALL_TOOL_STUB = (
    f"async def {CALL_TOOL}(name: str, args: dict[str, Any] | None = None) -> Any:\n"
    '    """Call any allowed tool by name (for names that are not identifiers)."""\n'
    "    ...\n"
)
_SIMPLE = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_DOC_LIMIT = 400
"""Characters of a tool's description in its stub."""
_ARG_LIMIT = 160
"""Characters of a parameter's description."""
_DEPTH = 16
"""Schema nesting followed into annotations; deeper is ``Any``."""


def callable_name(definition: ToolDefinition) -> bool:
    """Whether the tool gets a function of its own (its name is free, its parameters are
    identifiers)."""
    properties = definition.parameters.get("properties") or {}
    return is_free(definition.name) and all(is_identifier(key) for key in properties)


def type_of(node: Any, depth: int = 0) -> str:
    """The Python annotation of one JSON Schema node (lenient: unknown shapes are ``Any``)."""
    if not isinstance(node, dict) or depth > _DEPTH:
        return "Any"
    if "const" in node:
        return _literal([node["const"]])
    if isinstance(node.get("enum"), list) and node["enum"]:
        return _literal(node["enum"])
    for key in ("oneOf", "anyOf"):
        if isinstance(node.get(key), list) and node[key]:
            return " | ".join(dict.fromkeys(type_of(child, depth + 1) for child in node[key]))
    kind = node.get("type")
    if isinstance(kind, list):
        kinds = [type_of({**node, "type": k}, depth + 1) for k in kind if isinstance(k, str)]
        return " | ".join(dict.fromkeys(kinds)) or "Any"
    if not isinstance(kind, str):
        return "Any"
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    if kind == "array":
        return f"list[{type_of(node.get('items'), depth + 1)}]"
    if kind == "object":
        return "dict[str, Any]"
    return "Any"


def _literal(values: list[Any]) -> str:
    # repr() of these is always a Python literal that reads back as the value, whatever
    # characters a string holds (non-printable ones come out escaped).
    if all(isinstance(v, str | int | bool) or v is None for v in values):
        return f"Literal[{', '.join(repr(v) for v in values)}]"
    return "Any"


def quoted(text: str, *, closes: bool = True) -> str:
    """The inside of a ``\"\"\"...\"\"\"`` literal that Python reads back as ``text``.

    Backslashes are doubled; a ``"`` is escaped where it could close the literal (before
    another ``"``, or at the end when ``closes``: the closing quotes follow); every
    non-printable character (controls, line breaks, lone surrogates, which UTF-8 cannot
    even carry) is written as its escape.
    """
    out = []
    end = '"' if closes else ""  # what follows the text in the literal
    for index, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char == '"' and (text[index + 1 : index + 2] or end) == '"':
            out.append('\\"')
        elif not char.isprintable():
            out.append(char.encode("unicode_escape").decode("ascii"))
        else:
            out.append(char)
    return "".join(out)


def one_line(text: object, limit: int) -> str:
    """A description as the stubs show it: whitespace collapsed, at most ``limit`` long."""
    line = " ".join(text.split()) if isinstance(text, str) else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _doc(definition: ToolDefinition, names: list[str], properties: dict[str, Any]) -> str:
    """The docstring: the tool's description, then ``Args:`` with each described parameter."""
    args = []
    for key in names:
        node = properties[key]
        text = one_line(node.get("description") if isinstance(node, dict) else None, _ARG_LIMIT)
        if text:
            args.append(f"        {key}: {quoted(text, closes=False)}")
    lines = [quoted(one_line(definition.description, _DOC_LIMIT), closes=not args)]
    if args:
        lines += ["", "    Args:", *args, "    "]
    body = "\n".join(lines)
    return f'    """{body}"""\n' if body else ""


def _class_name(tool: str, taken: set[str]) -> str:
    """``GitLogReaderResult`` for ``git_log_reader``: a name no tool, builtin or other
    result type of the stubs has."""
    words = re.split(r"[^0-9a-zA-Z]+", tool)
    base = "".join(word[:1].upper() + word[1:] for word in words if word) + "Result"
    name, number = base, 1
    while name in taken:
        number += 1
        name = f"{base}{number}"
    taken.add(name)
    return name


def _result_type(definition: ToolDefinition, taken: set[str]) -> tuple[str, str]:
    """(the annotation of what the tool returns, the TypedDict it needs or "")."""
    schema = definition.output_schema
    if not isinstance(schema, dict):
        return "Any", ""
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, dict) or not properties:
        return type_of(schema), ""
    name = _class_name(definition.name, taken)
    required = schema.get("required")
    total = isinstance(required, list) and set(properties) <= set(required)
    if all(is_identifier(key) for key in properties):
        lines = [f"class {name}(TypedDict{'' if total else ', total=False'}):"]
        lines += [f"    {key}: {type_of(node)}" for key, node in properties.items()]
        return name, "\n".join(lines) + "\n\n"
    # Keys a class body cannot hold (``my-key``, ``class``): the functional form takes any
    # string, written with repr() like every other text.
    fields = ", ".join(f"{key!r}: {type_of(node)}" for key, node in properties.items())
    return name, f"{name} = TypedDict({name!r}, {{{fields}}}, total={total})\n\n"


def stub(definition: ToolDefinition, taken: set[str] | None = None) -> str:
    """The stub of one tool: a TypedDict for an object result, then its ``async def``."""
    returns, out = _result_type(definition, set(RESERVED) if taken is None else taken)
    properties = definition.parameters.get("properties") or {}
    names = positional(definition)
    required = set(names[: _required_count(definition)])
    params = [
        f"{key}: {type_of(properties[key])}"
        if key in required
        else f"{key}: {type_of(properties[key])} | None = None"
        for key in names
    ]
    out += f"async def {definition.name}({', '.join(params)}) -> {returns}:\n"
    out += _doc(definition, names, properties)
    out += "    ...\n"
    return out


def _required_count(definition: ToolDefinition) -> int:
    properties = definition.parameters.get("properties") or {}
    required = definition.parameters.get("required") or []
    return sum(1 for key in properties if key in required)


def positional(definition: ToolDefinition) -> list[str]:
    """Parameter names in the stub's order: what positional arguments bind to."""
    parameters = definition.parameters
    properties = list(parameters.get("properties") or {})
    required = set(parameters.get("required") or [])
    return [k for k in properties if k in required] + [k for k in properties if k not in required]


def stubs(definitions: Iterable[ToolDefinition]) -> str:
    """The whole stub file: the header, each callable tool's stub, and ``call_tool``."""
    parts = [HEADER]
    definitions = list(definitions)
    functions = [d for d in definitions if callable_name(d)]
    taken = set(RESERVED) | {d.name for d in functions}
    parts += [stub(definition, taken) for definition in functions]
    parts.append(CALL_TOOL_STUB)
    others = [d.name for d in definitions if not callable_name(d)]
    if others:
        listed = ", ".join(repr(name) for name in others)
        parts.append(f"# reachable only through call_tool: {listed}\n")
    return "\n".join(parts)
