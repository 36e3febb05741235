"""Names a program already has (``print``, ``Any``, ``run_code``...) stay the program's: an
upstream mounted with ``prefix: ""`` cannot take them, and the collision is a problem of the
later entry (a real MCP server, tests/code/upstream_server.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import Host

from ..helpers import HARNESS
from .conftest import run

pytestmark = pytest.mark.anyio
SERVER = Path(__file__).with_name("upstream_server.py")
CODE = {"id": "code", "name": "harness:code", "config": {"timeout": 20}}


def upstream(**config: Any) -> dict[str, Any]:
    body = {"command": sys.executable, "args": [str(SERVER)], "prefix": "", **config}
    return {"id": "up", "name": "harness:mcp-client", "config": body}


def write(folder: Path, entries: list[dict[str, Any]]) -> Path:
    path = folder / "cordis.yml"
    path.write_text(yaml.safe_dump({"insert": entries}, sort_keys=False))
    return path


def taken(name: str, why: str) -> str:
    return (
        f"tool {name!r} of plugin 'up' takes a name plugin 'code' keeps: in its programs "
        f"{name!r} is {why}, so they reach the tool only as call_tool({name!r}, {{...}}); "
        "rename the tool (for a mounted MCP server, set a prefix: on its entry)"
    )


PRINT = taken("print", "Python's builtin print")
ANY = taken("Any", "typing's Any, which the tool stubs use")
RUN_CODE_TAKEN = (
    "MCP server 'up': tool 'run_code' is not mounted: its name 'run_code' is already "
    "registered by plugin 'code'; give this entry a prefix, or add 'run_code' to its exclude"
)


async def test_programs_keep_their_names_when_an_upstream_mounts_them(tmp_path: Path) -> None:
    async with Host(write(tmp_path, [CODE, upstream()])) as host:
        assert host.tools.list() == ["run_code", "print", "Any", "quote"]
        assert host.tools.owner("run_code") == "plugin 'code'"
        program = (
            "from typing import Any\n"
            "x: Any = 1\n"
            'print("hi", x)\n'
            'words = await call_tool("Any", {"words": ["a", "b"]})\n'
            'await call_tool("print", {"text": words["result"]})\n'
        )
        result = await run(host, program)
        assert result.ok, result.error
        assert result.result["output"] == "hi 1\n"
        assert result.result["value"] == {"result": "printed upstream: a"}
        assert [call["name"] for call in result.result["calls"]] == ["Any", "print"]
        stubs = host.tools.get("run_code").description  # type: ignore[union-attr]
        assert "async def print" not in stubs
        assert "async def Any" not in stubs
        assert "# reachable only through call_tool: 'print', 'Any'" in stubs
        # the local run_code is not a tool of programs, and the upstream's is not mounted
        nested = await run(host, 'await call_tool("run_code", {"code": "1"})')
        assert nested.code == "tool_error"
        assert "unknown_tool: no tool 'run_code' may be called from this program" in (
            nested.error or ""
        )


def test_the_later_entry_has_the_problem_with_file_line_and_what_to_do(
    tmp_path: Path,
) -> None:
    config = write(tmp_path, [CODE, upstream()])
    done = subprocess.run(
        [HARNESS, "-c", str(config), "check", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    problems = json.loads(done.stdout)["problems"]
    line = config.read_text().splitlines().index("  name: harness:mcp-client") + 1
    assert problems == [
        {"file": str(config), "line": line, "entry": "up", "message": message}
        for message in (RUN_CODE_TAKEN, PRINT, ANY)
    ]
    assert "Traceback" not in done.stderr


async def test_with_the_code_entry_later_the_problem_is_its_own(tmp_path: Path) -> None:
    config = write(tmp_path, [upstream(exclude=["run_code"]), CODE])
    async with Host(config) as host:
        line = config.read_text().splitlines().index("  name: harness:code") + 1
        found = [(p.entry, p.line, p.message) for p in host.problems()]
        assert found == [("code", line, PRINT), ("code", line, ANY)]
        result = await run(host, 'print("still the builtin")')
        assert result.ok, result.error
        assert result.result["output"] == "still the builtin\n"


async def test_an_upstream_run_code_before_the_code_entry_fails_it_saying_what_to_do(
    tmp_path: Path,
) -> None:
    config = write(tmp_path, [upstream(include=["run_code"]), CODE])
    async with Host(config) as host:
        (problem,) = host.problems()
        assert problem.entry == "code"
        assert problem.message == (
            "the tool name 'run_code', code mode's own, is taken by plugin 'up': rename that "
            "tool (for a mounted MCP server, set a prefix: on its entry or add 'run_code' to "
            "its exclude)"
        )
        called = await host.tools.execute({"id": "1", "name": "run_code", "args": {"code": "x"}})
        assert called.result == {"result": "upstream ran 1 characters"}


async def test_a_prefix_gives_the_tools_functions_again(tmp_path: Path) -> None:
    async with Host(write(tmp_path, [CODE, upstream(prefix="up_")])) as host:
        assert host.problems() == []
        result = await run(host, 'r = await up_print(text="x")\nprint(r["result"])\nr')
        assert result.ok, result.error
        assert result.result["output"] == "printed upstream: x\n"
