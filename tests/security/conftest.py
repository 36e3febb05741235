"""Shared set-up of the attack tests: the repository's own cordis.yml and its tools."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from harness import Host, ToolResult

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "cordis.yml"
PLUGINS = ROOT / "plugins"
HARNESS = str(Path(sys.executable).parent / "harness")
ALL_ON = ("files.enabled=true", "git.enabled=true")
"""The bundled file and git tools ship switched off; the attack tests switch them on."""


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


async def run(host: Host, name: str, args: Any = None) -> ToolResult:
    result: ToolResult = await host.tools.execute(
        {"id": "t", "name": name, "args": {} if args is None else args}
    )
    return result


def harness(
    *args: str, cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run the real ``harness`` executable."""
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [HARNESS, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
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
        env=env,
    ).stdout
