"""What every command shares: the options before or after the command name, logging set
up from them, and how a failure ends the process."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from .logs import configure_logging

if TYPE_CHECKING:
    from ..host import Host


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
        from ..host import Host

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


def options_of(
    ctx: click.Context, config: str | None, patches: Any, overrides: Any, debug: bool
) -> Options:
    """The group's options merged with the command's; logging configured from them."""
    local = Options(config, list(patches), list(overrides), debug)
    base = ctx.find_root().obj if isinstance(ctx.find_root().obj, Options) else Options()
    options = base.merged(local)
    configure_logging(options.debug)
    return options


def fail(exc: BaseException, code: int, debug: bool) -> NoReturn:
    """Print ``TypeName: message`` (and the traceback under ``--debug``); exit ``code``."""
    if debug:
        import traceback

        traceback.print_exception(exc)
    click.echo(f"{type(exc).__name__}: {exc}", err=True)
    sys.exit(code)
