"""The docs' example runs as written; a config that cannot work is a plain problem, not retried."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness import Host
from harness.fiber import FiberState
from harness.gateway.plugin import supervision

from ..helpers import HARNESS
from .conftest import PYTHON, SERVER, Watch, fiber_of, write_config
from .system import ensure_debian_packages

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).parents[2]


def docs_example(heading: str) -> str:
    """The first ```yaml block after ``heading`` in docs/gateway.md, verbatim."""
    text = (ROOT / "docs" / "gateway.md").read_text()
    section = text[text.index(heading) :]
    match = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


def check(config: Path, cwd: Path) -> tuple[int, dict[str, Any], str]:
    done = subprocess.run(
        [HARNESS, "-c", str(config), "check", "--json"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.returncode, json.loads(done.stdout), done.stderr


def test_the_docs_stdio_example_runs_verbatim(tmp_path: Path) -> None:
    ensure_debian_packages("nodejs", "npm", commands=("node", "npx"))
    project = tmp_path / "project"
    project.mkdir()
    config = project / "cordis.yml"
    config.write_text(docs_example("## Mounting a stdio server"))
    code, report, stderr = check(config, project)
    assert (code, report) == (0, {"ok": True, "problems": []}), stderr
    called = subprocess.run(
        [HARNESS, "call", "everything_echo", '{"message": "hi"}'],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert called.returncode == 0, called.stderr
    assert "hi" in called.stdout


def entry(entry_id: str, **config: Any) -> dict[str, Any]:
    return {"id": entry_id, "name": "harness:mcp-client", "config": config}


def test_static_errors_are_plain_problems_without_restarts(tmp_path: Path) -> None:
    server = [str(SERVER), "stdio"]
    config = write_config(
        tmp_path,
        [
            entry("nocwd", command=PYTHON, args=server, cwd="./servers"),
            entry("nocommand", command="no-such-mcp-server"),
            entry("nopath", command="./bin/missing-server"),
            entry("badport", url="http://127.0.0.1:notaport/mcp"),
            entry("badhost", url="http://exa mple.com/mcp"),
        ],
    )
    code, report, stderr = check(config, tmp_path)
    assert code == 1
    problems = {item["entry"]: item for item in report["problems"]}
    assert sorted(problems) == ["badhost", "badport", "nocommand", "nocwd", "nopath"]
    assert len(report["problems"]) == 5  # one each: no retry messages
    for problem in problems.values():
        assert problem["file"] == str(config)
        assert problem["line"] is not None
        assert "restarting" not in problem["message"]
        assert "attempt" not in problem["message"]
    assert problems["nocwd"]["message"] == (
        f"MCP server 'nocwd': cwd './servers' is not a folder (relative to {tmp_path}: "
        f"{tmp_path / 'servers'}); create it, or set cwd to an existing folder (relative to "
        "the folder of cordis.yml), or remove cwd"
    )
    assert problems["nocommand"]["message"] == (
        "MCP server 'nocommand': command 'no-such-mcp-server' was not found on PATH; install "
        "it or give its full path"
    )
    assert problems["nopath"]["message"].startswith(
        "MCP server 'nopath': command './bin/missing-server' does not exist"
    )
    assert "port" in problems["badport"]["message"]
    assert "give http://host[:port]/path" in problems["badport"]["message"]
    assert "invalid host 'exa mple.com'" in problems["badhost"]["message"]
    assert "Traceback" not in stderr


async def test_a_missing_cwd_schedules_no_restart_and_a_fix_applies(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        [entry("up", command=PYTHON, args=[str(SERVER), "stdio"], cwd="servers")],
    )
    async with Host(config) as host:
        watch = Watch(host)
        fiber = fiber_of(host, "up")
        assert fiber.state is FiberState.FAILED
        state = supervision(fiber)
        assert state is not None
        assert state.delays == []  # nothing scheduled: apply planned no attempt
        assert str(fiber.error).startswith("MCP server 'up': cwd 'servers' is not a folder")
        (tmp_path / "servers").mkdir()
        await host.reload()  # what saving cordis.yml does with hot reload on
        await watch.until(lambda: "up_echo" in host.tools.list())
        assert state.delays == []
        assert not [event for event in watch.events if event[0] == "retry"]
