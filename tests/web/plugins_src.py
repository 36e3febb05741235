"""Plugin sources the browser tests add to their project (written as real files)."""

from __future__ import annotations

KINDS = """
from harness import define_tool

name = "kinds"
inject = ["tools"]


def apply(ctx):
    return ctx.tools.register(define_tool(
        name="kinds",
        description="Return the arguments it was given, to show every kind of form field.",
        parameters={
            "word": {"type": "string", "required": True, "description": "Any text"},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "color": {"type": "string", "enum": ["red", "green"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "point": {
                "type": "object",
                "properties": {"x": {"type": "number", "required": True}, "y": {"type": "number"}},
            },
            "extra": {"type": "json"},
            "either": {"oneOf": [{"type": "integer"}, {"type": "string", "enum": ["auto"]}]},
            "nothing": {"type": "null"},
            "fixed": {"const": "v1"},
        },
        execute=lambda args: args,
    ))
"""

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAA"
    "AABJRU5ErkJggg=="
)

PIXEL = """
from harness import define_tool

name = "pixel"
inject = ["tools"]
PNG = "@PNG@"


def apply(ctx):
    return ctx.tools.register(define_tool(
        name="pixel",
        description="Return a one-pixel image, to show image blocks.",
        parameters={},
        output={"render": lambda value: [
            {"type": "image", "data": PNG, "mime_type": "image/png"},
            {"type": "image", "url": "http://127.0.0.1:9/pixel.png"},
            {"type": "image", "url": "javascript:window.__xss = 1"},
            {"type": "text", "text": "<b>not bold</b>"},
        ]},
        execute=lambda args: {"pixels": 1},
    ))
""".replace("@PNG@", PNG)

EXTRA = """  - id: kinds
    name: ./plugins/kinds.py
  - id: pixel
    name: ./plugins/pixel.py
"""

HOLD = """
import anyio
from harness import define_tool

name = "hold"
inject = ["tools"]


async def hold(args):
    async with await anyio.connect_tcp("127.0.0.1", args["port"]) as stream:
        await stream.send(b"started\\n")
        return {"word": (await stream.receive()).decode()}


def apply(ctx):
    return ctx.tools.register(define_tool(
        name="hold",
        description="Wait for a word from a local port, to show a call that runs until told.",
        parameters={"port": {"type": "integer", "required": True}},
        execute=hold,
    ))
"""
"""A tool that runs until the test's socket speaks: the test knows it has started (its
connection is accepted), and knows it has stopped (the connection closes)."""
