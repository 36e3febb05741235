"""``--demo``: a first chat with no key, straight after ``harness init`` in a git repository.

The real ``harness chat --demo`` in a subprocess, in a fresh ``harness init`` folder whose git
tools are off (as init writes them): "recent commits" calls ``git_log_reader`` on the project,
"capital of France?" calls no tool, and the demo model is named as such in the banner and
the session log. ``python -m harness.demo`` serves the same rules to the official openai
SDK.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import openai
import pytest

from harness.demo.model import DEMO_MODEL

from ..helpers import git, run_harness

NO_PROVIDER = {"OPENAI_API_KEY": "", "OLLAMA_HOST": "127.0.0.1:9"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    git(folder, "init", "-q")
    for subject in ("start the project", "add the parser"):
        (folder / "notes.txt").write_text(subject)
        git(folder, "add", "-A")
        git(folder, "commit", "-q", "-m", subject)
    done = run_harness("init", cwd=folder, env=NO_PROVIDER)
    assert done.returncode == 0, done.stderr
    return folder


def chat(project: Path, text: str) -> subprocess.CompletedProcess[str]:
    done = run_harness("chat", "--demo", "--no-watch", "-m", text, cwd=project, env=NO_PROVIDER)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    return done


def test_the_seed_walkthrough_in_the_terminal(project: Path) -> None:
    before = (project / "cordis.yml").read_text()
    commits = chat(project, "show me the recent commits")
    assert f"model: {DEMO_MODEL}" in commits.stderr
    assert f"the git tools are on for this run, confined to {project}" in commits.stderr
    assert f'▸ git_log_reader {{"repoPath": "{project}", "maxCount": 10}} running' in commits.stdout
    assert "git_log_reader · done" in commits.stdout
    assert "| add the parser" in commits.stdout
    assert "| start the project" in commits.stdout
    assert "Those are the last 2 commit(s)" in commits.stdout

    france = chat(project, "What is the capital of France?")
    assert "▸" not in france.stdout  # no tool card
    assert f"I am the {DEMO_MODEL}" in france.stdout

    total = chat(project, "what is 2 + 3?")
    assert "add · done" in total.stdout
    assert "The sum is 5." in total.stdout

    assert (project / "cordis.yml").read_text() == before  # --demo writes nothing there
    logs = sorted((project / ".harness" / "sessions").glob("*.jsonl"))
    assert len(logs) == 3
    starts = [json.loads(line) for log in logs for line in log.read_text().splitlines()]
    starts = [event for event in starts if event["type"] == "turn/start"]
    assert {event["model"] for event in starts} == {DEMO_MODEL}


def test_a_path_in_the_message_is_the_repository(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = chat(project, f"帮我看下 {elsewhere} 这个仓库最近的提交")
    assert f'"repoPath": "{elsewhere}"' in done.stdout
    assert "git_log_reader · error" in done.stdout or "could not read" in done.stdout


def test_with_git_enabled_the_demo_leaves_its_config(project: Path) -> None:
    assert run_harness("enable", "git", cwd=project).returncode == 0
    done = chat(project, "recent commits")
    assert "the git tools are on for this run" not in done.stderr
    assert "git_log_reader · done" in done.stdout


def test_a_config_without_model_or_agent_entries_gets_them(tmp_path: Path) -> None:
    plugins = Path(__file__).resolve().parents[2] / "plugins"
    (tmp_path / "cordis.yml").write_text(f"insert:\n  - {{ id: add, name: {plugins}/add.py }}\n")
    done = chat(tmp_path, "add 2.5 and 4")
    assert "add · done" in done.stdout
    assert "The sum is 6.5." in done.stdout
    commits = chat(tmp_path, "recent commits")
    assert "`harness enable git` switches the bundled git tools on" in commits.stdout


def test_python_m_harness_testing_serves_the_demo(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    server = subprocess.Popen(
        [sys.executable, "-m", "harness.demo", "--project", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        assert first.startswith(f"{DEMO_MODEL}, serving at http://127.0.0.1:"), first
        url = first.rsplit(" ", 1)[1].strip()
        client = openai.OpenAI(base_url=url, api_key="none")
        tools = [{"type": "function", "function": {"name": "git_log_reader", "parameters": {}}}]
        answer = client.chat.completions.create(
            model="demo",
            messages=[{"role": "user", "content": "recent commits please"}],
            tools=tools,  # type: ignore[arg-type]
        )
        (used,) = answer.choices[0].message.tool_calls or []
        assert used.function.name == "git_log_reader"  # type: ignore[union-attr]
        assert json.loads(used.function.arguments)["repoPath"] == str(tmp_path)  # type: ignore[union-attr]
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        for stream in (server.stdout, server.stderr):
            if stream is not None:
                stream.close()
    usage = subprocess.run(
        [sys.executable, "-m", "harness.demo", "--help"], capture_output=True, text=True, env=env
    )
    assert usage.returncode == 0
    assert "usage: python -m harness.demo" in usage.stdout
