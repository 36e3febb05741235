"""Item: git tools run nothing of the repository's choosing and read nothing outside it.

Every attack is a real repository made here whose config (or ``.git`` file, or include)
points git at a marker script; the script leaves a file when it runs. None may run, and no
byte of the secret kept outside may reach a result.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from harness import Host, ToolResult

from .conftest import PLUGINS, git, run

pytestmark = pytest.mark.anyio
SECRET = "SECRET-OUTSIDE-THE-REPOSITORY"
SIGNATURES = {
    "openpgp": "-----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----",
    "ssh": "-----BEGIN SSH SIGNATURE-----\n U1NIU0lH\n -----END SSH SIGNATURE-----",
    "x509": "-----BEGIN SIGNED MESSAGE-----\n MIAGCSqG\n -----END SIGNED MESSAGE-----",
}


class Trap:
    """A folder outside every repository, with a marker script and a secret."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir()
        self.folder = folder
        self.marker = folder / "ran"
        self.script = folder / "evil.sh"
        self.script.write_text(f'#!/bin/sh\necho "$0 $*" >> {self.marker}\ncat\n')
        self.script.chmod(self.script.stat().st_mode | stat.S_IEXEC)
        (folder / "secret.txt").write_text(SECRET + "\n")

    def ran(self) -> str:
        return self.marker.read_text() if self.marker.exists() else ""


@pytest.fixture
def trap(tmp_path: Path) -> Trap:
    return Trap(tmp_path / "outside")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "allowed" / "repo"
    folder.mkdir(parents=True)
    git(folder, "init", "-q")
    (folder / "file.txt").write_text("version 1\n")
    git(folder, "add", "file.txt")
    git(folder, "commit", "-q", "-m", "first")
    return folder


def config(repo: Path, text: str) -> None:
    with (repo / ".git" / "config").open("a") as out:
        out.write(text)


