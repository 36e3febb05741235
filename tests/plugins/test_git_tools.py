"""git_log_reader and git_diff against real repositories made here, hostile ones included."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from harness import Host

from .conftest import git, run

pytestmark = pytest.mark.anyio


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository in a folder with a space, with unicode authors and multi-line messages."""
    folder = tmp_path / "my repo"
    folder.mkdir()
    git(folder, "init", "-q")
    for index, author in enumerate(["Zoë Ünicode", "李雷", "Plain Person"]):
        (folder / "file.txt").write_text(f"version {index}\n")
        git(folder, "add", "file.txt")
        git(
            folder,
            "-c",
            f"user.name={author}",
            "commit",
            "-q",
            "-m",
            f"Change {index}\n\nA body line that must not show.\nAnother.",
        )
    return folder


async def test_log_lines_and_total(host: Host, repo: Path) -> None:
    result = await run(host, "git_log_reader", {"repoPath": str(repo), "maxCount": 5})
    value = result.result
    assert value["ok"] is True
    assert value["total"] == 3
    lines = value["formatted"].splitlines()
    assert lines[0] == f"Last 3 commit(s) of {repo}:"
    authors = [line.split(" | ")[1] for line in lines[1:]]
    subjects = [line.split(" | ")[3] for line in lines[1:]]
    assert authors == ["Plain Person", "李雷", "Zoë Ünicode"]
    assert subjects == ["Change 2", "Change 1", "Change 0"]
    assert "body line" not in value["formatted"]
    assert result.content == [{"type": "text", "text": value["formatted"]}]


@pytest.mark.parametrize(("asked", "got"), [(0, 1), (-5, 1), (2, 2), (1000, 3)])
async def test_max_count_is_clamped(host: Host, repo: Path, asked: int, got: int) -> None:
    result = await run(host, "git_log_reader", {"repoPath": str(repo), "maxCount": asked})
    assert result.result["total"] == got


async def test_empty_repository_and_non_repository(host: Host, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    result = await run(host, "git_log_reader", {"repoPath": str(empty)})
    assert result.result["ok"] is False
    assert "does not have any commits yet" in result.result["error"]
    plain = tmp_path / "plain"
    plain.mkdir()
    result = await run(host, "git_log_reader", {"repoPath": str(plain)})
    assert result.result["ok"] is False
    assert result.result["error"].startswith("not a git repository")
    missing = await run(host, "git_log_reader", {"repoPath": str(tmp_path / "nope")})
    assert missing.result["error"] == f"no such folder: {tmp_path / 'nope'}"


async def test_option_looking_repo_path_cannot_become_an_option(
    host: Host, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "pwned.txt"
    monkeypatch.chdir(tmp_path)
    for tool in ("git_log_reader", "git_diff"):
        result = await run(host, tool, {"repoPath": f"--output={target}"})
        assert result.result["ok"] is False
        assert not target.exists()


async def test_hostile_repository_config_runs_nothing(
    host: Host, repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    with (repo / ".git" / "config").open("a") as config:
        config.write(
            f"[core]\n\tpager = {script}\n\tfsmonitor = {script}\n\thooksPath = {tmp_path}\n"
            f"[diff]\n\texternal = {script}\n"
            f'[diff "txt"]\n\ttextconv = {script}\n'
        )
    (repo / ".gitattributes").write_text("*.txt diff=txt\n")
    (repo / "file.txt").write_text("changed\n")
    assert (await run(host, "git_log_reader", {"repoPath": str(repo)})).result["ok"]
    diff = await run(host, "git_diff", {"repoPath": str(repo)})
    assert diff.result["ok"] is True
    assert "+changed" in diff.result["diff"]
    assert not marker.exists()


async def test_diff_of_a_commit_and_of_the_working_tree(host: Host, repo: Path) -> None:
    head = git(repo, "rev-parse", "--short", "HEAD").strip()
    shown = await run(host, "git_diff", {"repoPath": str(repo), "commit": head})
    assert "-version 1" in shown.result["diff"]
    assert "+version 2" in shown.result["diff"]
    clean = await run(host, "git_diff", {"repoPath": str(repo)})
    assert clean.result == {"ok": True, "diff": "", "truncated": False, "error": ""}
    assert clean.content == [{"type": "text", "text": "no changes"}]
    for bad in ("--output=/tmp/x", "-p", "a b", "x;rm"):
        refused = await run(host, "git_diff", {"repoPath": str(repo), "commit": bad})
        assert refused.result["ok"] is False
        assert "is not a commit name" in refused.result["error"]
    unknown = await run(host, "git_diff", {"repoPath": str(repo), "commit": "deadbeef"})
    assert unknown.result["ok"] is False


async def test_long_diff_is_capped(repo: Path, tmp_path: Path) -> None:
    config = tmp_path / "cordis.yml"
    plugins = Path(__file__).resolve().parents[2] / "plugins"
    config.write_text(
        f"- {{ id: git_diff, name: {plugins / 'git_diff.py'}, config: {{ max_bytes: 50 }} }}\n"
    )
    (repo / "file.txt").write_text("".join(f"line {i}\n" for i in range(100)))
    async with Host(config) as host:
        result = await run(host, "git_diff", {"repoPath": str(repo)})
    assert result.result["truncated"] is True
    assert len(result.result["diff"].encode()) <= 50
    assert result.content[0]["text"].endswith("[truncated]")


async def test_allowed_roots_confine_repo_path(repo: Path, tmp_path: Path) -> None:
    config = tmp_path / "cordis.yml"
    plugins = Path(__file__).resolve().parents[2] / "plugins"
    (tmp_path / "allowed").mkdir()
    config.write_text(
        f"- {{ id: log, name: {plugins / 'git_log_reader.py'}, "
        "config: { allowed_roots: [./allowed] } }\n"
    )
    (tmp_path / "allowed" / "escape").symlink_to(repo)
    async with Host(config) as host:
        direct = await run(host, "git_log_reader", {"repoPath": str(repo)})
        linked = await run(host, "git_log_reader", {"repoPath": "allowed/escape"})
    for result in (direct, linked):
        assert result.result["ok"] is False
        assert "is outside the allowed roots" in result.result["error"]
