"""The ``harness`` command line: thin, it parses, calls :class:`~harness.host.Host` or
:mod:`harness.serving`, prints.

Exit codes: 0 success; 1 a failed check or a failed tool call; 2 a usage error or a config
that cannot be read at all (``check`` reports those as problems and exits 1). Errors print
as ``TypeName: message`` on stderr, with a traceback only under ``--debug``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

import anyio
import click
from rich.console import Console
from rich.table import Table

from . import __version__
from .errors import ConfigError, HarnessError
from .host import EntryStatus, Host
from .loader.problems import Problem
from .loader.writeback import UnknownEntry, set_enabled
from .serving import CliApproval, Serving, configure_logging, serve, status_table
from .tools.calls import ToolCall, ToolResult
from .tools.formats import FORMATS
from .tools.reference import tools_markdown

EXAMPLES = """
\b
Examples:
  harness run                              start the host on ./cordis.yml
  harness -c my.yml --patch dev.yml check  report every problem of a config
  harness tools --json --format anthropic  print the tool schemas
  harness call add '{"a": 1, "b": 2}'      run one call through the pipeline
  harness --set echo.enabled=false plugins list entries with one switched off
  harness disable files                    switch an entry off in the file
  harness run --mcp http --port 8765       serve the tools to MCP clients at /mcp
  harness mcp                              serve MCP on stdio (for client configs)
  harness init my-tools                    start a project: cordis.yml, plugins/, workspace/
"""


@dataclass
class Options:
    """Options every command takes, before or after the command name."""

    config: str | None = None
    patches: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    debug: bool = False

    def merged(self, other: Options) -> Options:
        """Command-level values win; lists add up."""
        return Options(
            other.config or self.config,
            [*self.patches, *other.patches],
            [*self.overrides, *other.overrides],
            self.debug or other.debug,
        )

    @property
    def config_path(self) -> Path:
        """``-c``, else ``$HARNESS_CONFIG``, else ``./cordis.yml``."""
        return Path(self.config or os.environ.get("HARNESS_CONFIG") or "cordis.yml")

    def host(self, **kwargs: Any) -> Host:
        """A host on these options."""
        return Host(self.config_path, patches=self.patches, overrides=self.overrides, **kwargs)


def common(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add the shared options to a command (or the group)."""
    func = click.option("--debug", is_flag=True, help="Show tracebacks and debug logs.")(func)
    func = click.option(
        "--set",
        "overrides",
        multiple=True,
        metavar="ID.KEY=VALUE",
        help="Set one key of an entry after the patches (repeatable).",
    )(func)
    func = click.option(
        "--patch",
        "patches",
        multiple=True,
        metavar="FILE",
        help="A patch file layered on the config, in order (repeatable).",
    )(func)
    func = click.option(
        "-c",
        "--config",
        metavar="FILE",
        help="The config file (default: $HARNESS_CONFIG or ./cordis.yml).",
    )(func)
    return func


def _options(
    ctx: click.Context, config: str | None, patches: Any, overrides: Any, debug: bool
) -> Options:
    local = Options(config, list(patches), list(overrides), debug)
    base = ctx.find_root().obj if isinstance(ctx.find_root().obj, Options) else Options()
    options = base.merged(local)
    configure_logging(options.debug)
    return options


@click.group(
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=EXAMPLES,
)
@click.version_option(__version__, prog_name="harness")
@common
@click.pass_context
def cli(ctx: click.Context, config: str | None, patches: Any, overrides: Any, debug: bool) -> None:
    """An async plugin host for LLM-agent tools, configured by cordis.yml."""
    ctx.obj = Options(config, list(patches), list(overrides), debug)


# -- run -------------------------------------------------------------------------------


