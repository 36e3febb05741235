"""An upstream slow to acknowledge a subscription (issue #31): a 2026-07-28 listen stream
harness gave up on is closed upstream, and while one upstream does not answer, other
subscriptions (to other URIs, of the same upstream or of none) are not held up.

The upstream is tests/gateway/slow_listen_server.py (the SDK's low-level server, over
stdio); downstream, real SDK clients subscribe through harness's MCP surface.
"""

from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client as SdkClient
from mcp.shared.exceptions import MCPError

from harness import Host
from harness.mcp import McpSurface

from .conftest import write_config
from .test_subscriptions import journal, subscribe

pytestmark = pytest.mark.anyio
SERVER = Path(__file__).with_name("slow_listen_server.py")


def entry(**config: Any) -> dict[str, Any]:
    body = {"command": sys.executable, "args": [str(SERVER)], "protocol": "2026-07-28"}
    return {"id": "up", "name": "harness:mcp-client", "config": body | config}


async def lines(host: Host, count: int) -> str:
    """The upstream's journal once it has ``count`` lines; each call waits up to the
    entry's short timeout, so it is asked again, ten times at most."""
    call = {"id": "j", "name": "up_journal", "args": {"at_least": count}}
    for _ in range(10):
        said = await host.tools.execute(call)
        if said.ok:
            return "\n".join(block["text"] for block in said.content if block["type"] == "text")
    raise AssertionError(f"the upstream's journal never had {count} lines: {said.error}")


async def test_a_listen_stream_not_acknowledged_in_time_is_closed_upstream(
    tmp_path: Path,
) -> None:
    async with Host(write_config(tmp_path, [entry(timeout=2)])) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        async with SdkClient(surface.server, mode="legacy") as client:
            message = "MCP server 'up' did not answer subscribing to 'feed://topics/slow' in time"
            with pytest.raises(MCPError, match=re.escape(message)):
                await subscribe(client, "feed://topics/slow")
            # harness gave up on the subscription: the upstream's stream ends too
            assert await lines(host, 2) == "listen feed://topics/slow | unlisten feed://topics/slow"
            assert host.ctx.get("resources").subscriptions.counts == {}


@pytest.mark.parametrize("other", ["feed://news", "local://elsewhere"])
async def test_a_stuck_upstream_holds_up_no_other_uri(tmp_path: Path, other: str) -> None:
    """The upstream never acknowledges ``feed://topics/stuck`` (up to the entry's timeout,
    an hour here): another client's subscribe to another URI of the same upstream, or to one
    nothing serves, is answered meanwhile."""
    async with Host(write_config(tmp_path, [entry(timeout=3600)])) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        async with (
            SdkClient(surface.server, mode="legacy") as a,
            SdkClient(surface.server, mode="legacy") as b,
            anyio.create_task_group() as group,
        ):

            async def stuck() -> None:
                with contextlib.suppress(MCPError):
                    await subscribe(a, "feed://topics/stuck")

            group.start_soon(stuck)
            with anyio.fail_after(20):
                assert await journal(host, 1) == "listen feed://topics/stuck"
                await subscribe(b, other)
            assert host.ctx.get("resources").subscriptions.counts == {other: 1}
            group.cancel_scope.cancel()
