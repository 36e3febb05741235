"""``harness auth ID``: authorise harness with the OAuth server of an HTTP MCP entry.

The flow is the gateway's (:mod:`harness.gateway.authorise`); this reads the entry from the
config and reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import click

from .options import common, fail, options_of


@click.command("auth")
@common
@click.argument("entry_id", metavar="ID")
@click.option("--no-browser", is_flag=True, help="Print the URL only; open no browser.")
@click.option(
    "--timeout", default=300.0, show_default=True, help="Seconds to wait for the browser step."
)
@click.pass_context
def auth(
    ctx: click.Context, /, entry_id: str, no_browser: bool, timeout: float, **shared: Any
) -> None:
    """Authorise harness (OAuth 2.1) with the server of entry ID, in a browser.

    ID is a harness:mcp-client entry with url and oauth. The URL to open is printed too;
    the browser comes back to a listener on 127.0.0.1. Tokens are kept in
    .harness/oauth/ID.json (readable by you only) and refreshed before they expire.
    """
    from ..errors import ConfigError
    from ..gateway.authorise import AuthProblem, authorise, entry_config
    from ..loader.config import read_config

    options = options_of(ctx, **shared)
    patches = [Path(patch) for patch in options.patches]

    def show(url: str) -> None:
        click.echo(f"Authorise harness for entry {entry_id!r} in your browser:\n  {url}")

    try:
        loaded = read_config(options.config_path, patches, options.overrides)
        plan = next((plan for plan in loaded.plans if plan.id == entry_id), None)
        if plan is None:
            raise AuthProblem(f"{loaded.file} has no entry {entry_id!r}")
        if plan.errors:
            raise AuthProblem(str(plan.errors[0]))
        config = entry_config(entry_id, plan.name, plan.config)
        base_dir = loaded.file.parent
        stores = [p for p in loaded.plans if p.name == "harness:store" and p.enabled]
        store = (stores[0].config or {}) if stores else None
    except (AuthProblem, ConfigError) as exc:
        fail(exc, 2, options.debug)
    try:
        asked, where = anyio.run(
            authorise, config, entry_id, base_dir, show, not no_browser, timeout, store
        )
    except Exception as exc:
        problem = AuthProblem(f"entry {entry_id!r}: authorisation failed: {_reason(exc)}")
        problem.__cause__ = exc  # shown under --debug
        fail(problem, 1, options.debug)
    state = "is authorised" if asked else "needed no authorisation"
    click.echo(f"entry {entry_id!r} {state}; its tokens are in {where}")


def _reason(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return "the browser step did not finish in time (--timeout)"
    return f"{type(exc).__name__}: {exc}"
