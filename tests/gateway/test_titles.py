"""What an upstream's tools, resources and prompts say of themselves is kept (DESIGN §12).

The upstream is the official SDK's low-level server (tests/gateway/titled_server.py, over
stdio); its tool's ``title``, ``annotations`` (their ``title`` too), ``outputSchema``,
``icons`` and ``_meta``, and its resource's, template's and prompt's titles reach harness's
registries, a real SDK client downstream (``tools/list``, ``resources/list``, ...) and
``harness tools --json --format mcp``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client as SdkClient

from harness import Host
from harness.mcp import McpSurface

from ..helpers import run_harness
from .conftest import write_config

pytestmark = pytest.mark.anyio
SERVER = Path(__file__).with_name("titled_server.py")
ENTRY = {
    "id": "up",
    "name": "harness:mcp-client",
    "config": {"command": sys.executable, "args": [str(SERVER)]},
}
META = {"example.com/ui": {"panel": "report", "width": 3}}
ICON = {"src": "data:image/png;base64,iVBORw0KGgo=", "mimeType": "image/png", "sizes": ["48x48"]}
LISTED: dict[str, Any] = {
    "name": "up_report",
    "title": "Quarterly report",
    "description": "Build the quarterly report.",
    "inputSchema": {"type": "object", "properties": {"quarter": {"type": "integer"}}},
    "outputSchema": {"type": "object", "properties": {"pages": {"type": "integer"}}},
    "annotations": {"title": "Report builder", "readOnlyHint": True},
    "icons": [ICON],
    "_meta": META,
}


async def test_a_mounted_tool_keeps_its_title_annotations_and_meta(tmp_path: Path) -> None:
    async with Host(write_config(tmp_path, [ENTRY])) as host:
        definition = host.tools.get("up_report")
        assert definition is not None
        assert (definition.title, definition.annotations.title) == (
            "Quarterly report",
            "Report builder",
        )
        assert definition.meta == META
        (schema,) = host.tools.schemas("mcp")
        assert schema == LISTED
        surface = McpSurface(host.ctx)
        surface.attach()
        for mode in ("legacy", "2026-07-28"):
            async with SdkClient(surface.server, mode=mode) as client:
                with anyio.fail_after(30):
                    (tool,) = (await client.list_tools()).tools
                    (resource,) = (await client.list_resources()).resources
                    (template,) = (await client.list_resource_templates()).resource_templates
                    (prompt,) = (await client.list_prompts()).prompts
            dumped = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
            dumped.pop("execution", None)
            assert dumped == LISTED, mode
            assert (resource.title, template.title, prompt.title) == (
                "The ledger",
                "A month's books",
                "Summarise the books",
            )


def test_harness_tools_json_shows_them(tmp_path: Path) -> None:
    write_config(tmp_path, [ENTRY])
    done = run_harness("tools", "--json", "--format", "mcp", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [LISTED]
