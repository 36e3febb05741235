"""A project with ``harness:code`` and the bundled tools, on its own temp copies of files."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness import Host, ToolCall, ToolResult, define_tool
from harness.service import unwrap
from harness.tools.service import ToolsService

from ..helpers import ROOT, write

PLUGINS = ROOT / "plugins"

CONFIG = """
insert:
  - id: tools
    name: harness:tools
  - id: policy
    name: {plugins}/policy.py
    config:
      rules: {{ multiply: deny, write_text_file: ask, greet: ask }}
  - {{ id: add, name: {plugins}/add.py }}
  - {{ id: multiply, name: {plugins}/multiply.py }}
  - {{ id: greet, name: {plugins}/greet.py }}
  - {{ id: echo, name: {plugins}/echo.py }}
  - {{ id: git_log_reader, name: {plugins}/git_log_reader.py }}
  - {{ id: git_diff, name: {plugins}/git_diff.py }}
  - id: code
    name: harness:code
    config: {code}
"""


def project(tmp_path: Path, code: str = "{timeout: 10, max_calls: 50}", extra: str = "") -> Path:
    """A cordis.yml in ``tmp_path`` (plugins from the repository, read only)."""
    return write(tmp_path / "cordis.yml", CONFIG.format(plugins=PLUGINS, code=code) + extra)


def git_repo(folder: Path, commits: int = 8) -> Path:
    """A real git repository whose even commits touch 4 files and odd ones 1."""
    folder.mkdir(parents=True, exist_ok=True)

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "Tester")
    git("config", "commit.gpgsign", "false")
    for number in range(commits):
        touched = 4 if number % 2 == 0 else 1
        for index in range(touched):
            (folder / f"f{index}.txt").write_text(f"{number}\n")
        git("add", "-A")
        git("commit", "-q", "-m", f"change {number} ({touched} files)")
    return folder


QUESTION = "which of the last 20 commits touched more than 3 files, and what were their subjects?"

SEED = """
import asyncio
log = await git_log_reader(repoPath={repo!r}, maxCount=20)
lines = log["formatted"].splitlines()[1:]
hashes = [line.split(" | ")[0] for line in lines]
diffs = await asyncio.gather(*[git_diff(repoPath={repo!r}, commit=h) for h in hashes])
wide = []
for line, diff in zip(lines, diffs):
    files = diff["diff"].count("diff --git ")
    if files > 3:
        wide.append(line.split(" | ")[3])
print(len(wide), "of", len(lines), "commits touched more than 3 files")
wide
"""
"""The seed walkthrough's question as one program: git_log_reader once, git_diff per commit."""


def answer_from(result: str) -> str:
    """What the scripted model says after reading run_code's value (JSON)."""
    import json

    value = json.loads(result)
    return "Commits that touched more than 3 files: " + "; ".join(value["value"]) + "."


async def run(host: Host, code: str, call_id: str = "rc") -> ToolResult:
    result: ToolResult = await host.ctx.tools.execute(ToolCall(call_id, "run_code", {"code": code}))
    return result


class Hold:
    """A tool ``hold`` that waits until the test releases it (and counts cancellations)."""

    def __init__(self, tools: ToolsService, expect: int = 1) -> None:
        self.expect = expect
        self.running = 0
        self.started = anyio.Event()
        """Set once ``expect`` calls are waiting."""
        self.release = anyio.Event()
        self.cancelled = 0
        self.dispose = tools.register(
            define_tool(
                name="hold",
                description="Wait until the test says so",
                execute=self.execute,
                output={"schema": {"type": "string"}},
            )
        )

    async def execute(self, args: dict[str, Any]) -> str:
        self.running += 1
        if self.running >= self.expect:
            self.started.set()
        try:
            await self.release.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise
        return "released"


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[Host]:
    async with Host(project(tmp_path)) as running:
        yield running


@pytest.fixture
def tools(host: Host) -> ToolsService:
    service = unwrap(host.ctx.tools)
    assert isinstance(service, ToolsService)
    return service