def sign_head(repo: Path, signature: str) -> str:
    """Replace HEAD by a commit carrying ``signature`` (what a signed clone holds)."""
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    parent = git(repo, "rev-parse", "HEAD").strip()
    body = (
        f"tree {tree}\nparent {parent}\n"
        "author Mallory <m@example.com> 1700000000 +0000\n"
        "committer Mallory <m@example.com> 1700000000 +0000\n"
        f"gpgsig {signature}\n\nsigned commit\n"
    )
    sha = subprocess.run(
        ["git", "-C", str(repo), "hash-object", "-t", "commit", "-w", "--stdin"],
        input=body,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git(repo, "update-ref", "HEAD", sha)
    return sha


def clean(result: ToolResult) -> bool:
    return SECRET not in json.dumps(result.to_dict())


async def both_tools(host: Host, repo: Path, commit: str | None = None) -> list[ToolResult]:
    args: dict[str, str] = {"repoPath": str(repo)}
    results = [await run(host, "git_log_reader", args)]
    results.append(await run(host, "git_diff", args))
    results.append(await run(host, "git_diff", {**args, "commit": commit or "HEAD"}))
    return results


@pytest.mark.parametrize("kind", sorted(SIGNATURES))
async def test_signature_verification_programs_never_run(
    host: Host, repo: Path, trap: Trap, kind: str
) -> None:
    config(
        repo,
        f"[log]\n\tshowSignature = true\n"
        f"[gpg]\n\tprogram = {trap.script}\n\tformat = {kind}\n"
        f'[gpg "openpgp"]\n\tprogram = {trap.script}\n'
        f'[gpg "ssh"]\n\tprogram = {trap.script}\n\tallowedSignersFile = {trap.folder}/signers\n'
        f'[gpg "x509"]\n\tprogram = {trap.script}\n',
    )
    sha = sign_head(repo, SIGNATURES[kind])
    for result in await both_tools(host, repo, sha):
        assert result.result["ok"] is True, result
    log = (await run(host, "git_log_reader", {"repoPath": str(repo)})).result["formatted"]
    assert "signed commit" in log
    assert trap.ran() == ""


@pytest.mark.parametrize(
    "driver",
    [
        "clean = {script}\n\tsmudge = {script}\n\trequired = true",
        "process = {script}\n\trequired = true",
        "clean = {script}\n\tprocess = {script}",
    ],
)
async def test_filter_drivers_never_run_on_a_dirty_tree(
    host: Host, repo: Path, trap: Trap, driver: str
) -> None:
    config(repo, f'[filter "evil"]\n\t{driver.format(script=trap.script)}\n')
    (repo / ".gitattributes").write_text("* filter=evil\n*.txt filter=evil diff=evil\n")
    config(repo, f'[diff "evil"]\n\tcommand = {trap.script}\n\ttextconv = {trap.script}\n')
    (repo / "file.txt").write_text("dirty working tree, longer than before\n")
    diff = await run(host, "git_diff", {"repoPath": str(repo)})
    assert diff.result["ok"] is True, diff
    assert "+dirty working tree, longer than before" in diff.result["diff"]
    for result in await both_tools(host, repo):
        assert result.result["ok"] is True
    assert trap.ran() == ""


async def test_includes_pointing_outside_are_not_read(host: Host, repo: Path, trap: Trap) -> None:
    evil = trap.folder / "evil.gitconfig"
    evil.write_text(
        f"[core]\n\tfsmonitor = {trap.script}\n\tpager = {trap.script}\n"
        f'[filter "evil"]\n\tclean = {trap.script}\n'
        f"[log]\n\tshowSignature = true\n[gpg]\n\tprogram = {trap.script}\n"
        f"[mailmap]\n\tfile = {trap.folder}/mailmap\n"
    )
    (trap.folder / "mailmap").write_text(f"{SECRET} <t@example.com>\n")
    config(
        repo,
        f"[include]\n\tpath = {evil}\n"
        f'[includeIf "gitdir:/"]\n\tpath = {evil}\n'
        f'[includeIf "onbranch:main"]\n\tpath = {evil}\n',
    )
    (repo / ".gitattributes").write_text("*.txt filter=evil\n")
    (repo / "file.txt").write_text("dirty\n")
    sign_head(repo, SIGNATURES["openpgp"])
    for result in await both_tools(host, repo):
        assert result.result["ok"] is True, result
        assert clean(result)
    assert trap.ran() == ""


async def test_mailmap_file_outside_is_not_read(host: Host, repo: Path, trap: Trap) -> None:
    (trap.folder / "mailmap").write_text(f"{SECRET} <t@example.com>\n")
    config(repo, f"[mailmap]\n\tfile = {trap.folder}/mailmap\n[log]\n\tmailmap = true\n")
    result = await run(host, "git_log_reader", {"repoPath": str(repo)})
    assert result.result["ok"] is True
    assert clean(result)
    assert " | Test | " in result.result["formatted"]


async def test_core_worktree_cannot_show_files_outside(host: Host, repo: Path, trap: Trap) -> None:
    (trap.folder / "file.txt").write_text(SECRET + "\n")
    config(repo, f"[core]\n\tworktree = {trap.folder}\n")
    for result in await both_tools(host, repo):
        assert result.result["ok"] is True, result
        assert clean(result)
    diff = await run(host, "git_diff", {"repoPath": str(repo)})
    assert diff.result["diff"] == ""  # the repository's own tree is clean


async def test_submodule_config_never_runs(host: Host, repo: Path, trap: Trap) -> None:
    sub = repo / "sub"
    sub.mkdir()
    git(sub, "init", "-q")
    (sub / "inner.txt").write_text("inner\n")
    git(sub, "add", "inner.txt")
    git(sub, "commit", "-q", "-m", "inner")
    git(repo, "add", "sub")
    git(repo, "commit", "-q", "-m", "add a submodule")
    with (sub / ".git" / "config").open("a") as out:
        out.write(f"[core]\n\tfsmonitor = {trap.script}\n")
        out.write(f'[filter "evil"]\n\tclean = {trap.script}\n')
    (sub / ".gitattributes").write_text("* filter=evil\n")
    (sub / "inner.txt").write_text("dirty inner\n")
    for result in await both_tools(host, repo):
        assert result.result["ok"] is True, result
    assert trap.ran() == ""


@pytest.fixture
async def confined(tmp_path: Path) -> Host:
    """git tools whose allowed_roots is ``allowed/``."""
    file = tmp_path / "confined.yml"
    file.write_text(
        "".join(
            f"- {{ id: {tool}, name: {PLUGINS / (tool + '.py')}, "
            "config: { allowed_roots: [./allowed] } }\n"
            for tool in ("git_log_reader", "git_diff")
        )
    )
    return Host(file)


def outside_repo(trap: Trap) -> Path:
    """A real repository outside the allowed roots, whose history holds the secret."""
    folder = trap.folder / "real"
    folder.mkdir()
    git(folder, "init", "-q")
    (folder / "secret.txt").write_text(SECRET + "\n")
    git(folder, "add", "secret.txt")
    git(folder, "commit", "-q", "-m", SECRET)
    return folder


async def test_git_file_pointing_outside_the_roots_is_refused(
    confined: Host, tmp_path: Path, trap: Trap
) -> None:
    real = outside_repo(trap)
    decoy = tmp_path / "allowed" / "decoy"
    decoy.mkdir(parents=True)
    (decoy / ".git").write_text(f"gitdir: {real / '.git'}\n")
    (decoy / "secret.txt").write_text("changed\n")
    linked = tmp_path / "allowed" / "linked"
    linked.mkdir()
    (linked / ".git").symlink_to(real / ".git")
    async with confined as host:
        for folder in (decoy, linked):
            for result in await both_tools(host, folder):
                assert result.result["ok"] is False
                assert "outside the allowed roots" in result.result["error"]
                assert clean(result)


async def test_commondir_and_alternates_outside_the_roots_are_refused(
    confined: Host, repo: Path, trap: Trap
) -> None:
    real = outside_repo(trap)
    alternates = repo / ".git" / "objects" / "info" / "alternates"
    alternates.parent.mkdir(parents=True, exist_ok=True)
    alternates.write_text(f"{real / '.git' / 'objects'}\n")
    async with confined as host:
        result = await run(host, "git_diff", {"repoPath": str(repo), "commit": "HEAD"})
        assert result.result["ok"] is False
        assert "alternate objects" in result.result["error"]
        alternates.unlink()
        assert (await run(host, "git_log_reader", {"repoPath": str(repo)})).result["ok"]
        (repo / ".git" / "commondir").write_text(str(real / ".git"))
        result = await run(host, "git_log_reader", {"repoPath": str(repo)})
        assert result.result["ok"] is False
        assert "common git folder" in result.result["error"]
        assert clean(result)


async def test_repo_above_the_allowed_root_is_not_used(tmp_path: Path, trap: Trap) -> None:
    real = outside_repo(trap)
    inner = real / "allowed"
    inner.mkdir()
    file = tmp_path / "c.yml"
    file.write_text(
        f"- {{ id: git_log_reader, name: {PLUGINS / 'git_log_reader.py'}, "
        f"config: {{ allowed_roots: [{inner}] }} }}\n"
    )
    async with Host(file) as host:
        result = await run(host, "git_log_reader", {"repoPath": str(inner)})
    assert result.result["ok"] is False
    assert result.result["error"].startswith("not a git repository")
    assert clean(result)


async def test_linked_worktrees_and_bare_repositories_still_work(
    host: Host, repo: Path, tmp_path: Path
) -> None:
    worktree = tmp_path / "allowed" / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(worktree))
    (worktree / "file.txt").write_text("in the worktree\n")
    diff = await run(host, "git_diff", {"repoPath": str(worktree)})
    assert "+in the worktree" in diff.result["diff"]
    bare = tmp_path / "allowed" / "bare.git"
    git(repo, "clone", "-q", "--bare", str(repo), str(bare))
    log = await run(host, "git_log_reader", {"repoPath": str(bare)})
    assert log.result["ok"] is True
    assert "first" in log.result["formatted"]
    sub = repo / "deeper" / "folder"
    sub.mkdir(parents=True)
    assert (await run(host, "git_log_reader", {"repoPath": str(sub)})).result["total"] == 1
    assert os.environ.get("GIT_DIR") is None
