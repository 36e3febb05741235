"""``harness check``, ``plugins`` and ``tools``: load the config once and report on it.

With ``--json`` nothing but the host and the JSON encoder loads (rich only for tables).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import anyio
import click

from ..tools.formats import FORMATS
from .options import common, options_of
from .problem_report import report_failures

if TYPE_CHECKING:
    from ..host import EntryStatus
    from ..loader.config_problems import Problem


def _console() -> Any:
    from rich.console import Console

    return Console()


@click.command()
@common
@click.option("--json", "as_json", is_flag=True, help="Print {ok, problems} as JSON.")
@click.pass_context
def check(ctx: click.Context, /, as_json: bool, **shared: Any) -> None:
    """Load everything once and report every problem; exit 1 on any."""
    options = options_of(ctx, **shared)

    async def main() -> tuple[list[Problem], list[EntryStatus], bool]:
        host = options.host(lenient=True)
        async with host:
            return host.problems(), host.status(), host.loaded is None

    problems, statuses, unread = anyio.run(main)
    if as_json:
        report = {"ok": not problems, "problems": [p.to_dict() for p in problems]}
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        from .problem_report import report_problems
        from .tables import status_table

        if statuses:  # the errors follow as problems, with file and line: not in the table
            _console().print(status_table(statuses, with_tools=False, with_error=False))
        report_problems(problems, live=False, unread=unread)
        if not problems:
            click.echo("ok: no problems")
    sys.exit(1 if problems else 0)


@click.command()
@common
@click.option("--json", "as_json", is_flag=True, help="Print a list of {id, name, state, error}.")
@click.pass_context
def plugins(ctx: click.Context, /, as_json: bool, **shared: Any) -> None:
    """List the entries with id, name, state and error."""
    options = options_of(ctx, **shared)

    async def main() -> list[EntryStatus]:
        async with options.host() as host:
            return host.status()

    statuses = anyio.run(main)
    if as_json:
        click.echo(json.dumps([s.to_dict() for s in statuses], indent=2, ensure_ascii=False))
    else:
        from .tables import status_table

        _console().print(status_table(statuses, with_tools=False, with_error=True))


@click.command()
@common
@click.option("--json", "as_json", is_flag=True, help="Print the schema list as JSON.")
@click.option(
    "--format",
    "schema_format",
    type=click.Choice(FORMATS),
    default="openai",
    show_default=True,
    help="Schema format for --json.",
)
@click.option("--strict", is_flag=True, help="OpenAI strict mode for the tools that qualify.")
@click.option("--markdown", is_flag=True, help="Print a Markdown reference of the tools.")
@click.pass_context
def tools(
    ctx: click.Context,
    /,
    as_json: bool,
    schema_format: Any,
    strict: bool,
    markdown: bool,
    **shared: Any,
) -> None:
    """List the tools (or print their schemas with --json)."""
    options = options_of(ctx, **shared)
    reference: list[str] = []

    async def main() -> tuple[list[dict[str, Any]], list[tuple[str, str, str]]]:
        async with options.host() as host:
            report_failures(host.status(), host.problems())
            service = host.tools
            if markdown:
                from ..tools.reference import tools_markdown

                reference.append(tools_markdown(service))
            rows = [
                (
                    name,
                    (service.get(name).description.splitlines() or [""])[0],  # type: ignore[union-attr]
                    service.owner(name) or "",
                )
                for name in service.list()
            ]
            return service.schemas(schema_format, strict=strict or None), rows

    schemas, rows = anyio.run(main)
    if markdown:
        click.echo(reference[0], nl=False)
        return
    if as_json:
        click.echo(json.dumps(schemas, indent=2, ensure_ascii=False))
        return
    from .tables import tools_table

    _console().print(tools_table(rows))
