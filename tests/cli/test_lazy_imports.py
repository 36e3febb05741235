"""The commands that only read a config load only what they use: ``tools``, ``check``,
``plugins``, ``call``, ``resources`` and ``prompts`` never import the MCP SDK, the HTTP
stack, the OpenAI SDK, the web console, the agent, the serving code or hot reload (and
rich only to print a table); nor pluggy while no name needs entry points, nor difflib
while nothing is misspelt.

The real ``harness`` executable runs under ``python -X importtime``, which lists every
module the process imported."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from ..helpers import ROOT, project_copy, run_harness

HEAVY = (
    "mcp",
    "starlette",
    "uvicorn",
    "httpx",
    "openai",
    "anthropic",
    "rich",
    "watchfiles",
    "dotenv",
    "harness.web",
    "harness.agent",
    "harness.cli.chat",
    "harness.mcp",
    "harness.cli.serve_host",
    "harness.reload",
    "harness.gateway",
    "harness.loader.writeback",
    "pluggy",
    "harness.loader.hooks",
    "difflib",
    "numpy",  # tool search scores with numpy, from the first search on
    "Stemmer",
    "bm25s",
)
COMMANDS = {
    "tools --json": ["tools", "--json"],
    "tools --json --format anthropic": ["tools", "--json", "--format", "anthropic"],
    "check --json": ["check", "--json"],
    "plugins --json": ["plugins", "--json"],
    "call": ["call", "echo", '{"text": "hi"}'],
    "call --json": ["call", "add", '{"a": 1, "b": 2}', "--json"],
    "resources --json": ["resources", "--json"],
    "prompts --json": ["prompts", "--json"],
}
_IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", re.MULTILINE)


def imported(*args: str, cwd: Path) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    done = run_harness(*args, cwd=cwd, python=("-X", "importtime"))
    return set(_IMPORTED.findall(done.stderr)), done


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_reading_commands_do_not_import_what_they_do_not_use(tmp_path: Path, command: str) -> None:
    project = project_copy(tmp_path / "project").parent  # the default project, its own copy
    modules, done = imported(*COMMANDS[command], cwd=project)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "harness.host" in modules  # the list is real: the host did load
    assert "yaml" in modules
    assert heavy(modules) == []


def test_the_list_sees_lazily_imported_modules(tmp_path: Path) -> None:
    # a table needs rich, and the same listing shows it: absence above means something
    modules, done = imported("plugins", cwd=project_copy(tmp_path / "project").parent)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "rich" in modules
    assert "harness.mcp" not in modules


def test_a_dotenv_file_loads_its_reader(tmp_path: Path) -> None:
    (tmp_path / "cordis.yml").write_text(
        f"- id: echo\n  name: {ROOT / 'plugins' / 'echo.py'}\n  config: {{}}\n"
    )
    (tmp_path / ".env").write_text("GREETING=hi\n")
    modules, done = imported("check", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert "dotenv" in modules


def test_an_entry_point_name_loads_pluggy_and_a_misspelt_key_difflib(tmp_path: Path) -> None:
    (tmp_path / "cordis.yml").write_text(
        "- { id: x, name: no_such_module_here }\n- { id: y, name: ./y.py, confg: {} }\n"
    )
    modules, done = imported("check", "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr[-2000:]
    assert "did you mean 'config'?" in done.stdout
    assert "no 'harness.plugins' entry point is named 'no_such_module_here'" in done.stdout
    assert {"pluggy", "harness.loader.hooks", "difflib"} <= modules


def test_a_model_entry_imports_its_sdk_when_it_loads(tmp_path: Path) -> None:
    (tmp_path / "cordis.yml").write_text(
        "- id: model\n  name: harness:anthropic\n"
        "  config: {model: claude-sonnet-4-5, base_url: 'http://127.0.0.1:9'}\n"
    )
    modules, done = imported("check", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert "anthropic" in modules
    assert "openai" not in modules
