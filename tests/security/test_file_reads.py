"""Items: grep opens files the safe way, a regex cannot freeze the server, memory follows
the caps. Real symlink swaps race real calls (bounded in count and time); peak memory is
measured in a subprocess (its own ``VmHWM``)."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness import Host
from harness.helpers.workspace import Workspace, WorkspaceError

from .conftest import PLUGINS, git, run

pytestmark = pytest.mark.anyio
SECRET = "needle SECRET-OUTSIDE-THE-WORKSPACE"
CALLS = 400
SECONDS = 8.0


def file_tools(tmp_path: Path, root: Path, **extra: Any) -> Path:
    settings = ", ".join(f"{key}: {value}" for key, value in {"root": root, **extra}.items())
    config = tmp_path / "cordis.yml"
    config.write_text(
        "".join(
            f"- {{ id: {tool}, name: {PLUGINS / (tool + '.py')}, config: {{ {settings} }} }}\n"
            for tool in ("grep", "read_text_file", "list_dir")
        )
        + f"- {{ id: echo, name: {PLUGINS / 'echo.py'} }}\n"
    )
    return config


@pytest.fixture
def arena(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_text("needle inside\n")
    (root / "file.txt").write_text("needle in file\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.txt").write_text(SECRET + "\n")
    (outside / "file.txt").write_text(SECRET + "\n")
    return root


@contextlib.contextmanager
def swapping(root: Path) -> Iterator[dict[str, int]]:
    """A thread swapping ``sub`` and ``file.txt`` for symlinks out, /dev/zero, a FIFO and a
    character device (mknod, as root can), over and over, until the block ends."""
    outside = root.parent / "outside"
    done = threading.Event()
    counts = {"swaps": 0}

    def swap_once() -> None:
        os.rename(root / "sub", root / ".sub.real")
        os.symlink(outside, root / "sub")
        os.unlink(root / "sub")
        os.rename(root / ".sub.real", root / "sub")
        os.rename(root / "file.txt", root / ".file.real")
        for make in (
            lambda p: os.symlink(outside / "file.txt", p),
            lambda p: os.symlink("/dev/zero", p),
            lambda p: os.mkfifo(p),
            lambda p: os.mknod(p, stat.S_IFCHR | 0o666, os.makedev(1, 5)),  # /dev/zero
        ):
            make(root / "file.txt")
            os.unlink(root / "file.txt")
        os.rename(root / ".file.real", root / "file.txt")
        counts["swaps"] += 1

    def loop() -> None:
        while not done.is_set():
            swap_once()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield counts
    finally:
        done.set()
        thread.join(timeout=30)


async def test_grep_racing_symlink_fifo_and_device_swaps_leaks_nothing(
    tmp_path: Path, arena: Path
) -> None:
    leaks = 0
    calls = 0
    async with Host(file_tools(tmp_path, arena)) as host:
        with swapping(arena) as counts, anyio.fail_after(120):
            started = time.monotonic()
            while calls < CALLS and time.monotonic() - started < SECONDS:
                for args in ({"pattern": "needle"}, {"pattern": "needle", "path": "sub"}):
                    result = await run(host, "grep", args)
                    calls += 1
                    leaks += SECRET in json.dumps(result.to_dict())
                read = await run(host, "read_text_file", {"path": "file.txt"})
                leaks += SECRET in json.dumps(read.to_dict())
        print(f"grep race: {calls} calls, {counts['swaps']} swap rounds, {leaks} leaks")
        assert counts["swaps"] > 0
        assert leaks == 0
        final = await run(host, "grep", {"pattern": "needle"})
        assert [m["path"] for m in final.result["matches"]] == ["file.txt", "sub/a.txt"]


class SwapAfterCheck(Workspace):
    """A workspace that swaps the checked path for a symlink out right after the check:
    the time-of-check to time-of-use race, made certain instead of lucky."""

    def relative(self, path: str) -> tuple[str, ...]:
        parts = super().relative(path)
        target = self.root.joinpath(*parts) if parts else None
        if target is not None and not target.is_symlink():
            os.rename(target, target.with_name(".real"))
            os.symlink(self.root.parent / "outside" / target.name, target)
        return parts


def test_swap_after_the_check_is_refused_or_skipped(arena: Path) -> None:
    with pytest.raises(WorkspaceError, match="sub is a symlink that changed while opening"):
        list(SwapAfterCheck(arena).read_files("sub"))  # swapped after the check: not followed
    (arena / "sub").unlink()
    os.rename(arena / ".real", arena / "sub")
    assert list(Workspace(arena).read_files("sub")) == [("sub/a.txt", b"needle inside\n")]
    with pytest.raises(WorkspaceError, match="symlink that changed while opening"):
        SwapAfterCheck(arena).read_text("file.txt")


def test_fifo_and_device_in_the_tree_are_skipped_without_blocking(arena: Path) -> None:
    os.mkfifo(arena / "pipe")
    os.mknod(arena / "zero", stat.S_IFCHR | 0o666, os.makedev(1, 5))
    (arena / "big.txt").write_text("needle\n" * 300_000)  # over max_bytes
    workspace = Workspace(arena, max_bytes=1_000_000)
    assert [name for name, _ in workspace.read_files(".")] == ["file.txt", "sub/a.txt"]


GREP_TEXT = "".join(f"ordinary words on line {n} with some text\n" for n in range(20_000))


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_catastrophic_pattern_cannot_freeze_other_calls(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    for index in range(10):
        (root / f"text{index}.txt").write_text(GREP_TEXT)
    async with Host(file_tools(tmp_path, root)) as host:
        answered: list[str] = []
        grep_done = anyio.Event()
        results: dict[str, Any] = {}

        async def grep() -> None:
            results["grep"] = await run(host, "grep", {"pattern": r"(\w*\s*)*Q", "regex": True})
            grep_done.set()

        async def echo() -> None:
            for index in range(50):
                result = await run(host, "echo", {"text": str(index)})
                answered.append(result.result["text"])

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(grep)
                group.start_soon(echo)
        assert answered == [f"Echo: {index}" for index in range(50)]
        assert results["grep"].result == {
            "ok": True,
            "matches": [],
            "truncated": False,
            "error": "",
        }
        refused = await run(host, "grep", {"pattern": r"(a)\1", "regex": True})
        assert "grep uses RE2 syntax" in refused.result["error"]


async def test_grep_timeout_stops_the_search(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    for index in range(40):
        (root / f"text{index}.txt").write_text(GREP_TEXT)
    async with Host(file_tools(tmp_path, root, timeout=0.001)) as host:
        result = await run(host, "grep", {"pattern": "line", "max_results": 1000})
    assert result.result["ok"] is False
    assert "took longer than 0.001 seconds and was stopped" in result.result["error"]


def test_a_stopped_search_ends_at_the_next_line(tmp_path: Path) -> None:
    sys.path.insert(0, str(PLUGINS))
    try:
        import grep
    finally:
        sys.path.remove(str(PLUGINS))
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text(GREP_TEXT)
    stop = threading.Event()
    stop.set()
    with pytest.raises(grep._Stopped):
        grep._search(Workspace(root), {"pattern": "x"}, stop, time.monotonic() + 60)


PEAK = """
import json, sys
import anyio
from harness import Host

