"""How the terminal commands print problems: plain lines on stderr, then what to do."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..loader.config_problems import Problem, fix_hint

if TYPE_CHECKING:
    from ..host import EntryStatus


def report_problems(problems: list[Problem], *, live: bool, unread: bool = False) -> None:
    """Every problem on stderr, one line each (file, line, entry, what is wrong), then what
    to do; plain text, so a log reader or an MCP client's log gets whole lines. ``unread``:
    the config could not be read at all (``check`` on a missing file), so nothing loaded."""
    for problem in problems:
        click.echo(f"problem: {problem}", err=True)
    if unread:
        hint = "the config could not be read, so nothing was loaded: fix it, then run the "
        click.echo(f"{len(problems)} problem(s): {hint}command again", err=True)
    elif problems:
        click.echo(f"{len(problems)} problem(s): {fix_hint(live)}", err=True)


def report_failures(statuses: list[EntryStatus], problems: list[Problem]) -> None:
    """One line on stderr per entry that failed (its first problem, with file and line).

    What ``tools`` and ``call`` print: a failed entry does not change their exit code
    (DESIGN §6), so the line is how a person, or a script reading stderr, learns that the
    entry's tools are missing; stdout keeps the answer alone (valid JSON under ``--json``).
    Entries only waiting for a service cost nothing here: ``harness check`` lists them.
    """
    failed = {status.id for status in statuses if status.state == "failed"}
    for problem in problems:
        if problem.entry in failed:
            failed.discard(problem.entry)
            click.echo(f"failed: {problem}", err=True)
