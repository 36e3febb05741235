"""The suite's tools that need nothing from the client while they run: text, image, audio,
an embedded resource, several kinds at once, one that fails, and one whose parameters are
a JSON Schema 2020-12 document.

Each returns a value and renders it as the content blocks the suite expects
(:mod:`harness.tools.render` spells them: ``mime_type``, ``data`` as bytes or base64).
"""

from __future__ import annotations

import base64
import json

from harness import define_tool

inject = ["tools"]

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
"""A 1x1 red pixel."""
WAV = base64.b64decode("UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==")
"""Eight samples of silence, 8 kHz mono."""


test_simple_text = define_tool(
    name="test_simple_text",
    description="Return a simple text response for testing.",
    execute=lambda args: "This is a simple text response for testing.",
)

test_image_content = define_tool(
    name="test_image_content",
    description="Return a 1x1 red PNG as image content.",
    execute=lambda args: None,
    output={"render": lambda value: {"type": "image", "data": PNG, "mime_type": "image/png"}},
)

test_audio_content = define_tool(
    name="test_audio_content",
    description="Return a short silent WAV as audio content.",
    execute=lambda args: None,
    output={"render": lambda value: {"type": "audio", "data": WAV, "mime_type": "audio/wav"}},
)

test_embedded_resource = define_tool(
    name="test_embedded_resource",
    description="Return an embedded text resource.",
    execute=lambda args: None,
    output={
        "render": lambda value: {
            "type": "resource",
            "uri": "test://embedded-resource",
            "mime_type": "text/plain",
            "text": "This is an embedded resource content.",
        }
    },
)

test_multiple_content_types = define_tool(
    name="test_multiple_content_types",
    description="Return text, an image and an embedded resource in one result.",
    execute=lambda args: {"test": "data", "value": 123},
    output={
        "render": lambda value: [
            {"type": "text", "text": "Multiple content types test:"},
            {"type": "image", "data": PNG, "mime_type": "image/png"},
            {
                "type": "resource",
                "uri": "test://mixed-content-resource",
                "mime_type": "application/json",
                "text": json.dumps(value),
            },
        ]
    },
)


def fail(args: dict[str, object]) -> None:
    raise RuntimeError("This tool intentionally returns an error for testing")


test_error_handling = define_tool(
    name="test_error_handling",
    description="Always fail, to test error reporting.",
    execute=fail,
)


json_schema_2020_12_tool = define_tool(
    name="json_schema_2020_12_tool",
    description="Tool with JSON Schema 2020-12 features",
    # a parameters mapping with "$schema" is a JSON Schema document, used as written
    parameters={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": False,
    },
    execute=lambda args: f"Received: {json.dumps(args, sort_keys=True)}",
)


def apply(ctx):
    for definition in (
        test_simple_text,
        test_image_content,
        test_audio_content,
        test_embedded_resource,
        test_multiple_content_types,
        test_error_handling,
        json_schema_2020_12_tool,
    ):
        ctx.tools.register(definition)
