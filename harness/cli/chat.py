"""``harness chat`` and ``harness sessions``: the agent in a terminal.

``harness chat`` streams the model's text, shows one card per tool call (name, status,
arguments, duration, the rendered blocks), asks for approvals inline (once, for the session,
always, deny), and cancels the running turn on Ctrl-C (a second Ctrl-C exits). What the
person types comes from :mod:`.chat_input` (a line editor on a terminal, lines otherwise);
slash commands (:mod:`.chat_commands`) run here and never reach the model. ``-m TEXT`` runs
one turn, or one command, and exits (1 when the turn ended in error or was cancelled, or the
command is unknown); ``--session ID`` resumes a session; ``--yes`` approves every request
once. ``harness sessions`` lists the sessions of the config's agent without starting a model.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import anyio
from rich.console import Console, Group
from rich.padding import Padding
from rich.panel import Panel
from rich.text import Text

from ..errors import HarnessError
from ..host import Host
from ..loader.config import read_config
from ..tools.approval_contract import show_args, visible
from .chat_cards import log_line, result_card, visible_block
from .chat_commands import ALIASES, COMMANDS, command_of, message_of, run_command
from .chat_input import ChatInput, Interrupted, chat_input
from .logs import failures_reported
from .problem_report import report_failures
from .terminal_inputs import Bars, answer_question

QUESTION = "allow [o]nce, for this [s]ession, [a]lways, or [d]eny?"
CHOICES = {
    "o": "allow_once",
    "s": "allow_session",
    "a": "allow_always",
    "d": "deny",
}


class Options(Protocol):
    @property
    def config_path(self) -> Path: ...

    patches: list[str]
    overrides: list[str]
    debug: bool

    def host(self, **kwargs: Any) -> Host: ...


class ChatError(HarnessError):
    """Raised when ``harness chat`` cannot start (no agent in the config, say)."""


class Chat:
    """One terminal conversation."""

    def __init__(
        self, host: Host, console: Console, yes: bool, interactive: bool, input: ChatInput
    ) -> None:
        self.host = host
        self.agent: Any = host.ctx.agent
        self.console = console
        self.yes = yes
        self.interactive = interactive
        self.input = input
        self.asking = anyio.Lock()  # one approval question at a time
        self.session: Any = None
        self.turn_running = False
        self.interrupted = False
        self.quit = anyio.Event()
        self._streaming = False
        self._calls: dict[str, dict[str, Any]] = {}
        self.bars = Bars(console)
        """Progress bars of the running calls (drawn on a terminal only)."""

    # -- output ----------------------------------------------------------------------------

    def show(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        out = self.console
        if kind == "assistant/delta":
            if not self._streaming:
                out.print("[bold cyan]assistant>[/] ", end="")
                self._streaming = True
            out.print(event["text"], end="", markup=False, highlight=False, soft_wrap=True)
        elif kind == "assistant/message":
            self._end_stream()
        elif kind == "tool/call":
            self._calls[event["id"]] = event
            out.print(
                Text.assemble(
                    ("      ▸ " if event.get("parent") else "  ▸ ", "dim"),
                    (visible(event["name"]), "bold"),
                    (f" {show_args(event['args'])}", "dim"),
                    (" running", "blue"),
                ),
                soft_wrap=True,
            )
        elif kind == "tool/progress":
            if out.is_terminal:
                name = str(self._calls.get(event["id"], {}).get("name", "tool"))
                self.bars.update(
                    event["id"], name, event["done"], event.get("total"), event.get("message")
                )
        elif kind == "tool/log":
            self._end_stream()
            out.print(log_line(event), soft_wrap=True)
        elif kind == "tool/result":
            self.bars.finish(event["id"])
            card = result_card(event, self._calls)
            # a call a run_code program made: a card nested under the program's
            out.print(Padding(card, (0, 0, 0, 4)) if event.get("parent") else card)
        elif kind == "approval/decided":
            style = "green" if event["decision"] != "deny" else "yellow"
            why = f": {visible(event['reason'])}" if event.get("reason") else ""
            out.print(f"  [{style}]{event['decision']}[/]{why}", highlight=False)
        elif kind == "turn/end":
            self.bars.clear()
            self._end_stream()
            reason = event["reason"]
            if reason == "error":
                out.print(f"[red]error:[/] {visible(str(event['error']))}", highlight=False)
            elif reason == "cancelled":
                out.print("[yellow]turn cancelled[/]")
            elif reason == "max_steps":
                out.print("[yellow]the turn reached max_steps and was wrapped up[/]")

    def _end_stream(self) -> None:
        if self._streaming:
            self.console.print()
            self._streaming = False

    # -- approvals -------------------------------------------------------------------------

    async def approve(self, event: dict[str, Any]) -> None:
        broker = self.host.ctx.approval
        self._end_stream()
        if event.get("question"):
            await self.answer(event)
            return
        self.console.print(
            Panel(
                Group(
                    Text(visible(str(event.get("reason", "")))),
                    Text(f"args: {show_args(event.get('args'))}"),
                ),
                title=Text.assemble(
                    ("approval needed: ", "yellow"), (visible(event["name"]), "bold")
                ),
                title_align="left",
                expand=False,
            )
        )
        if self.yes:
            broker.answer(event["id"], "allow_once", "approved with --yes")
            return
        if not self.interactive:
            broker.answer(event["id"], "deny", "no terminal to ask; run harness chat with --yes")
            return
        async with self.asking:
            try:
                with self.bars.aside():
                    await self._ask(broker, event["id"])
            except Interrupted:  # Ctrl-C at the question: as Ctrl-C during the turn
                self.interrupt()

    async def answer(self, event: dict[str, Any]) -> None:
        """A tool's question: its form asked field by field (``--yes`` never answers it)."""
        args = event.get("args")
        asked: dict[str, Any] = args if isinstance(args, dict) else {}
        self.console.print(
            Panel(
                Text(visible(str(asked.get("message") or event.get("reason", "")))),
                title=Text.assemble(("question from ", "yellow"), (visible(event["name"]), "bold")),
                title_align="left",
                expand=False,
            )
        )
        broker = self.host.ctx.approval
        if not self.interactive:
            why = "no terminal to ask (--yes answers approvals, never a tool's question)"
            broker.answer(event["id"], "deny", why)
            return
        async with self.asking:
            with self.bars.aside():
                try:
                    await answer_question(broker, event, self.input.answer, self._say)
                except Interrupted:  # Ctrl-C at the question: as Ctrl-C during the turn
                    self.interrupt()

    def _say(self, text: str) -> None:
        self.console.print(Text(text, style="dim"))

    async def _ask(self, broker: Any, request_id: str) -> None:
        while True:
            line = await self.input.answer(QUESTION)
            if line is None:
                broker.answer(request_id, "deny", "no answer (end of input)")
                return
            choice = line.strip().lower()[:1]
            if choice in CHOICES:
                reason = None
                if choice == "d":
                    reason = ((await self.input.answer("reason (optional):")) or "").strip()
                try:
                    broker.answer(request_id, CHOICES[choice], reason or None)
                except HarnessError as exc:
                    self.console.print(f"[red]{type(exc).__name__}:[/] {exc}", highlight=False)
                    continue
                return

    # -- turns -----------------------------------------------------------------------------

    async def turn(self, text: str) -> str:
        """Run one turn; return how it ended."""
        self.turn_running = True
        self.interrupted = False
        reason = "error"
        try:
            async with anyio.create_task_group() as group:
                async for event in self.session.send(text):
                    self.show(event)
                    if event["type"] == "approval/request":
                        group.start_soon(self.approve, event)
                    elif event["type"] == "turn/end":
                        reason = event["reason"]
                group.cancel_scope.cancel()  # an approval prompt left open
        finally:
            self.turn_running = False
        return str(reason)

    async def on_signals(self, signals: Any, stop: Callable[[], None]) -> None:
        self._stop = stop
        async for _ in signals:
            self.interrupt()

    def interrupt(self) -> None:
        """Ctrl-C: cancel the running turn; a second one, or one between turns, exits."""
        if self.turn_running and not self.interrupted:
            self.interrupted = True
            self.console.print("\n[yellow]cancelling the turn (Ctrl-C again to exit)[/]")
            self.session.cancel()
        else:
            self.console.print()
            self._stop()


