"""``harness chat`` and ``harness sessions``: the agent from the terminal (:mod:`.chat`)."""

from __future__ import annotations

import sys
from typing import Any

import click

from .options import common, options_of


@click.command()
@common
@click.option("-m", "--message", metavar="TEXT", help="Send one message, show the turn, exit.")
@click.option("--session", "session_id", metavar="ID", help="Resume the session ID.")
@click.option("--yes", "-y", is_flag=True, help="Approve every approval request once.")
@click.option("--no-watch", is_flag=True, help="Do not hot-reload on file changes.")
@click.option(
    "--demo",
    is_flag=True,
    help="Talk to the demo model: scripted rules, not a language model (no key needed).",
)
@click.pass_context
def chat(
    ctx: click.Context,
    /,
    message: str | None,
    session_id: str | None,
    yes: bool,
    no_watch: bool,
    demo: bool,
    **shared: Any,
) -> None:
    """Talk to the configured model, which calls the tools (Ctrl-C cancels a turn)."""
    from .chat import run_chat

    options = options_of(ctx, **shared)
    if not demo:
        sys.exit(run_chat(options, message, session_id, yes, not no_watch))
    from .demo import banner, demo_options

    with demo_options(options) as (with_demo, info):
        for line in banner(info, model=False):
            click.echo(line, err=True)
        code = run_chat(with_demo, message, session_id, yes, not no_watch)
    sys.exit(code)


@click.group(invoke_without_command=True)
@common
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
@click.pass_context
def sessions(ctx: click.Context, /, as_json: bool, **shared: Any) -> None:
    """List the agent's sessions; `sessions show ID` prints one."""
    ctx.obj = options_of(ctx, **shared)
    if ctx.invoked_subcommand is None:
        from .session_record import list_sessions

        list_sessions(ctx.obj, as_json)


@sessions.command(name="show")
@click.argument("session_id", metavar="ID|FILE")
@click.option("--json", "as_json", is_flag=True, help="Print the events (or --stats) as JSON.")
@click.option("--stats", is_flag=True, help="Print each turn's trajectory: steps, time, tokens.")
@click.pass_context
def sessions_show(ctx: click.Context, /, session_id: str, as_json: bool, stats: bool) -> None:
    """Print session ID, or an exported JSONL log FILE (a path, or a name ending .jsonl)."""
    from .session_record import show

    show(ctx.obj, session_id, as_json, stats)


@sessions.command(name="import")
@click.argument("folder", type=click.Path(file_okay=False))
@click.pass_context
def sessions_import(ctx: click.Context, /, folder: str) -> None:
    """Move the JSONL logs of FOLDER into the store the agent's sessions setting names
    (importing twice adds nothing; a broken line is reported FILE:LINE, the rest imported)."""
    from .session_record import import_logs

    sys.exit(import_logs(ctx.obj, folder))