def mcp_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options of serving MCP over HTTP."""
    func = click.option(
        "--allow-host",
        "allow_hosts",
        multiple=True,
        metavar="NAME",
        help="Also accept requests for this host name (repeatable; e.g. a DNS name or a "
        "proxy's). The bind address's own names are always accepted.",
    )(func)
    func = click.option(
        "--token",
        envvar="HARNESS_MCP_TOKEN",
        metavar="SECRET",
        help="Require Authorization: Bearer SECRET (needed to bind beyond loopback).",
    )(func)
    func = click.option(
        "--port", type=int, default=8765, show_default=True, help="HTTP port (0: any)."
    )(func)
    func = click.option(
        "--host", "bind", default="127.0.0.1", show_default=True, help="HTTP address."
    )(func)
    return func


@cli.command()
@common
@click.option("--no-watch", is_flag=True, help="Do not hot-reload on file changes.")
@click.option(
    "--mcp",
    "transport",
    type=click.Choice(["http", "stdio", "none"]),
    default="http",
    show_default=True,
    help="Serve the tools over MCP: streamable HTTP at /mcp, stdio, or not at all.",
)
@mcp_options
@click.option("--no-web", is_flag=True, help="Do not serve the web console at / (HTTP only).")
@click.pass_context
def run(
    ctx: click.Context,
    /,
    no_watch: bool,
    transport: str,
    bind: str,
    port: int,
    token: str | None,
    allow_hosts: tuple[str, ...],
    no_web: bool,
    **shared: Any,
) -> None:
    """Start the host: load, print the entries and their tools, serve until Ctrl-C."""
    options = _options(ctx, **shared)
    serving = Serving(transport, bind, port, token, web=not no_web, allow_hosts=allow_hosts)
    anyio.run(
        partial(serve, options.host(watch=not no_watch), serving, table=True, debug=options.debug)
    )


@cli.command(name="mcp")
@common
@click.option("--no-watch", is_flag=True, help="Do not hot-reload on file changes.")
@click.pass_context
def mcp_command(ctx: click.Context, /, no_watch: bool, **shared: Any) -> None:
    """Serve the tools over MCP on stdin/stdout (for MCP client configs)."""
    options = _options(ctx, **shared)
    host = options.host(watch=not no_watch)
    anyio.run(partial(serve, host, Serving("stdio"), table=False, debug=options.debug))


# -- check, plugins, tools ----------------------------------------------------------------


@cli.command()
@common
@click.option("--json", "as_json", is_flag=True, help="Print {ok, problems} as JSON.")
@click.pass_context
def check(ctx: click.Context, /, as_json: bool, **shared: Any) -> None:
    """Load everything once and report every problem; exit 1 on any."""
    options = _options(ctx, **shared)

    async def main() -> tuple[list[Problem], list[EntryStatus]]:
        host = options.host(lenient=True)
        async with host:
            return host.problems(), host.status()

    problems, statuses = anyio.run(main)
    if as_json:
        report = {"ok": not problems, "problems": [p.to_dict() for p in problems]}
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        if statuses:
            Console().print(status_table(statuses, with_tools=False))
        for problem in problems:
            click.echo(f"problem: {problem}", err=True)
        click.echo(
            "ok: no problems" if not problems else f"{len(problems)} problem(s)",
            err=bool(problems),
        )
    sys.exit(1 if problems else 0)


@cli.command()
@common
@click.option("--json", "as_json", is_flag=True, help="Print a list of {id, name, state, error}.")
@click.pass_context
def plugins(ctx: click.Context, /, as_json: bool, **shared: Any) -> None:
    """List the entries with id, name, state and error."""
    options = _options(ctx, **shared)

    async def main() -> list[EntryStatus]:
        async with options.host() as host:
            return host.status()

    statuses = anyio.run(main)
    if as_json:
        click.echo(json.dumps([s.to_dict() for s in statuses], indent=2, ensure_ascii=False))
    else:
        Console().print(status_table(statuses, with_tools=False, with_error=True))


@cli.command()
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
    options = _options(ctx, **shared)
    reference: list[str] = []

    async def main() -> tuple[list[dict[str, Any]], list[tuple[str, str, str]]]:
        async with options.host() as host:
            service = host.tools
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
    table = Table(title="tools")
    for column in ("name", "description", "registered by"):
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    Console().print(table)


# -- call --------------------------------------------------------------------------------


@cli.command()
@common
@click.argument("name")
@click.argument("args_json", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the ToolResult as JSON.")
@click.option("--yes", "-y", is_flag=True, help="Approve calls that ask for approval.")
@click.pass_context
def call(
    ctx: click.Context,
    /,
    name: str,
    args_json: str | None,
    as_json: bool,
    yes: bool,
    **shared: Any,
) -> None:
    """Run one call NAME [ARGS_JSON] through the full pipeline; exit 1 if it fails."""
    options = _options(ctx, **shared)
    approval = CliApproval(yes)

    async def main() -> ToolResult:
        async with options.host() as host:
            # the terminal decides this call's approvals, even beside an agent's broker
            result: ToolResult = await host.tools.execute(
                ToolCall("cli", name, args_json if args_json is not None else {}),
                approval=approval,
            )
            return result

    result = anyio.run(main)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    elif result.ok:
        for block in result.content:
            if block.get("type") == "text":
                click.echo(block["text"])
            else:
                click.echo(json.dumps(block, ensure_ascii=False))
    else:
        click.echo(f"{result.code}: {result.error}", err=True)
    if approval.refused_without_terminal:
        click.echo(
            "hint: this call needs approval and there is no terminal to ask; pass --yes", err=True
        )
    sys.exit(0 if result.ok else 1)


# -- init ------------------------------------------------------------------------------


@cli.command()
@click.argument("folder", metavar="[DIR]", default=".", type=click.Path(path_type=Path))
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def init(folder: Path, debug: bool) -> None:
    """Write a starter cordis.yml, the bundled plugins/ and workspace/ into DIR (default .).

    Existing files are never overwritten.
    """
    from .starter import init_project

    try:
        report = init_project(folder)
    except HarnessError as exc:
        _fail(exc, 1, debug)
    except OSError as exc:
        _fail(exc, 1, debug)
    for line in report.lines():
        click.echo(line)
    where = "" if folder == Path(".") else f"cd {folder}, "
    click.echo(f"next: {where}harness check, then harness run")


# -- enable / disable --------------------------------------------------------------------


@cli.command()
@common
@click.argument("entry_id", metavar="ID")
@click.pass_context
def enable(ctx: click.Context, /, entry_id: str, **shared: Any) -> None:
    """Switch entry ID on in the config file (comments and layout are kept)."""
    _flip(_options(ctx, **shared), entry_id, True)


@cli.command()
@common
@click.argument("entry_id", metavar="ID")
@click.pass_context
def disable(ctx: click.Context, /, entry_id: str, **shared: Any) -> None:
    """Switch entry ID off in the config file (comments and layout are kept)."""
    _flip(_options(ctx, **shared), entry_id, False)


def _flip(options: Options, entry_id: str, on: bool) -> None:
    path = options.config_path
    word = "enabled" if on else "disabled"
    try:
        changed = set_enabled(path, entry_id, on)
    except UnknownEntry as exc:
        _fail(exc, 2, options.debug)
    except ConfigError as exc:
        _fail(exc, 1, options.debug)
    click.echo(f"{entry_id} {word} in {path}" if changed else f"{entry_id} was already {word}")


# -- output helpers ----------------------------------------------------------------------


def _fail(exc: BaseException, code: int, debug: bool) -> NoReturn:
    if debug:
        import traceback

        traceback.print_exception(exc)
    click.echo(f"{type(exc).__name__}: {exc}", err=True)
    sys.exit(code)


def _single(group: BaseExceptionGroup[Any]) -> BaseException:
    """The one error inside (nested) exception groups, or the group itself."""
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def main() -> None:
    """Console entry point: library errors become ``TypeName: message`` and an exit code."""
    debug = "--debug" in sys.argv
    try:
        try:
            cli.main(standalone_mode=False)
        except BaseExceptionGroup as group:
            raise _single(group) from group
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except ConfigError as exc:
        _fail(exc, 2, debug)
    except HarnessError as exc:
        _fail(exc, 1, debug)
    except KeyboardInterrupt:
        sys.exit(130)
