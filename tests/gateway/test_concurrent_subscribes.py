"""One client sending ``resources/subscribe`` for a URI twice at once (issue #31): it is
one subscription, counted once, and the client's disconnection ends it upstream."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client as SdkClient

from harness import Host
from harness.mcp import McpSurface

from .conftest import write_config
from .test_subscriptions import ERAS, entry, journal, subscribe

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("protocol", ERAS)
async def test_two_subscribes_at_once_are_one_subscription(tmp_path: Path, protocol: str) -> None:
    first, second = ("subscribe", "unsubscribe") if protocol == ERAS[0] else ("listen", "unlisten")
    async with Host(write_config(tmp_path, [entry(protocol)])) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        counts = host.ctx.get("resources").subscriptions.counts
        with anyio.fail_after(30):
            async with SdkClient(surface.server, mode="legacy") as client:
                async with anyio.create_task_group() as group:
                    group.start_soon(subscribe, client, "feed://news")
                    group.start_soon(subscribe, client, "feed://news")
                assert counts == {"feed://news": 1}
                assert await journal(host) == f"{first} feed://news"
            assert await journal(host, 2) == f"{first} feed://news | {second} feed://news"
        assert counts == {}  # the client is gone: nobody is subscribed
        assert not len(host.ctx.get("resources").subscriptions._locks)  # nor any URI locked
