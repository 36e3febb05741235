"""The fast path knows which SDK releases it mirrors (``MIRRORED_MCP``): the installed SDK
must be one of them, pyproject's range must say the same, and an SDK outside the range (an
install that ignored the pin) turns the fast path off instead of answering with another
release's rules and bytes."""

from __future__ import annotations

import importlib.metadata
import logging
import tomllib
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet

from harness import Context, ToolsService, define_tool
from harness.mcp import McpSurface
from harness.mcp.http import fast_path
from harness.mcp.http.fast_path import MIRRORED_MCP, FastCalls, mirrors

from ....helpers import ROOT


def test_the_installed_mcp_is_a_release_the_fast_path_mirrors() -> None:
    installed = importlib.metadata.version("mcp")
    assert installed in SpecifierSet(MIRRORED_MCP), (
        f"mcp {installed} is installed, but the fast path (harness.mcp.http.fast_path) "
        f"mirrors mcp{MIRRORED_MCP}: run tests/mcp/http/fast_path against it, bring the fast "
        "path's header rules, body limit, envelope checks and bytes in line, then widen "
        "MIRRORED_MCP and pyproject's range together"
    )


def test_pyproject_pins_mcp_to_the_mirrored_releases() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = [dep for dep in project["dependencies"] if dep.split(">")[0].split("<")[0] == "mcp"]
    assert pins == [f"mcp{MIRRORED_MCP}"]


@pytest.mark.parametrize(
    "version",
    ["2.2.9", "2.3", "2.3.0", "2.3.7", "2.3.0.post1", "2.4.0", "2.4", "2.10.1", "3.0.0", "1.9"],
)
def test_mirrors_agrees_with_the_packaging_rules(version: str) -> None:
    assert mirrors(version) is (version in SpecifierSet(MIRRORED_MCP))


def test_a_pre_release_of_the_next_minor_is_outside() -> None:
    assert not mirrors("2.4.0rc1")
    assert mirrors(importlib.metadata.version("mcp"))


def _layers(app: Any) -> list[type]:
    found = []
    while app is not None:
        found.append(type(app))
        app = getattr(app, "app", None)
    return found


@pytest.mark.anyio
async def test_an_sdk_outside_the_range_turns_the_fast_path_off(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async with Context() as root:
        await root.plugin(ToolsService)
        root.tools.register(define_tool(name="ping", description="p", execute=lambda a: "pong"))
        surface = McpSurface(root)
        assert FastCalls in _layers(surface.http_app("127.0.0.1"))
        monkeypatch.setattr(fast_path, "installed_sdk", lambda: "2.4.0")
        with caplog.at_level(logging.WARNING, logger="harness.mcp"):
            assert FastCalls not in _layers(surface.http_app("127.0.0.1"))
        assert f"the MCP fast path is off: it mirrors mcp{MIRRORED_MCP} and this is mcp 2.4.0" in (
            caplog.text
        )
