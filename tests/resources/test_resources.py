"""The ``resources`` service of a Host: registered by plugins as effects, listed, read."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness import Context, Host, define_resource, resource
from harness.errors import (
    AccessDenied,
    ArgumentsError,
    ContentError,
    DefinitionError,
    NameConflict,
    NotFound,
)
from harness.resources import ResourceContents, ResourcesService

from .conftest import PNG, docs_project

pytestmark = pytest.mark.anyio


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[Host]:
    async with Host(docs_project(tmp_path)) as running:
        yield running


async def test_every_host_lists_the_resources_its_plugins_registered(host: Host) -> None:
    resources = host.ctx.resources
    assert isinstance(resources, ResourcesService)
    assert resources.list() == ["docs://readme", "docs://logo"]
    assert resources.templates() == ["docs://pages/{page}"]
    readme = resources.get("docs://readme")
    assert readme is not None
    assert (readme.name, readme.description, readme.mime_type) == (
        "readme",
        "The project's README.",
        "text/markdown",
    )
    assert resources.owner("docs://pages/{page}") == "plugin 'docs'"
    logo = resources.get("docs://logo")
    assert logo is not None
    assert logo.icons == (
        {"src": "https://example.com/logo.png", "mimeType": "image/png", "sizes": ["48x48"]},
    )


async def test_read_text_binary_and_templates(host: Host) -> None:
    resources = host.ctx.resources
    assert await resources.read("docs://readme") == [
        ResourceContents("docs://readme", "text/markdown", text="# Readme")
    ]
    (logo,) = await resources.read("docs://logo")
    assert (logo.blob, logo.text, logo.mime_type) == (PNG, None, "image/png")
    assert logo.to_dict() == {
        "uri": "docs://logo",
        "mimeType": "image/png",
        "blob": "iVBORw0KGgoAAAANSUhEUg==",
    }
    (page,) = await resources.read("docs://pages/intro")
    assert (page.uri, page.text) == ("docs://pages/intro", "# Intro")


async def test_unknown_uris_and_missing_pages_are_not_found(host: Host) -> None:
    with pytest.raises(NotFound) as unknown:
        await host.ctx.resources.read("docs://nothing/here")
    assert str(unknown.value) == (
        "resource 'docs://nothing/here' not found: no resource has this URI and no template "
        "matches it"
    )
    assert (unknown.value.kind, unknown.value.key) == ("resource", "docs://nothing/here")
    with pytest.raises(NotFound) as missing:  # the read's own: the template matched
        await host.ctx.resources.read("docs://pages/outro")
    assert str(missing.value) == "no page named 'outro'"
    assert missing.value.key == "docs://pages/outro"


async def test_a_template_refuses_values_that_climb_out(host: Host) -> None:
    with pytest.raises(ArgumentsError) as caught:
        await host.ctx.resources.read("docs://pages/..%2F..%2Fsecrets")
    assert str(caught.value) == (
        "resource URI 'docs://pages/..%2F..%2Fsecrets': variable 'page' of "
        "'docs://pages/{page}' is refused: its '..' climbs out of the folder it names"
    )


async def test_completions_of_a_template_variable(host: Host) -> None:
    found = await host.ctx.resources.complete("docs://pages/{page}", "page", "in")
    assert found.values == ("intro", "install", "index")
    assert (found.total, found.has_more) == (3, False)
    none = await host.ctx.resources.complete("docs://pages/{page}", "other", "x")
    assert none.values == ()


# -- the registry as effects -----------------------------------------------------------


def plugin_of(*definitions: Any, name: str) -> Any:
    def apply(ctx: Context) -> None:
        for definition in definitions:
            ctx.resources.register(definition)

    apply.inject = ["resources"]  # type: ignore[attr-defined]
    apply.name = name  # type: ignore[attr-defined]
    return apply


NOTE = define_resource(uri="notes://a", name="a", description="A note", read=lambda p: "a")


async def test_registering_is_an_effect_of_the_plugin_with_change_events() -> None:
    changes: list[tuple[str, str]] = []
    async with Context() as root:
        await root.plugin(ResourcesService)
        root.on("resources/change", lambda kind, key: changes.append((kind, key)))
        fiber = await root.plugin(plugin_of(NOTE, name="notes"))
        assert root.resources.list() == ["notes://a"]
        with pytest.raises(NameConflict) as caught:
            await root.plugin(plugin_of(NOTE, name="again"))
        await fiber.dispose()
        assert root.resources.list() == []
    assert str(caught.value) == (
        "resource 'notes://a' is already registered by plugin 'notes'; plugin 'again' "
        "cannot register it too (rename one of them or unload the holder)"
    )
    assert changes == [("added", "notes://a"), ("removed", "notes://a")]


async def test_a_read_that_fails_or_returns_what_cannot_be_served() -> None:
    def broken(params: dict[str, str]) -> str:
        raise OSError("disk gone")

    async with Context() as root:
        await root.plugin(ResourcesService)
        root.resources.register(
            define_resource(uri="x://broken", name="b", description="d", read=broken)
        )
        root.resources.register(
            define_resource(uri="x://odd", name="o", description="d", read=lambda p: 42)
        )
        root.resources.register(
            define_resource(uri="x://many", name="m", description="d", read=lambda p: ["a", b"b"])
        )
        with pytest.raises(ContentError) as failed:
            await root.resources.read("x://broken")
        with pytest.raises(ContentError) as odd:
            await root.resources.read("x://odd")
        many = await root.resources.read("x://many")
    assert str(failed.value) == "reading resource 'x://broken' failed: disk gone"
    assert isinstance(failed.value.__cause__, OSError)
    assert str(odd.value) == (
        "reading resource 'x://odd' returned int; a read returns text (str), bytes, or a "
        "list of them"
    )
    assert [item.to_dict() for item in many] == [
        {"uri": "x://many", "mimeType": "text/plain", "text": "a"},
        {"uri": "x://many", "mimeType": "application/octet-stream", "blob": "Yg=="},
    ]


async def test_notify_updated_emits_the_uri() -> None:
    seen = anyio.Event()
    updated: list[str] = []

    def on_updated(uri: str) -> None:
        updated.append(uri)
        seen.set()

    async with Context() as root:
        await root.plugin(ResourcesService)
        root.on("resources/updated", on_updated)
        root.resources.notify_updated("notes://a")
        with anyio.fail_after(5):
            await seen.wait()
    assert updated == ["notes://a"]


async def test_the_policy_refuses_reads_by_uri_glob(tmp_path: Path) -> None:
    rules = "{ rules: { 'resource:docs://pages/*': deny, 'resource:docs://logo': ask } }"
    async with Host(docs_project(tmp_path, policy=rules)) as host:
        with pytest.raises(AccessDenied) as denied:
            await host.ctx.resources.read("docs://pages/intro")
        with pytest.raises(AccessDenied) as asked:
            await host.ctx.resources.read("docs://logo")
        allowed = await host.ctx.resources.read("docs://readme")
    assert str(denied.value) == (
        "denied: the policy forbids resource:docs://pages/intro (rule 'resource:docs://pages/*')"
    )
    assert str(asked.value) == (
        "denied: the policy asks before resource:docs://logo (rule 'resource:docs://logo'), "
        "and nobody is asked here"
    )
    assert allowed[0].text == "# Readme"


async def test_reads_the_policy_refused_stay_refused_while_it_is_not_loaded(
    tmp_path: Path,
) -> None:
    rules = "{ rules: { 'resource:docs://logo': deny } }"
    config = docs_project(tmp_path, policy=rules)
    async with Host(config) as host:
        config.write_text(config.read_text().replace("config: {", "enabled: false, config: {"))
        await host.reload()
        assert [s.state for s in host.status()] == ["disabled", "active"]
        with pytest.raises(AccessDenied) as refused:
            await host.ctx.resources.read("docs://logo")
        assert (await host.ctx.resources.read("docs://readme"))[0].text == "# Readme"
    assert str(refused.value) == (
        "denied: the policy forbids resource:docs://logo (rule 'resource:docs://logo'), and "
        "plugin 'policy', which decides it, is not loaded right now (reloading or failed); "
        "calls are refused until it is back"
    )


# -- definitions -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: define_resource(uri="no-scheme", name="n", description="d", read=print),
            "resource uri 'no-scheme' is invalid: it needs a scheme, such as "
            "'notes://{name}' or 'file:///path'",
        ),
        (
            lambda: define_resource(uri="x://{a}{b}", name="n", description="d", read=print),
            "URI template 'x://{a}{b}': {a} and {b} touch; put a literal between them so a "
            "URI can be split",
        ),
        (
            lambda: define_resource(uri="x://{+path}", name="n", description="d", read=print),
            "URI template 'x://{+path}': {+path} is not a simple expression; only {name} "
            "(letters, digits, _ and .) is supported, no operators or modifiers",
        ),
        (
            lambda: define_resource(uri="x://a", name="n", description=" ", read=print),
            "resource 'x://a': description must be a non-empty string",
        ),
        (
            lambda: define_resource(
                uri="x://{a}", name="n", description="d", read=print, complete={"b": print}
            ),
            "resource 'x://{a}': complete names 'b', which it does not take (it takes: a)",
        ),
        (
            lambda: define_resource(
                uri="x://a", name="n", description="d", read=print, icons=[{"href": "x"}]
            ),
            "resource 'x://a': icons[0] has unknown keys ['href']; allowed are src, mimeType, "
            "sizes, theme",
        ),
        (
            lambda: define_resource(
                uri="x://a", name="n", description="d", read=print, annotations={"priority": 2}
            ),
            "resource 'x://a': annotations.priority must be a number from 0 to 1",
        ),
        (
            lambda: resource("x://{a}")(lambda b: b),
            "resource 'x://{a}': the function <lambda>() has no parameter 'a' for the URI's "
            "variable",
        ),
        (
            lambda: resource(print),
            "@resource needs the resource's URI first: @resource('notes://{name}') above the "
            "function",
        ),
    ],
)
def test_malformed_definitions_are_refused_when_defined(make: Any, message: str) -> None:
    with pytest.raises(DefinitionError) as caught:
        make()
    assert str(caught.value) == message


def test_resource_from_a_function_passes_variables_as_keywords() -> None:
    @resource("files://{folder}/{name}", mime_type="text/plain", annotations={"priority": 0.5})
    def file(folder: str, name: str, suffix: str = ".txt") -> str:
        """A file in a folder."""
        return f"{folder}/{name}{suffix}"

    assert (file.name, file.description, file.uri) == (
        "file",
        "A file in a folder.",
        "files://{folder}/{name}",
    )
    assert file.template.variables == ("folder", "name")
    assert file.read({"folder": "a", "name": "b"}) == "a/b.txt"
    assert dict(file.annotations) == {"priority": 0.5}
