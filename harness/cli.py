"""The ``harness`` command line: thin, it parses, calls the library, prints, maps errors."""

from __future__ import annotations

import sys

import anyio
import click
from rich.console import Console
from rich.table import Table

from . import __version__
from .context import Context
from .errors import HarnessError


def _demo(ctx: Context) -> None:
    ctx.logger.info("demo plugin applied")


async def _run() -> None:
    async with Context() as root:
        fiber = await root.plugin(_demo, name="demo")
        table = Table(title="harness")
        table.add_column("id")
        table.add_column("state")
        table.add_row(fiber.name, fiber.state.value)
        Console().print(table)
        Console(stderr=True).print("running; press Ctrl-C to stop")
        await anyio.sleep_forever()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="harness")
def cli() -> None:
    """An async plugin host for LLM-agent tools."""


@cli.command()
def run() -> None:
    """Start the host and keep it running until Ctrl-C."""
    try:
        anyio.run(_run)
    except KeyboardInterrupt:
        return


def main() -> None:
    """Console entry point: print ``TypeName: message`` instead of a traceback."""
    try:
        cli(standalone_mode=True)
    except HarnessError as exc:
        click.echo(f"{type(exc).__name__}: {exc}", err=True)
        sys.exit(1)
