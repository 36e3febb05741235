"""The file tools against escapes: real files, real symlinks, a real FIFO.

Every refusal is checked for its message, and no byte of the secret kept outside the
workspace may reach any result.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness import Host, ToolResult

from .conftest import run

pytestmark = pytest.mark.anyio
SECRET = "TOP-SECRET-OUTSIDE-THE-WORKSPACE"


@pytest.fixture
def layout(workspace: Path) -> Path:
    """The workspace with traps around it."""
    outside = workspace.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    evil = workspace.parent / "workspace-evil"
    evil.mkdir()
    (evil / "secret.txt").write_text(SECRET)
    (workspace / "notes.txt").write_text("line one\nline two\nline three\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "deep.txt").write_text("deep text\n")
    (workspace / "link_out").symlink_to(outside / "secret.txt")
    (workspace / "dir_link").symlink_to(outside)
    (workspace / "inside_link").symlink_to(workspace / "notes.txt")
    (workspace / "sub" / "up_link").symlink_to("../../outside/secret.txt")
    os.mkfifo(workspace / "pipe")
    (workspace / "big.txt").write_text("".join(f"row {i}\n" for i in range(200_000)))
    (workspace / "bin.dat").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    (workspace / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    return workspace


def leaked(result: ToolResult) -> bool:
    return SECRET in json.dumps(result.to_dict())


async def read(host: Host, path: str, **extra: Any) -> dict[str, Any]:
    result = await run(host, "read_text_file", {"path": path, **extra})
    assert result.ok, result
    assert not leaked(result)
    value: dict[str, Any] = result.result
    return value


async def test_reads_inside_the_workspace(host: Host, layout: Path) -> None:
    value = await read(host, "notes.txt")
    assert value == {
        "ok": True,
        "content": "line one\nline two\nline three\n",
        "error": "",
        "total_lines": 3,
        "truncated": False,
    }
    assert (await read(host, "sub/deep.txt"))["content"] == "deep text\n"
    assert (await read(host, str(layout / "notes.txt")))["ok"]  # absolute, inside
    assert (await read(host, "inside_link"))["content"].startswith("line one")
    part = await read(host, "notes.txt", offset=2, limit=1)
    assert (part["content"], part["total_lines"]) == ("line two\n", 3)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../outside/secret.txt", "'..' is not allowed in paths: ../outside/secret.txt"),
        ("sub/../../outside/secret.txt", "'..' is not allowed in paths"),
        ("{outside}/secret.txt", "is outside the workspace; use a path inside it"),
        ("link_out", "link_out resolves (through a symlink) outside the workspace"),
        ("dir_link/secret.txt", "resolves (through a symlink) outside the workspace"),
        ("sub/up_link", "resolves (through a symlink) outside the workspace"),
        ("../workspace-evil/secret.txt", "'..' is not allowed"),
        ("{evil}/secret.txt", "is outside the workspace"),
        ("notes\x00.txt", "the path contains a NUL byte"),
        ("pipe", "pipe is not a regular file (a device, FIFO or socket)"),
        ("sub", "sub is a folder; use list_dir to see what is in it"),
        ("bin.dat", "bin.dat is binary (not UTF-8 text); this tool only reads text files"),
        ("latin1.txt", "latin1.txt is binary (not UTF-8 text)"),
        ("big.txt", "over the 1000000-byte limit; read it in parts with offset and limit"),
        ("missing.txt", "no such file in the workspace: missing.txt"),
        ("", "the path is empty"),
    ],
)
async def test_read_refusals(host: Host, layout: Path, path: str, message: str) -> None:
    path = path.format(outside=layout.parent / "outside", evil=layout.parent / "workspace-evil")
    result = await run(host, "read_text_file", {"path": path})
    assert result.ok  # an expected failure is a value, not an exception
    assert result.result["ok"] is False
    assert message in result.result["error"]
    assert result.result["content"] == ""
    assert not leaked(result)


async def test_large_files_read_by_line_range(host: Host, layout: Path) -> None:
    value = await read(host, "big.txt", offset=100_000, limit=2)
    assert value["content"] == "row 99999\nrow 100000\n"
    assert value["total_lines"] == 200_000


async def test_list_dir_and_its_refusals(host: Host, layout: Path) -> None:
    result = await run(host, "list_dir", {})
    entries = {e["name"]: e["type"] for e in result.result["entries"]}
    assert entries["link_out"] == "symlink"
    assert entries["sub"] == "dir"
    assert entries["pipe"] == "other"
    assert entries["notes.txt"] == "file"
    capped = await run(host, "list_dir", {"max_entries": 2})
    assert len(capped.result["entries"]) == 2
    assert capped.result["truncated"] is True
    for path in ("../outside", "dir_link", str(layout.parent / "outside")):
        refused = await run(host, "list_dir", {"path": path})
        assert refused.result["ok"] is False
        assert not leaked(refused)


async def test_grep_never_follows_links_out(host: Host, layout: Path) -> None:
    found = await run(host, "grep", {"pattern": "SECRET", "ignore_case": True})
    assert found.result == {"ok": True, "matches": [], "truncated": False, "error": ""}
    assert not leaked(found)
    lines = await run(host, "grep", {"pattern": "line t", "path": "."})
    assert [(m["path"], m["line"]) for m in lines.result["matches"]] == [
        ("notes.txt", 2),
        ("notes.txt", 3),
    ]
    many = await run(host, "grep", {"pattern": r"^line \w+$", "regex": True, "max_results": 2})
    assert many.result["truncated"] is True
    assert [m["text"] for m in many.result["matches"]] == ["line one", "line two"]
    big = await run(host, "grep", {"pattern": "row 5", "path": "big.txt"})
    assert big.result["matches"] == []  # over the size limit: skipped, not read
    bad = await run(host, "grep", {"pattern": "(", "regex": True})
    assert bad.result["ok"] is False
    for path in ("../outside", "link_out", "dir_link"):
        refused = await run(host, "grep", {"pattern": "x", "path": path})
        assert refused.result["ok"] is False
        assert not leaked(refused)


async def test_write_inside_and_refusals(host: Host, layout: Path) -> None:
    host.ctx.provide("approval", Yes())
    written = await run(host, "write_text_file", {"path": "new/dir/file.txt", "content": "hé"})
    assert written.result == {"ok": True, "path": "new/dir/file.txt", "bytes": 3, "error": ""}
    assert (layout / "new" / "dir" / "file.txt").read_text() == "hé"
    attacks = {
        "../outside/new.txt": layout.parent / "outside" / "new.txt",
        "link_out": layout.parent / "outside" / "secret.txt",
        "dir_link/x.txt": layout.parent / "outside" / "x.txt",
        str(layout.parent / "workspace-evil" / "x.txt"): layout.parent / "workspace-evil" / "x.txt",
    }
    for path, target in attacks.items():
        refused = await run(host, "write_text_file", {"path": path, "content": "pwned"})
        assert refused.result["ok"] is False, path
        assert not target.exists() or target.read_text() == SECRET
    for path in ("sub", "pipe"):
        refused = await run(host, "write_text_file", {"path": path, "content": "x"})
        assert "is not a regular file" in refused.result["error"]
    assert sorted(p.name for p in layout.iterdir() if p.name.endswith(".tmp")) == []


class Yes:
    async def request(self, call: Any, reason: str) -> bool:
        return True
