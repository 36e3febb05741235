"""How the terminal commands print problems: plain lines on stderr, then what to do."""

from __future__ import annotations

import click

from ..loader.problems import Problem, fix_hint


def report_problems(problems: list[Problem], *, live: bool) -> None:
    """Every problem on stderr, one line each (file, line, entry, what is wrong), then what
    to do; plain text, so a log reader or an MCP client's log gets whole lines."""
    for problem in problems:
        click.echo(f"problem: {problem}", err=True)
    if problems:
        click.echo(f"{len(problems)} problem(s): {fix_hint(live)}", err=True)
