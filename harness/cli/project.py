"""``harness init``, ``enable`` and ``disable``: write the project's files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..errors import ConfigError, HarnessError
from .options import Options, common, fail, options_of


@click.command()
@click.argument("folder", metavar="[DIR]", default=".", type=click.Path(path_type=Path))
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def init(folder: Path, debug: bool) -> None:
    """Write a starter cordis.yml, the bundled plugins/ and workspace/ into DIR (default .).

    Existing files are never overwritten.
    """
    from .starter_files import init_project

    try:
        report = init_project(folder)
    except HarnessError as exc:
        fail(exc, 1, debug)
    except OSError as exc:
        fail(exc, 1, debug)
    for line in report.lines():
        click.echo(line)
    where = "" if folder == Path(".") else f"cd {folder}, "
    click.echo(f"next: {where}harness check, then harness run")


@click.command()
@common
@click.argument("entry_id", metavar="ID")
@click.pass_context
def enable(ctx: click.Context, /, entry_id: str, **shared: Any) -> None:
    """Switch entry ID on in the config file (comments and layout are kept)."""
    _flip(options_of(ctx, **shared), entry_id, True)


@click.command()
@common
@click.argument("entry_id", metavar="ID")
@click.pass_context
def disable(ctx: click.Context, /, entry_id: str, **shared: Any) -> None:
    """Switch entry ID off in the config file (comments and layout are kept)."""
    _flip(options_of(ctx, **shared), entry_id, False)


def _flip(options: Options, entry_id: str, on: bool) -> None:
    from ..loader.writeback import UnknownEntry, set_enabled

    path = options.config_path
    word = "enabled" if on else "disabled"
    try:
        changed = set_enabled(path, entry_id, on)
    except UnknownEntry as exc:
        fail(exc, 2, options.debug)
    except ConfigError as exc:
        fail(exc, 1, options.debug)
    click.echo(f"{entry_id} {word} in {path}" if changed else f"{entry_id} was already {word}")
