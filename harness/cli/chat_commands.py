"""The slash commands of ``harness chat``.

A line whose first word is ``/name`` (a letter, then letters, digits, ``-`` or ``_``) is a
command, known or not, and never reaches the model; an unknown one says so and names
``/help``. A line starting with ``//`` is a message that begins with ``/`` (one slash
dropped); any other line (``/etc/hosts?``, say) is a message as typed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from ..tools.approval_contract import visible

if TYPE_CHECKING:
    from .chat import Chat

COMMANDS = {
    "/help": "the commands and keys",
    "/new": "start a new session",
    "/sessions": "the latest sessions (harness chat --session ID resumes one)",
    "/tools": "the tools the model may call",
    "/quit": "leave the chat (also /exit or Ctrl-D)",
}
ALIASES = {"/exit": "/quit"}
KEYS = (
    "Enter sends; Alt-Enter (or Esc, then Enter) starts a new line; Up and Down walk the "
    "history; Tab completes a command; Ctrl-C cancels a running turn, clears a typed line, "
    "and quits on an empty one; Ctrl-D quits. Start a line with // to send a message that "
    "begins with /."
)
SHOWN_SESSIONS = 20
_COMMAND = re.compile(r"/[A-Za-z][\w-]*")


def command_of(line: str) -> str | None:
    """The command ``line`` names, or None when it is a message."""
    words = line.split(maxsplit=1)
    if words and _COMMAND.fullmatch(words[0]):
        return words[0]
    return None


def message_of(line: str) -> str:
    """The message a line sends: ``//text`` sends ``/text``."""
    return line[1:] if line.lstrip().startswith("//") else line


async def run_command(chat: Chat, line: str) -> bool:
    """Run the command on ``line``; True when the chat should end."""
    words = line.split(maxsplit=1)
    name = ALIASES.get(words[0], words[0])
    out = chat.console
    if name not in COMMANDS:
        out.print(
            Text.assemble(
                ("unknown command ", "red"),
                visible(words[0]),
                ": /help lists the commands (start a line with // to send a message that "
                "begins with /)",
            )
        )
        return False
    if len(words) > 1:
        out.print(Text.assemble((name, "bold"), (" takes no arguments", "red")))
        return False
    if name == "/quit":
        return True
    if name == "/help":
        table = Table.grid(padding=(0, 2))
        for command, what in COMMANDS.items():
            table.add_row(Text(command, style="bold"), what)
        out.print(table)
        out.print(Text(KEYS, style="dim"))
    elif name == "/new":
        chat.session = chat.agent.session()
        out.print(f"new session {chat.session.id}")
    elif name == "/sessions":
        _sessions(chat)
    elif name == "/tools":
        _tools(chat)
    return False


def _sessions(chat: Chat) -> None:
    listed: list[dict[str, Any]] = chat.agent.sessions()
    if not listed:
        chat.console.print("no sessions yet")
        return
    table = Table("", "id", "title", "turns", "updated", box=None)
    table.columns[1].no_wrap = True
    for item in listed[:SHOWN_SESSIONS]:
        current = "*" if item["id"] == chat.session.id else ""
        table.add_row(
            current,
            item["id"],
            visible(str(item["title"])),
            str(item["turns"]),
            item["updated"] or "",
        )
    chat.console.print(table)
    more = len(listed) - SHOWN_SESSIONS
    if more > 0:
        chat.console.print(f"[dim]and {more} more: harness sessions lists them all[/]")
    chat.console.print("[dim]* this session; harness chat --session ID resumes one[/]")


def _tools(chat: Chat) -> None:
    names = list(chat.agent.visible_tools())
    registry = chat.host.tools
    if not names:
        chat.console.print(
            "the model may call no tools: "
            + (
                "the agent entry's `tools:` globs match none of the tools loaded"
                if registry.list()
                else "no entry registers one"
            )
        )
        return
    table = Table("tool", "description", box=None)
    for name in names:
        tool = registry.get(name)
        first = (tool.description.splitlines() or [""])[0] if tool is not None else ""
        table.add_row(Text(visible(name), style="bold"), visible(first))
    chat.console.print(table)
