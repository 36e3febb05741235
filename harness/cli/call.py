"""``harness call NAME [ARGS_JSON]``: one call through the full pipeline, approvals asked on
the terminal (``--yes`` approves).

The call carries a context with surface ``cli`` (DESIGN §16): on a terminal a tool's
progress is a bar on standard error and its question is asked field by field (``--yes``
never answers it; with no terminal it is ``cancel``-led, with the reason); its log entries
go to standard error; its roots are the project's folder; it cannot sample (no model)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import click

from ..tools.approval_contract import visible
from ..tools.call_context import ApproverClient, CallContext, unavailable
from ..tools.inputs import Answer, AskInput, Input, InputUnavailable, Root
from ..tools.jsonvalue import printable
from .options import common, options_of
from .problem_report import report_failures
from .terminal_inputs import DECLINE_NOTE, Bars, fill_form, stderr_bars

if TYPE_CHECKING:
    from ..tools.calls import ToolCall, ToolResult


class CliApproval:
    """The asker ``harness call`` passes with its call: --yes, a terminal prompt, or no.

    Its answer races the approval object's other answerers (a console attached to the same
    host answers the same request, by the same id)."""

    def __init__(self, yes: bool) -> None:
        self.yes = yes
        self.refused_without_terminal = False
        self.bars: Bars | None = None
        """The call's progress bars, stepped aside while the prompt waits."""
        self.asking = anyio.Lock()
        """One prompt at a time on the terminal (a program's calls: approvals, questions)."""

    async def request(self, call: ToolCall, reason: str) -> bool:
        """Approve with --yes; else ask on the terminal; refuse without one."""
        from ..tools.approval_contract import prompt

        if self.yes:
            return True
        if not sys.stdin.isatty():
            self.refused_without_terminal = True
            return False
        question = prompt(call, reason)  # control and bidirectional characters made visible
        async with self.asking:
            with self.bars.aside() if self.bars is not None else nullcontext():
                answer: bool = await anyio.to_thread.run_sync(
                    lambda: click.confirm(question, default=False, err=True),
                    abandon_on_cancel=True,  # answered elsewhere first (the console): stop waiting
                )
        return answer


class CliClient(ApproverClient):
    """The client of ``harness call``'s call: the terminal (see the module)."""

    def __init__(self, approval: CliApproval, folder: Path, bars: Bars | None) -> None:
        super().__init__(approval)
        self.bars = bars
        folder = folder.resolve()
        self.roots = [Root(folder.as_uri(), folder.name or str(folder))]
        self.asking = approval.asking  # a program's calls ask one at a time

    async def answer(self, ctx: CallContext, requests: Mapping[str, Input]) -> dict[str, Any]:
        answers: dict[str, Any] = {}
        for key, request in requests.items():
            if request.kind == "roots":
                answers[key] = list(self.roots)
            elif request.kind == "sample":
                raise InputUnavailable(unavailable(ctx, request))
            else:
                answers[key] = await self.ask(ctx, request)
        return answers

    async def ask(self, ctx: CallContext, request: AskInput) -> Answer:
        """The tool's question on the terminal, field by field; never ``--yes``."""
        name = ctx.call.name
        if not sys.stdin.isatty():
            return Answer(
                "cancel",
                reason=f"nobody can answer tool {name}'s question: harness call has no "
                "terminal to ask on (--yes answers approvals, never a tool's question)",
            )
        async with self.asking:
            with self.bars.aside() if self.bars is not None else nullcontext():
                click.echo(f"{visible(name)} asks: {visible(request.message)}", err=True)
                click.echo(f"({DECLINE_NOTE})", err=True)
                content = await fill_form(
                    _line, lambda text: click.echo(text, err=True), request.schema
                )
        return Answer("decline") if content is None else Answer("accept", content)

    async def progress(
        self, ctx: CallContext, done: float, total: float | None, message: str | None
    ) -> None:
        if self.bars is not None:
            self.bars.update(ctx.call.id, ctx.call.name, done, total, message)

    async def log(self, ctx: CallContext, level: str, message: str, data: dict[str, Any]) -> None:
        shown = json.dumps(printable(data), ensure_ascii=False, default=str) if data else ""
        extra = f" {shown}" if shown else ""
        click.echo(f"{ctx.call.name}: {level}: {visible(message)}{visible(extra)}", err=True)


async def _line(question: str) -> str | None:
    """One line typed on the terminal; None at its end (Ctrl-D)."""

    def read() -> str | None:
        click.echo(question + " ", nl=False, err=True)
        line = sys.stdin.readline()
        return line.rstrip("\n") if line else None

    return await anyio.to_thread.run_sync(read, abandon_on_cancel=True)


@click.command()
@common
@click.argument("name")
@click.argument("args_json", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the ToolResult as JSON.")
@click.option("--yes", "-y", is_flag=True, help="Approve calls that ask for approval.")
@click.option(
    "--key",
    default=None,
    help="An idempotency key: with harness:store loaded, a repeat of the key is answered "
    "from the call journal instead of running again (docs/store.md).",
)
@click.pass_context
def call(
    ctx: click.Context,
    /,
    name: str,
    args_json: str | None,
    as_json: bool,
    yes: bool,
    key: str | None,
    **shared: Any,
) -> None:
    """Run one call NAME [ARGS_JSON] through the full pipeline; exit 1 if it fails."""
    from ..tools.calls import ToolCall

    options = options_of(ctx, **shared)
    approval = CliApproval(yes)
    bars = approval.bars = stderr_bars()  # on a terminal only: nothing extra on a pipe

    async def main() -> ToolResult:
        async with options.host() as host:
            report_failures(host.status(), host.problems())
            call = ToolCall("cli", name, args_json if args_json is not None else {}, key=key)
            # the terminal decides this call's approvals, even beside an agent's broker
            CallContext(call, "cli", CliClient(approval, host.ctx.base_dir, bars))
            try:
                result: ToolResult = await host.tools.execute(call)
            finally:
                if bars is not None:
                    bars.clear()
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
