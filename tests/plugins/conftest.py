from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from harness import Host, ToolResult

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "cordis.yml"
ALL_ON = ("files.enabled=true", "git.enabled=true")
"""The bundled file and git tools ship switched off; these tests switch them on."""
SET_ALL_ON = tuple(arg for override in ALL_ON for arg in ("--set", override))


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty workspace the bundled file tools are pointed at."""
    folder = tmp_path / "workspace"
    folder.mkdir()
    monkeypatch.setenv("HARNESS_WORKSPACE", str(folder))
    return folder


@pytest.fixture
async def host(workspace: Path) -> AsyncIterator[Host]:
    """The repository's own cordis.yml, running."""
    async with Host(CONFIG, overrides=ALL_ON) as running:
        yield running


async def run(host: Host, name: str, args: dict[str, Any] | None = None) -> ToolResult:
    result: ToolResult = await host.tools.execute({"id": "t", "name": name, "args": args or {}})
    return result


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with a fixed identity."""
    return subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.name=Test",
            "-c",
            "user.email=t@example.com",
            "-c",
            "init.defaultBranch=main",
            *args,
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
