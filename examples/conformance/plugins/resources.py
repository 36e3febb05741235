"""The suite's resources: test://static-text, test://static-binary, the template
test://template/{id}/data, and test://watched-resource (subscribed to and unsubscribed from;
``ctx.resources.notify_updated`` would tell its subscribers of a change)."""

from __future__ import annotations

import base64
import json

from harness import define_resource, resource

inject = ["resources"]

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
"""A 1x1 red pixel."""


def ids(prefix: str, args: dict[str, str]) -> list[str]:
    """The ids the template knows, for completion."""
    return [value for value in ("1", "2", "3", "123") if value.startswith(prefix)]


static_text = define_resource(
    uri="test://static-text",
    name="static-text",
    title="Static Text Resource",
    description="A static text resource for testing",
    mime_type="text/plain",
    read=lambda params: "This is the content of the static text resource.",
)

static_binary = define_resource(
    uri="test://static-binary",
    name="static-binary",
    title="Static Binary Resource",
    description="A static binary resource (image) for testing",
    mime_type="image/png",
    read=lambda params: PNG,
)


@resource("test://template/{id}/data", mime_type="application/json", complete={"id": ids})
def template(id: str) -> str:
    """A resource template with parameter substitution"""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


watched = define_resource(
    uri="test://watched-resource",
    name="watched-resource",
    title="Watched Resource",
    description="A resource clients subscribe to",
    mime_type="text/plain",
    read=lambda params: "Watched resource content",
)


def apply(ctx):
    for definition in (static_text, static_binary, template, watched):
        ctx.resources.register(definition)
