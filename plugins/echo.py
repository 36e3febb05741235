"""echo: repeat the given text back (the tutorial's first tool)."""

from __future__ import annotations

from typing import Any

from harness import Context, define_tool

name = "echo"
inject = ["tools"]

echo = define_tool(
    name="echo",
    description=(
        "Repeat the given text back, prefixed with 'Echo: '. Use it to test that tool calls "
        "work; it does not transform, translate or store the text (use a writing tool for that)."
    ),
    parameters={"text": {"type": "string", "required": True, "description": "The text to repeat"}},
    output={
        "schema": {"text": {"type": "string", "required": True}},
        "render": lambda value: {"type": "text", "text": value["text"]},
    },
    execute=lambda args: {"text": f"Echo: {args['text']}"},
    annotations={"read_only": True, "idempotent": True, "open_world": False},
)


def apply(ctx: Context) -> Any:
    return ctx.tools.register(echo)
