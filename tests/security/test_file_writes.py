"""Item: writes cannot arm a repository, keep permission bits, and never collide."""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from harness import Host

from .conftest import PLUGINS, git, run

pytestmark = pytest.mark.anyio


@pytest.fixture
async def files(tmp_path: Path) -> AsyncIterator[tuple[Host, Path]]:
    """The file tools alone (no approval policy), on a workspace holding a git repository."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "repo").mkdir()
    git(root / "repo", "init", "-q")
    config = tmp_path / "cordis.yml"
    config.write_text(
        "".join(
            f"- {{ id: {tool}, name: {PLUGINS / (tool + '.py')}, config: {{ root: {root} }} }}\n"
            for tool in ("write_text_file", "read_text_file", "grep")
        )
    )
    async with Host(config) as host:
        yield host, root


@pytest.mark.parametrize(
    "path",
    [
        "repo/.git/hooks/pre-commit",
        "repo/.git/config",
        "repo/.git/new/deeper/file",
        ".git/config",
        "a/b/.GIT/hooks/post-checkout",
        "repo/.git",
        "sub/.git",
        "gitlink/config",
        "{root}/repo/.git/hooks/pre-commit",
    ],
)
async def test_nothing_is_written_inside_a_git_folder(files: tuple[Host, Path], path: str) -> None:
    host, root = files
    (root / "gitlink").symlink_to(root / "repo" / ".git")
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    result = await run(
        host, "write_text_file", {"path": path.format(root=root), "content": "#!/bin/sh\nid\n"}
    )
    assert result.result["ok"] is False
    assert "inside a .git folder" in result.result["error"]
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before
    assert not (root / "repo" / ".git" / "hooks" / "pre-commit").exists()


@pytest.mark.parametrize("mode", [0o755, 0o600, 0o640, 0o4755])
async def test_rewrite_keeps_permission_bits(files: tuple[Host, Path], mode: int) -> None:
    host, root = files
    target = root / "script.sh"
    target.write_text("old\n")
    target.chmod(mode)
    result = await run(host, "write_text_file", {"path": "script.sh", "content": "new\n"})
    assert result.result["ok"] is True
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == mode


async def test_stale_and_hostile_temp_names_do_not_block(files: tuple[Host, Path]) -> None:
    host, root = files
    outside = root.parent / "outside.txt"
    outside.write_text("untouched\n")
    (root / f".notes.txt.{os.getpid()}.tmp").write_text("stale from a crash\n")
    (root / ".notes.txt.tmp").symlink_to(outside)
    for index in range(3):
        result = await run(host, "write_text_file", {"path": "notes.txt", "content": f"{index}\n"})
        assert result.result["ok"] is True, result
    assert (root / "notes.txt").read_text() == "2\n"
    assert outside.read_text() == "untouched\n"
    leftovers = {p.name for p in root.iterdir()} - {"notes.txt", "repo", "gitlink"}
    assert leftovers == {f".notes.txt.{os.getpid()}.tmp", ".notes.txt.tmp"}


async def test_concurrent_writes_to_one_file_all_finish(files: tuple[Host, Path]) -> None:
    host, root = files
    results: list[dict[str, object]] = []
    contents = [f"writer {index}\n" * 1000 for index in range(60)]

    async def write(text: str) -> None:
        result = await run(host, "write_text_file", {"path": "shared.txt", "content": text})
        results.append(result.result)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            for text in contents:
                group.start_soon(write, text)
    assert [item["ok"] for item in results] == [True] * len(contents)
    assert (root / "shared.txt").read_text() in contents  # one whole write, never a mix
    assert sorted(p.name for p in root.iterdir()) == ["repo", "shared.txt"]
