"""harness chat and harness sessions, on the real executable (a pseudo-terminal for the chat)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.testing import Fault, Reply, Rule, ScriptedServer, call

from ..helpers import HARNESS
from ..providers import PROVIDERS, after_text, model_yaml, sent, server_for
from ..terminal import Terminal, environment
from .conftest import PLUGINS, RESUMED_ROLES, git_repo, write

CONFIG = """
insert:
  - id: git_log_reader
    name: {plugins}/git_log_reader.py
  - id: policy
    name: {plugins}/policy.py
    config:
      rules:
        git_log_reader: ask   # ask before reading history
  - id: model
    {model}
  - id: agent
    name: harness:agent
"""


def rules(repo: Path, server: ScriptedServer) -> list[Rule]:
    return [
        Rule(
            Reply.calls(call("git_log_reader", {"repoPath": str(repo)}), text="Let me look."),
            user="commits",
        ),
        Rule(Reply.say("Three commits, the latest fixes dates."), tool="git_log_reader"),
        Rule(
            Reply.say("a slow answer that never ends"),
            user="slow",
            faults=[Fault.stall(60, after_chunks=after_text(server, 1))] * 3,
        ),
        Rule(Reply.say("Paris."), user="capital"),
    ]


@contextmanager
def chat_terminal(
    tmp_path: Path, commits: list[str], provider: str = "openai"
) -> Iterator[Terminal]:
    """``harness chat`` in a terminal, on a repository of ``commits`` and the scripted model;
    killed at the end if it is still running."""
    repo = git_repo(tmp_path / "repo", commits)
    with server_for(provider) as server:
        server.rules = rules(repo, server)
        config = write(tmp_path / "cordis.yml", configured(server))
        term = Terminal(["-c", str(config), "chat"], tmp_path)
        try:
            yield term
        finally:
            if term.proc.poll() is None:
                term.proc.kill()


def configured(server: ScriptedServer) -> str:
    return CONFIG.format(plugins=PLUGINS, model=model_yaml(server, "    "))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_chat_in_a_terminal_approvals_cancel_and_exit(tmp_path: Path, provider: str) -> None:
    with chat_terminal(tmp_path, ["init", "add parser", "fix: parse dates"], provider) as term:
        at = term.expect("you>")
        term.send("show me the recent commits\r")
        at = term.expect("approval needed: git_log_reader", at)
        at = term.expect("[d]eny?", at)
        term.send("o\r")
        at = term.expect("git_log_reader · done", at)
        at = term.expect("fix: parse dates", at)
        at = term.expect("assistant> Three commits, the latest fixes dates.", at)
        at = term.expect("you>", at)
        term.send("a slow question\r")
        at = term.expect("assistant> a sl", at)
        term.send("\x03")  # Ctrl-C: cancels the turn
        at = term.expect("turn cancelled", at)
        at = term.expect("you>", at)
        term.send("the capital of France?\r")
        at = term.expect("assistant> Paris.", at)
        at = term.expect("you>", at)
        term.send("\x04")  # Ctrl-D: exits
        assert term.close() == 0
    session = next((tmp_path / ".harness" / "sessions").glob("*.jsonl"))
    events = [json.loads(line) for line in session.read_text().splitlines()]
    assert [e["reason"] for e in events if e["type"] == "turn/end"] == ["done", "cancelled", "done"]
    assert [e["decision"] for e in events if e["type"] == "approval/decided"] == ["allow_once"]


def test_a_second_ctrl_c_exits(tmp_path: Path) -> None:
    with chat_terminal(tmp_path, ["init"]) as term:
        at = term.expect("you>")
        term.send("slow\r")
        at = term.expect("assistant> a sl", at)
        term.send("\x03")
        at = term.expect("cancelling the turn", at)
        term.send("\x03")
        assert term.close() == 0


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HARNESS, *args],
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("provider", PROVIDERS)
def test_one_message_with_yes_then_sessions_list_and_show(tmp_path: Path, provider: str) -> None:
    repo = git_repo(tmp_path / "repo", ["init", "fix: parse dates"])
    with server_for(provider) as server:
        server.rules = rules(repo, server)
        write(tmp_path / "cordis.yml", configured(server))
        done = run("chat", "-m", "recent commits please", "--yes", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "git_log_reader · done" in done.stdout
        assert "fix: parse dates" in done.stdout
        assert "Three commits, the latest fixes dates." in done.stdout
        session_id = done.stderr.split("session ", 1)[1].split()[0]

        again = run("chat", "--session", session_id, "-m", "the capital?", cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert f"resumed session {session_id} (1 turns)" in again.stderr
        assert "Paris." in again.stdout
        assert sent(server, -1).roles == RESUMED_ROLES

    listed = run("sessions", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    [item] = json.loads(listed.stdout)
    assert (item["id"], item["title"], item["turns"]) == (session_id, "recent commits please", 2)
    shown = run("sessions", "show", session_id, "--json", cwd=tmp_path)
    events = json.loads(shown.stdout)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    text = run("sessions", "show", session_id, cwd=tmp_path)
    assert "you> recent commits please" in text.stdout
    assert "git_log_reader · done" in text.stdout
    missing = run("sessions", "show", "nope", cwd=tmp_path)
    assert missing.returncode == 1
    assert missing.stderr.startswith("SessionNotFound: no session 'nope' in ")


def test_without_a_terminal_and_without_yes_approvals_are_denied(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", ["init"])
    with ScriptedServer() as server:
        server.rules = rules(repo, server)
        write(tmp_path / "cordis.yml", configured(server))
        done = run("chat", "-m", "recent commits", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "deny: no terminal to ask; run harness chat with --yes" in done.stdout
    assert "git_log_reader · denied" in done.stdout


def test_an_unreachable_model_is_an_error_turn_not_a_traceback(tmp_path: Path) -> None:
    model = 'name: harness:openai\n    config: {model: scripted, base_url: "http://127.0.0.1:9/v1"}'
    write(tmp_path / "cordis.yml", CONFIG.format(plugins=PLUGINS, model=model))
    done = run("chat", "-m", "hello", cwd=tmp_path)
    assert done.returncode == 1
    assert "error: cannot reach the model server at http://127.0.0.1:9/v1" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_chat_without_an_agent_says_what_to_add(tmp_path: Path) -> None:
    write(tmp_path / "cordis.yml", f"insert:\n  - id: echo\n    name: {PLUGINS}/echo.py\n")
    done = run("chat", "-m", "hello", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("ChatError: no agent in cordis.yml: add an entry")
