"""``harness resources [URI]`` and ``harness prompts [NAME [ARGS_JSON]]``: list what the
plugins registered, or read one resource, or render one prompt.

A read or a render that fails (an unknown URI or name, bad arguments, a policy refusal, a
plugin's error) prints ``TypeName: message`` and exits 1, as a failed ``harness call`` does.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import anyio
import click

from ..errors import ArgumentsError, NotFound
from .options import common, options_of

if TYPE_CHECKING:
    from ..resources.contents import ResourceContents


def _console() -> Any:
    from rich.console import Console

    return Console()


def _first_line(text: str) -> str:
    return (text.splitlines() or [""])[0]


@click.command()
@common
@click.argument("uri", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the list, or the contents, as JSON.")
@click.pass_context
def resources(ctx: click.Context, /, uri: str | None, as_json: bool, **shared: Any) -> None:
    """List the resources and templates, or read the resource at URI."""
    options = options_of(ctx, **shared)

    async def listing() -> dict[str, list[dict[str, Any]]]:
        async with options.host() as host:
            service = host.ctx.resources
            return {
                "resources": [service.get(key).to_dict() for key in service.list()],
                "resourceTemplates": [service.get(key).to_dict() for key in service.templates()],
            }

    async def read(uri: str) -> list[ResourceContents] | NotFound:
        async with options.host() as host:
            try:
                found: list[ResourceContents] = await host.ctx.resources.read(uri)
            except NotFound as exc:  # caught here, not out of the host's task group
                return exc
            return found

    if uri is None:
        listed = anyio.run(listing)
        if as_json:
            click.echo(json.dumps(listed, indent=2, ensure_ascii=False))
            return
        from .tables import resources_table

        rows = [
            (
                item.get("uri") or item["uriTemplate"],
                item.get("mimeType", ""),
                item["name"],
                _first_line(item["description"]),
            )
            for item in [*listed["resources"], *listed["resourceTemplates"]]
        ]
        _console().print(resources_table(rows))
        return
    contents = anyio.run(read, uri)
    if isinstance(contents, NotFound):
        _fail(contents, "harness resources lists the URIs and templates")
    if as_json:
        click.echo(json.dumps({"contents": [item.to_dict() for item in contents]}, indent=2))
        return
    for item in contents:
        if item.text is not None:
            click.echo(item.text)
        elif not sys.stdout.isatty():  # redirected: the bytes themselves
            sys.stdout.buffer.write(item.blob or b"")
            sys.stdout.buffer.flush()
        else:
            click.echo(
                f"({len(item.blob or b'')} bytes of {item.mime_type}; redirect the output to "
                "a file to save them, or pass --json for base64)"
            )


@click.command()
@common
@click.argument("name", required=False)
@click.argument("args_json", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the list, or the messages, as JSON.")
@click.pass_context
def prompts(
    ctx: click.Context, /, name: str | None, args_json: str | None, as_json: bool, **shared: Any
) -> None:
    """List the prompts, or render prompt NAME with ARGS_JSON (an object of strings)."""
    options = options_of(ctx, **shared)

    async def listing() -> list[dict[str, Any]]:
        async with options.host() as host:
            service = host.ctx.prompts
            return [service.get(key).to_dict() for key in service.list()]

    async def render(name: str, args: Any) -> tuple[str, list[dict[str, Any]]] | NotFound:
        async with options.host() as host:
            try:
                messages = await host.ctx.prompts.render(name, args)
            except NotFound as exc:  # caught here, not out of the host's task group
                return exc
            return host.ctx.prompts.get(name).description, messages

    if name is None:
        listed = anyio.run(listing)
        if as_json:
            click.echo(json.dumps(listed, indent=2, ensure_ascii=False))
            return
        from .tables import prompts_table

        rows = [
            (
                item["name"],
                ", ".join(a["name"] + ("*" if a["required"] else "") for a in item["arguments"]),
                _first_line(item["description"]),
            )
            for item in listed
        ]
        _console().print(prompts_table(rows))
        return
    args: Any = {}
    if args_json is not None:
        try:
            args = json.loads(args_json)
        except ValueError as exc:
            _fail(
                ArgumentsError(f"ARGS_JSON is not valid JSON ({exc})"), "pass an object of strings"
            )
    rendered = anyio.run(render, name, args)
    if isinstance(rendered, NotFound):
        _fail(rendered, "harness prompts lists the prompts and their arguments")
    description, messages = rendered
    if as_json:
        shown = {"description": description, "messages": messages}
        click.echo(json.dumps(shown, indent=2, ensure_ascii=False))
        return
    for message in messages:
        block = message["content"]
        if block.get("type") == "text":
            click.echo(f"{message['role']}: {block['text']}")
        else:
            click.echo(f"{message['role']}: {json.dumps(block, ensure_ascii=False)}")


def _fail(exc: Exception, hint: str) -> NoReturn:
    click.echo(f"{type(exc).__name__}: {exc}", err=True)
    click.echo(f"hint: {hint}", err=True)
    sys.exit(1)