async def _chat(
    options: Options, message: str | None, session_id: str | None, yes: bool, watch: bool
) -> int:
    console = Console(highlight=False)
    err = Console(stderr=True, highlight=False)
    interactive = sys.stdin.isatty()
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        async with options.host(watch=watch) as host:
            agent = host.ctx.get("agent")
            if agent is None:
                from .no_agent import why_no_agent

                raise ChatError(why_no_agent(host, options.config_path))
            report_failures(host.status(), host.problems())  # a failed mount, say
            failures_reported()  # a plugin failing from now on (a lost server) is logged
            agent.save_always_to(options.config_path.absolute())  # the file chat runs on
            from ..agent.client import model_label

            err.print(f"model: {model_label(host.ctx.get('llm'))}", highlight=False, markup=False)
            reader = chat_input(console, options.config_path, [*COMMANDS, *ALIASES])
            chat = Chat(host, console, yes, interactive, reader)
            chat.session = agent.session(session_id)
            if session_id:
                turns = sum(1 for e in chat.session.events if e["type"] == "turn/start")
                err.print(f"resumed session {session_id} ({turns} turns)")
            else:
                err.print(f"session {chat.session.id}")
            code = 0
            async with anyio.create_task_group() as group:
                group.start_soon(chat.on_signals, signals, group.cancel_scope.cancel)
                reader.start()
                if message is not None:
                    code = await _one(chat, message)
                else:
                    await _repl(chat, getattr(reader, "history_note", ""))
                group.cancel_scope.cancel()
            return code


