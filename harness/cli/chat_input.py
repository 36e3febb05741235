"""Where ``harness chat`` reads what the person types.

On a terminal (standard input and output both), :class:`EditorInput` is prompt_toolkit's
line editor: arrows and Emacs keys, Tab completes the slash commands, Up and Down walk a
history kept across runs in ``.harness/chat-history`` beside ``cordis.yml``, Enter sends and
Alt-Enter (or Esc then Enter) starts a new line. Ctrl-C clears a typed line, and on an empty
one quits, as Ctrl-D does. Without a terminal (a pipe, a file), :class:`LineInput` reads
standard input one line at a time, each line one message.

Both answer approval questions with :meth:`ChatInput.answer`, one question at a time; an
answer never enters the history.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio
import anyio.from_thread
import anyio.lowlevel

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.key_binding import KeyBindings
    from rich.console import Console

HISTORY = Path(".harness") / "chat-history"
"""The history file, relative to the folder of ``cordis.yml``."""


class Interrupted(Exception):
    """Raised by :meth:`ChatInput.answer` when Ctrl-C was pressed at the question."""


class ChatInput(Protocol):
    """What the chat reads from."""

    def start(self) -> None:
        """Begin reading (a thread for standard input; nothing for the editor)."""

    async def message(self) -> str | None:
        """The next message or command the person typed; None when they quit."""

    async def answer(self, question: str) -> str | None:
        """One line answering ``question``; None at the end of input."""


class LineInput:
    """Lines from standard input, read by one daemon thread shared by all prompts.

    A daemon thread, not a worker thread: a read blocked on the terminal must not keep the
    process from exiting after Ctrl-C.
    """

    def __init__(self, console: Console) -> None:
        self.console = console  # where the prompts are printed
        self.send, self.receive = anyio.create_memory_object_stream[str | None](64)

    def start(self) -> None:
        token = anyio.lowlevel.current_token()

        def read() -> None:
            while True:
                try:
                    line = sys.stdin.readline()
                except (OSError, ValueError):
                    line = ""
                try:
                    anyio.from_thread.run_sync(self.send.send_nowait, line or None, token=token)
                except Exception:  # the loop is gone, or nobody reads: stop
                    return
                if not line:
                    return

        threading.Thread(target=read, name="harness-chat-input", daemon=True).start()

    async def _line(self) -> str | None:
        try:
            line = await self.receive.receive()
        except anyio.EndOfStream:
            return None
        return None if line is None else line.rstrip("\n")

    async def message(self) -> str | None:
        self.console.print("[bold green]you>[/] ", end="")
        line = await self._line()
        if line is None:
            self.console.print()
        return line

    async def answer(self, question: str) -> str | None:
        from rich.text import Text

        self.console.print(Text(question + " ", style="bold"), end="")
        return await self._line()


class EditorInput:
    """prompt_toolkit's line editor, with the chat's history file and keys."""

    def __init__(self, history: Path | None, commands: list[str]) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.completion import WordCompleter
        from prompt_toolkit.history import FileHistory, InMemoryHistory

        self.history_note = ""
        stored: FileHistory | InMemoryHistory = InMemoryHistory()
        if history is not None:
            try:
                history.parent.mkdir(parents=True, exist_ok=True)
                history.touch()
                stored = FileHistory(str(history))
            except OSError as exc:
                self.history_note = (
                    f"history is not kept: cannot write {history} ({exc.strerror or exc})"
                )
        self.session: PromptSession[str] = PromptSession(
            history=stored,
            key_bindings=_keys(),
            completer=WordCompleter(commands, sentence=True),
            complete_while_typing=False,
            prompt_continuation=lambda width, line, wrapped: "." * (width - 1) + " ",
        )
        self.asking: PromptSession[str] = PromptSession(key_bindings=_keys())

    def start(self) -> None:
        pass

    async def message(self) -> str | None:
        try:
            return await self.session.prompt_async(
                [("ansigreen bold", "you> ")], handle_sigint=False, set_exception_handler=False
            )
        except (EOFError, KeyboardInterrupt):
            return None

    async def answer(self, question: str) -> str | None:
        from prompt_toolkit.patch_stdout import patch_stdout

        # what the running turn prints meanwhile (another call's card) goes above the question
        with patch_stdout(raw=True):
            try:
                return await self.asking.prompt_async(
                    [("bold", question + " ")], handle_sigint=False, set_exception_handler=False
                )
            except EOFError:
                return None
            except KeyboardInterrupt:
                raise Interrupted from None


def _keys() -> KeyBindings:
    """Alt-Enter inserts a line break; Ctrl-C clears a typed line, on an empty one quits."""
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.key_binding.key_processor import KeyPressEvent

    keys = KeyBindings()

    @keys.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add("c-c")
    def _clear_or_quit(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.text:
            buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt(), style="class:aborting")

    return keys


def chat_input(console: Console, config: Path, commands: list[str]) -> ChatInput:
    """The editor on a terminal, else standard input line by line."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        return EditorInput(config.absolute().parent / HISTORY, commands)
    return LineInput(console)
