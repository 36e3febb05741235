"""``harness call NAME [ARGS_JSON]``: one call through the full pipeline, approvals asked on
the terminal (``--yes`` approves)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import anyio
import click

from .options import common, options_of
from .problem_report import report_failures

if TYPE_CHECKING:
    from ..tools.calls import ToolCall, ToolResult


class CliApproval:
    """The asker ``harness call`` passes with its call: --yes, a terminal prompt, or no.

    Its answer races the approval object's other answerers (a console attached to the same
    host answers the same request, by the same id)."""

    def __init__(self, yes: bool) -> None:
        self.yes = yes
        self.refused_without_terminal = False

    async def request(self, call: ToolCall, reason: str) -> bool:
        """Approve with --yes; else ask on the terminal; refuse without one."""
        from ..tools.approval_contract import prompt

        if self.yes:
            return True
        if not sys.stdin.isatty():
            self.refused_without_terminal = True
            return False
        question = prompt(call, reason)  # control and bidirectional characters made visible
        answer: bool = await anyio.to_thread.run_sync(
            lambda: click.confirm(question, default=False, err=True),
            abandon_on_cancel=True,  # answered elsewhere first (the console): stop waiting
        )
        return answer


@click.command()
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
    from ..tools.calls import ToolCall

    options = options_of(ctx, **shared)
    approval = CliApproval(yes)

    async def main() -> ToolResult:
        async with options.host() as host:
            report_failures(host.status(), host.problems())
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
            kind = block.get("type")
            if kind == "text" or kind == "code":  # a run_code program shows as itself
                click.echo(block["text"])
            elif kind == "tool_call":  # a call the program made: one line, then its text
                ms = float(block.get("duration_ms") or 0)
                click.echo(f"  ↳ {block.get('name')} · {block.get('status')} · {ms:.0f} ms")
                for inner in block.get("content") or []:
                    if inner.get("type") == "text":
                        click.echo("    " + str(inner.get("text", "")).replace("\n", "\n    "))
            else:
                click.echo(json.dumps(block, ensure_ascii=False))
    else:
        click.echo(f"{result.code}: {result.error}", err=True)
    if approval.refused_without_terminal:
        click.echo(
            "hint: this call needs approval and there is no terminal to ask; pass --yes", err=True
        )
    sys.exit(0 if result.ok else 1)
