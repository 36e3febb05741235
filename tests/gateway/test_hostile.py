"""A hostile upstream (tests/gateway/hostile_server.py, a real subprocess): collisions, heavy
descriptions and schemas are that entry's problems; its results and floods stay bounded."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness import Host

from ..helpers import HARNESS
from .conftest import PYTHON, text_of, write_config

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).parents[2]
HOSTILE = Path(__file__).with_name("hostile_server.py")
ADD = {"id": "calc", "name": str(ROOT / "plugins" / "add.py")}
ECHO = {"id": "echo", "name": str(ROOT / "plugins" / "echo.py")}


def hostile(
    entry_id: str = "up", env: dict[str, str] | None = None, **config: Any
) -> dict[str, Any]:
    """An entry mounting the hostile server over stdio."""
    body: dict[str, Any] = {"command": PYTHON, "args": [str(HOSTILE), "stdio"], **config}
    body["env"] = {"HOSTILE_DESCRIPTION_BYTES": "100", **(env or {})}
    return {"id": entry_id, "name": "harness:mcp-client", "config": body}


def check(config: Path) -> tuple[int, dict[str, Any], str]:
    done = subprocess.run(
        [HARNESS, "-c", str(config), "check", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode, json.loads(done.stdout), done.stderr


def test_a_name_collision_fails_check_with_file_line_and_entry(tmp_path: Path) -> None:
    config = write_config(tmp_path, [ADD, hostile(prefix="", include=["add", "echo"])])
    code, report, stderr = check(config)
    assert code == 1
    assert report["ok"] is False
    (problem,) = report["problems"]
    assert problem["entry"] == "up"
    assert problem["file"] == str(config)
    assert config.read_text().splitlines()[problem["line"] - 1] == "  name: harness:mcp-client"
    assert problem["message"] == (
        "MCP server 'up': tool 'add' is not mounted: its name 'add' is already registered by "
        "plugin 'calc'; give this entry a prefix, or add 'add' to its exclude"
    )
    assert "Traceback" not in stderr


async def test_a_collision_keeps_the_entry_active_with_its_other_tools(tmp_path: Path) -> None:
    config = write_config(tmp_path, [ADD, hostile(prefix="", include=["add", "echo"])])
    async with Host(config) as host:
        assert host.tools.owner("add") == "plugin 'calc'"
        assert host.tools.owner("echo") == "plugin 'up'"
        (status,) = [entry for entry in host.status() if entry.id == "up"]
        assert status.state == "active"
        assert [problem.entry for problem in host.problems()] == ["up"]
        added = await host.tools.execute({"id": "1", "name": "add", "args": {"a": 1, "b": 2}})
        assert added.result == 3
        echoed = await host.tools.execute({"id": "2", "name": "echo", "args": {"text": "a"}})
        assert text_of(echoed) == "hostile says a"


async def test_heavy_descriptions_are_cut_and_heavy_schemas_refused(tmp_path: Path) -> None:
    entry = hostile(env={"HOSTILE_DESCRIPTION_BYTES": "10000000"}, include=["wordy", "schema"])
    config = write_config(tmp_path, [entry])
    async with Host(config) as host:
        assert host.tools.list() == ["up_wordy"]
        (wordy,) = host.tools.schemas("mcp")
        description = wordy["description"]
        assert len(description.encode()) <= 16_000
        assert description.endswith(" [cut by harness: 10000000 bytes, limit 16000]")
        assert len(json.dumps(host.tools.schemas("openai"))) < 17_000
        problems = sorted(problem.message for problem in host.problems())
        assert problems == [
            "MCP server 'up': tool 'schema' is not mounted: its inputSchema is 220010 bytes, "
            "more than max_schema_bytes (64000); raise max_schema_bytes or exclude the tool",
            "MCP server 'up': tool 'wordy': its description is 10000000 bytes, more than "
            "max_description_bytes (16000); it is mounted with the description cut to 16000 "
            "bytes (raise max_description_bytes, or exclude the tool)",
        ]


async def test_the_limits_are_configurable(tmp_path: Path) -> None:
    entry = hostile(
        env={"HOSTILE_DESCRIPTION_BYTES": "20000"},
        include=["wordy", "schema"],
        max_description_bytes=30_000,
        max_schema_bytes=300_000,
    )
    async with Host(write_config(tmp_path, [entry])) as host:
        assert host.tools.list() == ["up_wordy", "up_schema"]
        assert host.problems() == []
        (wordy, _) = host.tools.schemas("mcp")
        assert wordy["description"] == "w" * 20_000
