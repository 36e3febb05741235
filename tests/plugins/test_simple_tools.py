"""echo, greet, add, multiply: their contract through execute and through harness call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness import Host

from .conftest import ROOT, SET_ALL_ON, run

HARNESS = str(Path(sys.executable).parent / "harness")

CASES: list[tuple[str, dict[str, Any], Any, str]] = [
    ("echo", {"text": "hi"}, {"text": "Echo: hi"}, "Echo: hi"),
    ("greet", {"name": "Alice"}, {"greeting": "Hello, Alice!"}, "Hello, Alice!"),
    ("add", {"a": 10, "b": 20}, 30, "30"),
    ("add", {"a": 1.5, "b": 2}, 3.5, "3.5"),
    ("multiply", {"a": 5, "b": 6}, 30, "30"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("tool", "args", "value", "text"), CASES)
async def test_contract_through_execute(
    host: Host, tool: str, args: dict[str, Any], value: Any, text: str
) -> None:
    result = await run(host, tool, args)
    assert result.ok
    assert result.result == value
    assert result.content == [{"type": "text", "text": text}]
    bad = await run(host, tool, {})
    assert bad.code == "invalid_args"


def call_json(
    config: Path, workspace: Path, tool: str, args: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    """``harness call TOOL ARGS --json`` on a copy of the default project."""
    return subprocess.run(
        [HARNESS, "-c", str(config), *SET_ALL_ON, "call", tool, json.dumps(args), "--json"],
        cwd=config.parent,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HARNESS_WORKSPACE": str(workspace)},
    )


@pytest.mark.parametrize(("tool", "args", "value", "text"), CASES)
def test_contract_through_harness_call(
    config: Path, workspace: Path, tool: str, args: dict[str, Any], value: Any, text: str
) -> None:
    result = call_json(config, workspace, tool, args)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["ok"] is True
    assert out["result"] == value
    assert out["content"] == [{"type": "text", "text": text}]


@pytest.mark.anyio
async def test_bundled_descriptions_follow_the_three_rules(host: Host) -> None:
    for name in host.tools.list():
        definition = host.tools.get(name)
        assert definition is not None
        text = definition.description
        first_word = text.split()[0]
        assert first_word[0].isupper(), (name, first_word)
        assert not first_word.endswith("s"), (name, first_word)  # a verb: "Read", not "Reads"
        assert " use " in text.lower() or "use when" in text.lower(), name  # which tool instead
        assert len(text) < 400, name


@pytest.mark.anyio
async def test_generated_tool_reference_is_up_to_date(host: Host) -> None:
    from harness.tools.reference import tools_markdown

    committed = (ROOT / "docs" / "tools.md").read_text()
    assert committed == tools_markdown(host.tools), "run `make docs` to regenerate docs/tools.md"
    for name in host.tools.list():
        assert f"## `{name}`" in committed


def test_file_and_git_tools_through_harness_call(
    config: Path, workspace: Path, tmp_path: Path
) -> None:
    from .conftest import git

    (workspace / "notes.txt").write_text("alpha\nbeta\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "First")
    (repo / "a.txt").write_text("two\n")
    calls: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
        "read_text_file": (
            {"path": "notes.txt", "offset": 2},
            {"content": "beta\n", "total_lines": 2},
        ),
        "list_dir": ({}, {"entries": [{"name": "notes.txt", "type": "file", "size": 11}]}),
        "grep": (
            {"pattern": "bet"},
            {"matches": [{"path": "notes.txt", "line": 2, "text": "beta"}]},
        ),
        "git_log_reader": ({"repoPath": str(repo)}, {"total": 1}),
        "git_diff": ({"repoPath": str(repo)}, {"truncated": False}),
    }
    values: dict[str, Any] = {}
    for tool, (args, expected) in calls.items():
        result = call_json(config, workspace, tool, args)
        assert result.returncode == 0, (tool, result.stderr)
        value = values[tool] = json.loads(result.stdout)["result"]
        assert value["ok"] is True, (tool, value)
        assert {key: value[key] for key in expected} == expected, tool
    assert "-one\n+two" in values["git_diff"]["diff"]


@pytest.mark.anyio
async def test_an_empty_folder_says_so(host: Host, workspace: Path) -> None:
    (workspace / "empty").mkdir()
    listed = await run(host, "list_dir", {"path": "empty"})
    assert listed.result == {"ok": True, "entries": [], "truncated": False, "error": ""}
    assert listed.content == [{"type": "text", "text": "empty folder"}]
    (workspace / "empty" / "a.txt").write_text("x")
    assert (await run(host, "list_dir", {"path": "empty"})).content == [
        {"type": "text", "text": "a.txt"}
    ]