async def _one(chat: Chat, line: str) -> int:
    """``-m TEXT``: one turn, or one command; the exit code."""
    command = command_of(line)
    if command is not None:
        known = ALIASES.get(command, command) in COMMANDS
        await run_command(chat, line)
        return 0 if known else 1
    reason = await chat.turn(message_of(line))
    return 0 if reason in ("done", "max_steps") else 1


async def _repl(chat: Chat, note: str) -> None:
    chat.console.print(
        "[dim]type a message (Alt-Enter for a new line); /help lists the commands; Ctrl-C "
        "cancels a turn, Ctrl-D or /quit quits[/]"
    )
    if note:
        chat.console.print(f"[yellow]{visible(note)}[/]")
    while True:
        line = await chat.input.message()
        if line is None:
            return
        if not line.strip():
            continue
        if command_of(line) is not None:
            if await run_command(chat, line.strip()):
                return
            continue
        await chat.turn(message_of(line))


def run_chat(
    options: Options, message: str | None, session_id: str | None, yes: bool, watch: bool
) -> int:
    """``harness chat``; the exit code."""
    from . import otel

    stop_traces = otel.setup()  # OTLP export when the OTEL_* variables ask for it
    try:
        return anyio.run(_chat, options, message, session_id, yes, watch)
    finally:
        stop_traces()


# -- harness sessions ------------------------------------------------------------------------


def _sessions_setting(options: Options) -> tuple[str, Path]:
    """The agent entry's ``sessions`` (a folder or a store URL) and the folder it is
    relative to."""
    loaded = read_config(
        options.config_path, [Path(p) for p in options.patches], options.overrides, lenient=True
    )
    for plan in loaded.plans:
        if plan.name == "harness:agent" and plan.enabled:
            config = plan.config if isinstance(plan.config, dict) else {}
            sessions = config.get("sessions", "./.harness/sessions")
            if sessions is None:
                raise ChatError(
                    f"the agent entry {plan.id!r} keeps its sessions in memory (sessions: null)"
                )
            return str(sessions), loaded.file.parent
    raise ChatError(f"{options.config_path} has no enabled entry `name: harness:agent`")


@contextlib.contextmanager
def _store(options: Options) -> Iterator[Any]:
    """The agent's sessions: a folder's logs, or a store's (open while the block runs)."""
    from ..agent.log import SessionStore
    from ..agent.stored_sessions import is_store_url, open_sessions

    sessions, base = _sessions_setting(options)
    if not is_store_url(sessions):
        yield SessionStore(base / sessions)
        return
    store = anyio.run(open_sessions, sessions, base)
    try:
        yield store
    finally:
        anyio.run(store.close)


def print_events(events: list[dict[str, Any]], as_json: bool) -> None:
    """``harness sessions show ID``: the conversation, as ``harness chat`` showed it."""
    if as_json:
        print(json.dumps(events, indent=2, ensure_ascii=False))
        return
    console = Console(highlight=False)
    chat = Chat.__new__(Chat)
    chat.console, chat._streaming, chat._calls = console, False, {}
    chat.bars = Bars(console)
    for event in events:
        kind = event["type"]
        if kind == "turn/start":
            console.print(f"[bold green]you>[/] {visible(str(event.get('input', '')))}")
        elif kind == "assistant/message" and event.get("text"):
            console.print(f"[bold cyan]assistant>[/] {visible_block(str(event['text']))}")
        elif kind == "session/title":
            console.print(f"[dim]renamed: {visible(str(event.get('title', '')))}[/]")
        elif kind in ("tool/call", "tool/log", "tool/result", "approval/decided", "turn/end"):
            chat.show(event)
