"""greet: a greeting for a person (the defineTool guide's first example)."""

from __future__ import annotations

from typing import Any

from harness import Context, define_tool

name = "greet"
inject = ["tools"]

greet = define_tool(
    name="greet",
    description=(
        "Greet a person by name and return the greeting. Use when the user asks to greet "
        "someone; it writes one short line, not letters or messages (compose those yourself)."
    ),
    parameters={
        "name": {
            "type": "string",
            "required": True,
            "description": 'The name of the person to greet, e.g. "Alice"',
        }
    },
    output={
        "schema": {"greeting": {"type": "string", "required": True}},
        "render": lambda value: {"type": "text", "text": value["greeting"]},
    },
    execute=lambda args: {"greeting": f"Hello, {args['name']}!"},
    annotations={"read_only": True, "idempotent": True, "open_world": False},
)


def apply(ctx: Context) -> Any:
    return ctx.tools.register(greet)
