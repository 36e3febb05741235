"""The agent's approval broker beside the other surfaces: MCP elicitation and harness call."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from harness import Host
from harness.mcp import McpSurface
from harness.testing import ScriptedServer

from ..helpers import HARNESS, Elicitor
from .conftest import PLUGINS, write

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """The OpenAI-compatible server only: these tests are about the approval surfaces."""
    with ScriptedServer() as running:
        yield running


CONFIG = """
insert:
  - id: echo
    name: {plugins}/echo.py
  - id: policy
    name: {plugins}/policy.py
    config: {{rules: {{echo: ask}}}}
  - id: model
    name: harness:openai
    config: {{model: scripted, base_url: "{url}"}}
  - id: agent
    name: harness:agent
"""


async def test_mcp_clients_still_approve_through_elicitation(
    tmp_path: Path, server: ScriptedServer
) -> None:
    config = write(tmp_path / "cordis.yml", CONFIG.format(plugins=PLUGINS, url=server.url))
    person = Elicitor()
    async with Host(config) as host:
        assert host.ctx.get("approval") is not None  # the agent's broker
        surface = McpSurface(host.ctx)
        surface.attach()
        async with Client(surface.server, mode="legacy", elicitation_callback=person) as client:
            result = await client.session.call_tool("echo", {"text": "via mcp"})
        assert host.ctx.approval.pending() == []
    assert result.is_error is False
    assert person.asked
    assert "echo" in person.asked[0]


async def test_a_console_less_call_outside_sessions_is_denied_at_once(
    tmp_path: Path, server: ScriptedServer
) -> None:
    config = write(tmp_path / "cordis.yml", CONFIG.format(plugins=PLUGINS, url=server.url))
    async with Host(config) as host:
        result = await host.tools.execute({"id": "1", "name": "echo", "args": {"text": "x"}})
    assert result.code == "denied"
    assert "the caller cannot ask a person and no console page is open" in str(result.error)


def test_harness_call_yes_approves_beside_the_agent(tmp_path: Path, server: ScriptedServer) -> None:
    write(tmp_path / "cordis.yml", CONFIG.format(plugins=PLUGINS, url=server.url))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    done = subprocess.run(
        [HARNESS, "call", "echo", '{"text": "hi"}', "--yes"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Echo: hi"
