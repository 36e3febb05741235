"""Code mode with deferral: ``run_code``'s stubs list ``search_tools`` and the kept tools only,
and a program finds a tool with ``search_tools`` and calls it with ``call_tool``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness import Host, ToolCall

from ..helpers import ROOT, write
from .test_tools_search import CATALOGUE, CATALOGUE_PLUGIN

pytestmark = pytest.mark.anyio

PROGRAM = """
found = await search_tools(query="reserve a seat on a plane", limit=3)
name = found["tools"][0]["name"]
denied = await search_tools(query="remove all files on the disk")
[name, await call_tool(name, {}), [t["name"] for t in denied["tools"]]]
"""


def config(tmp_path: Path, defer: str) -> Path:
    write(tmp_path / "plugins" / "catalogue.py", CATALOGUE_PLUGIN)
    shutil.copy(ROOT / "plugins" / "policy.py", tmp_path / "plugins" / "policy.py")
    return write(
        tmp_path / "cordis.yml",
        f"- {{ id: catalogue, name: ./plugins/catalogue.py, "
        f"config: {{ tools: {json.dumps(CATALOGUE)} }} }}\n"
        "- { id: policy, name: ./plugins/policy.py, "
        "config: { rules: { delete_everything: deny } } }\n"
        f"- {{ id: tools, name: 'harness:tools', "
        f"config: {{ search: {{ defer: {defer}, keep: [get_weather] }} }} }}\n"
        "- { id: code, name: 'harness:code', config: { timeout: 20 } }\n",
    )


async def test_stubs_list_the_kept_tools_and_programs_search_then_call(tmp_path: Path) -> None:
    async with Host(config(tmp_path, "true")) as host:
        definition = host.tools.get("run_code")
        assert definition is not None
        assert "async def search_tools(" in definition.description
        assert "async def get_weather(" in definition.description
        assert "async def book_flight(" not in definition.description
        result = await host.tools.execute(ToolCall("rc", "run_code", {"code": PROGRAM}))
        assert result.ok, result.error
        assert result.result["value"][:2] == ["book_flight", "book_flight"]
        assert "delete_everything" not in result.result["value"][2]


async def test_without_deferral_every_tool_has_a_stub(tmp_path: Path) -> None:
    async with Host(config(tmp_path, "false")) as host:
        definition = host.tools.get("run_code")
        assert definition is not None
        assert "async def book_flight(" in definition.description
