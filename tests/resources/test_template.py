"""URI templates: simple ``{var}`` expressions matched as the MCP SDK matches them.

:class:`harness.resources.UriTemplate` mirrors the SDK's ``mcp.shared.uri_template`` for the
simple expressions it accepts, and the SDK's default ``ResourceSecurity`` for the values it
refuses. The comparison below ran against the SDK release :data:`CHECKED_AGAINST` names;
another release fails it by name, to be checked again.
"""

from __future__ import annotations

import importlib.metadata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.server.mcpserver.resources.templates import DEFAULT_RESOURCE_SECURITY
from mcp.shared.uri_template import UriTemplate as SdkTemplate

from harness.errors import ArgumentsError
from harness.resources import UriTemplate

CHECKED_AGAINST = "2.3.0"
TEMPLATES = [
    "test://template/{id}/data",
    "notes://{name}",
    "x://{a}-{b}",
    "files://{folder}/{name}.md",
    "q://item?id={id}",
    "plain://fixed/uri",
]


def sdk_match(template: str, uri: str) -> dict[str, str] | str | None:
    """What the SDK makes of ``uri``: its variables, None, or ``"refused"``."""
    found = SdkTemplate.parse(template).match(uri)
    if found is None:
        return None
    if DEFAULT_RESOURCE_SECURITY.validate(found) is not None:
        return "refused"
    return {name: str(value) for name, value in found.items()}


def our_match(template: str, uri: str) -> dict[str, str] | str | None:
    try:
        return UriTemplate.parse(template).match(uri)
    except ArgumentsError:
        return "refused"


def test_the_sdk_release_is_the_one_compared() -> None:
    assert importlib.metadata.version("mcp") == CHECKED_AGAINST, (
        "the MCP SDK changed: run these tests, and if they pass, update CHECKED_AGAINST"
    )


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        ("test://template/{id}/data", "test://template/123/data", {"id": "123"}),
        ("test://template/{id}/data", "test://template/a%2Fb/data", {"id": "a/b"}),
        ("test://template/{id}/data", "test://template/a/b/data", None),
        ("test://template/{id}/data", "test://template//data", {"id": ""}),
        ("test://template/{id}/data", "test://template/caf%C3%A9/data", {"id": "café"}),
        ("notes://{name}", "notes://a.md?x=1", None),
        ("notes://{name}", "notes://%2E%2E", "refused"),
        ("notes://{name}", "notes://%2Fetc%2Fpasswd", "refused"),
        ("notes://{name}", "notes://C:evil", "refused"),
        ("notes://{name}", "notes://a%00b", "refused"),
        ("notes://{name}", "notes://a%2F..", {"name": "a/.."}),
        ("x://{a}-{b}", "x://1-2-3", {"a": "1-2", "b": "3"}),
        ("plain://fixed/uri", "plain://fixed/uri", {}),
    ],
)
def test_match(template: str, uri: str, expected: object) -> None:
    assert our_match(template, uri) == expected
    assert sdk_match(template, uri) == expected


URIS = st.text(alphabet="ab1-./?#%2FE:\\{}xiq=mdtestpl", max_size=24)


@settings(max_examples=400, deadline=None)
@given(template=st.sampled_from(TEMPLATES), tail=URIS)
def test_agrees_with_the_sdk(template: str, tail: str) -> None:
    prefix = template.split("{", 1)[0]
    uri = prefix + tail
    assert our_match(template, uri) == sdk_match(template, uri)


def test_expand_is_what_match_reads_back() -> None:
    template = UriTemplate.parse("files://{folder}/{name}.md")
    uri = template.expand({"folder": "a b", "name": "é/x"})
    assert uri == "files://a%20b/%C3%A9%2Fx.md"
    assert template.match(uri) == {"folder": "a b", "name": "é/x"}
    assert uri == SdkTemplate.parse("files://{folder}/{name}.md").expand(
        {"folder": "a b", "name": "é/x"}
    )