def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])

async def main():
    async with Host(sys.argv[1]) as host:
        # ru_maxrss (resource) is carried over exec from the parent (pytest), so the peak
        # is taken from this process's own VmHWM, reset to the current size first.
        with open("/proc/self/clear_refs", "w") as out:
            out.write("5")
        base = rss("VmHWM")
        result = await host.tools.execute({"id": "m", "name": sys.argv[2],
                                           "args": json.loads(sys.argv[3])})
        peak = rss("VmHWM")
    value = result.result
    print(json.dumps({"grown_kb": peak - base, "peak_kb": peak,
                      "value": {k: v for k, v in value.items() if k != "diff" and k != "content"},
                      "size": len(value.get("diff", value.get("content", "")))}))

anyio.run(main)
"""


def peak(config: Path, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Run one call in a fresh Python process; its memory growth and result."""
    done = subprocess.run(
        [sys.executable, "-c", PEAK, str(config), tool, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    report: dict[str, Any] = json.loads(done.stdout)
    print(
        f"{tool}: grew {report['grown_kb'] / 1024:.1f} MB, peak {report['peak_kb'] / 1024:.1f} MB"
    )
    return report


def test_ranged_read_of_a_huge_line_stays_within_the_cap(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    with (root / "huge.txt").open("wb") as out:
        block = b"a" * (1 << 20)
        for _ in range(300):  # 300 MB, no newline at all
            out.write(block)
        out.write(b"\nsecond line\n")
    config = file_tools(tmp_path, root)
    first = peak(config, "read_text_file", {"path": "huge.txt", "limit": 1})
    assert first["value"] == {"ok": True, "error": "", "total_lines": 2, "truncated": True}
    assert first["grown_kb"] < 64 * 1024  # the cap is 1 MB; the line is 300 MB
    second = peak(config, "read_text_file", {"path": "huge.txt", "offset": 2, "limit": 1})
    assert second["value"]["truncated"] is False
    assert second["size"] == len("second line\n")
    assert second["grown_kb"] < 64 * 1024


def test_git_diff_of_a_huge_commit_stays_within_the_cap(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    with (repo / "big.txt").open("wb") as out:
        line = b"a line of a very large generated file\n"
        out.write(line * (200 * (1 << 20) // len(line)))  # 200 MB
    git(repo, "add", "big.txt")
    git(repo, "commit", "-q", "-m", "big")
    config = tmp_path / "git.yml"
    config.write_text(
        f"- {{ id: git_diff, name: {PLUGINS / 'git_diff.py'}, config: {{ max_bytes: 100000 }} }}\n"
    )
    report = peak(config, "git_diff", {"repoPath": str(repo), "commit": "HEAD"})
    assert report["value"] == {"ok": True, "truncated": True, "error": ""}
    assert report["size"] <= 100_000
    assert report["grown_kb"] < 64 * 1024
