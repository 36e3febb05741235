"""``harness chat`` as a person uses it: the real executable on a pseudo-terminal (a line
editor with history and Alt-Enter, slash commands) and on a pipe, against the scripted
OpenAI-compatible server. A slash command never reaches the model: the server sees no
request for it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.testing import Reply, Rule, ScriptedServer, call

from ..helpers import ROOT, run_harness, write
from ..terminal import ALT_ENTER, UP, Terminal

RULES = [
    Rule(Reply.say("Paris."), user="capital"),
    Rule(Reply.calls(call("echo", {"text": "hi"})), user="repeat"),
    Rule(Reply.say("Echoed."), tool="echo"),
    Rule(Reply.answer(lambda text: "heard " + text.replace("\n", " | ")), user=""),
]


def config(folder: Path, server: ScriptedServer) -> Path:
    return write(
        folder / "cordis.yml",
        f"""
        insert:
          - id: echo
            name: {ROOT / "plugins" / "echo.py"}
          - id: policy
            name: {ROOT / "plugins" / "policy.py"}
            config: {{rules: {{echo: ask}}}}
          - id: model
            name: harness:openai
            config: {{model: scripted, base_url: "{server.url}"}}
          - id: agent
            name: harness:agent
        """,
    )


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(RULES) as scripted:
        yield scripted


@contextmanager
def chat(folder: Path, server: ScriptedServer) -> Iterator[Terminal]:
    term = Terminal(["-c", str(config(folder, server)), "chat", "--no-watch"], folder)
    try:
        yield term
    finally:
        term.kill()


def said(server: ScriptedServer) -> list[str]:
    """The last user message of every request the model server received."""
    return [body["messages"][-1]["content"] for body in server.requests]


def test_slash_commands_run_in_the_terminal_and_never_reach_the_model(
    tmp_path: Path, server: ScriptedServer
) -> None:
    with chat(tmp_path, server) as term:
        at = term.expect("you>")
        term.send("/help\r")
        at = term.expect("/sessions  the latest sessions", at)
        at = term.expect("Alt-Enter (or Esc, then Enter) starts a new line", at)
        at = term.expect("you>", at)
        term.send("/too\t")  # Tab completes a command
        at = term.expect("/tools", at)
        term.send("\r")
        at = term.expect("echo  Repeat the given text back", at)
        at = term.expect("you>", at)
        term.send("/sessions\r")
        at = term.expect("* this session", at)
        at = term.expect("you>", at)
        term.send("/new\r")
        at = term.expect("new session ", at)
        at = term.expect("you>", at)
        term.send("/nonsense please\r")
        at = term.expect("unknown command /nonsense: /help lists the commands", at)
        at = term.expect("you>", at)
        term.send("/new now\r")
        at = term.expect("/new takes no arguments", at)
        at = term.expect("you>", at)
        term.send("/quit\r")
        assert term.close() == 0
    assert server.requests == []


def test_history_persists_across_runs_and_ctrl_c_clears_a_typed_line(
    tmp_path: Path, server: ScriptedServer
) -> None:
    with chat(tmp_path, server) as term:
        at = term.expect("you>")
        term.send("a draft I regret\x03")  # Ctrl-C on a typed line: cleared, not sent
        term.send("the capital of France?\r")
        at = term.expect("assistant> Paris.", at)
        at = term.expect("you>", at)
        term.send("/quit\r")
        assert term.close() == 0
    history = tmp_path / ".harness" / "chat-history"
    assert "the capital of France?" in history.read_text()

    with chat(tmp_path, server) as term:
        at = term.expect("you>")
        term.send(UP + UP + "\r")  # the previous run's message, two entries back
        at = term.expect("assistant> Paris.", at)
        at = term.expect("you>", at)
        term.send("\x03")  # Ctrl-C on an empty line quits
        assert term.close() == 0
    assert said(server) == ["the capital of France?", "the capital of France?"]


def test_alt_enter_starts_a_new_line_and_enter_sends(
    tmp_path: Path, server: ScriptedServer
) -> None:
    with chat(tmp_path, server) as term:
        at = term.expect("you>")
        term.send("first line" + ALT_ENTER + "second line\r")
        at = term.expect("assistant> heard first line | second line", at)
        at = term.expect("you>", at)
        term.send("\x04")  # Ctrl-D quits
        assert term.close() == 0
    assert said(server) == ["first line\nsecond line"]


def test_piped_lines_and_one_message_take_the_commands_too(
    tmp_path: Path, server: ScriptedServer
) -> None:
    config(tmp_path, server)
    piped = run_harness(
        "chat",
        "--no-watch",
        cwd=tmp_path,
        stdin="/help\n/bogus\n//etc/hosts, what is it?\nthe capital?\n/quit\nnever sent\n",
    )
    assert piped.returncode == 0, piped.stderr
    assert "/tools     the tools the model may call" in piped.stdout
    assert "unknown command /bogus: /help lists the commands" in piped.stdout
    assert "assistant> heard /etc/hosts, what is it?" in piped.stdout
    assert "assistant> Paris." in piped.stdout
    assert said(server) == ["/etc/hosts, what is it?", "the capital?"]

    tools = run_harness("chat", "--no-watch", "-m", "/tools", cwd=tmp_path)
    assert (tools.returncode, tools.stderr.count("Traceback")) == (0, 0)
    assert "echo  Repeat the given text back" in tools.stdout
    bogus = run_harness("chat", "--no-watch", "-m", "/bogus", cwd=tmp_path)
    assert bogus.returncode == 1
    assert "unknown command /bogus" in bogus.stdout
    one = run_harness("chat", "--no-watch", "-m", "the capital?", cwd=tmp_path)
    assert (one.returncode, "assistant> Paris." in one.stdout) == (0, True)
    assert said(server) == ["/etc/hosts, what is it?", "the capital?", "the capital?"]


def test_ctrl_c_at_an_approval_question_cancels_the_turn(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """The question is asked by the line editor, where Ctrl-C is a key, not a signal: it
    cancels the turn as Ctrl-C during a turn does, and the chat goes on."""
    with chat(tmp_path, server) as term:
        at = term.expect("you>")
        term.send("repeat after me\r")
        at = term.expect("approval needed: echo", at)
        at = term.expect("[d]eny?", at)
        term.send("\x03")
        at = term.expect("turn cancelled", at)
        at = term.expect("you>", at)
        term.send("the capital?\r")
        at = term.expect("assistant> Paris.", at)
        at = term.expect("you>", at)
        term.send("/quit\r")
        assert term.close() == 0
    assert said(server) == ["repeat after me", "the capital?"]
