"""Resource subscriptions pass through the gateway (DESIGN §12, issue #31).

The upstream is the official SDK's low-level server (tests/gateway/subscribing_server.py,
over stdio) at either era; downstream, real SDK clients subscribe through harness's MCP
surface (``resources/subscribe`` at 2025-11-25, a ``subscriptions/listen`` stream at
2026-07-28). The upstream is subscribed once per URI however many clients subscribe, and
unsubscribed when the last leaves or disconnects; its updates reach the clients subscribed
to that URI and no other. A refused subscription fails downstream; a restarted upstream is
subscribed again to what the clients still follow.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client as SdkClient
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated

from harness import Host
from harness.fiber import FiberState
from harness.mcp import McpSurface

from .conftest import Watch, fiber_of, write_config

pytestmark = pytest.mark.anyio
SERVER = Path(__file__).with_name("subscribing_server.py")
ERAS = ["2025-11-25", "2026-07-28"]


def entry(protocol: str, *args: str) -> dict[str, Any]:
    body = {"command": sys.executable, "args": [str(SERVER), *args], "protocol": protocol}
    return {"id": "up", "name": "harness:mcp-client", "config": body}


class Updates:
    """A downstream client's ``resources/updated`` notifications, in order."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self._arrived = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))
            self._arrived.set()

    async def until(self, uri: str) -> None:
        with anyio.fail_after(30):
            while uri not in self.uris:
                await self._arrived.wait()
                self._arrived = anyio.Event()


async def journal(host: Host, at_least: int = 0) -> str:
    """The upstream's journal, once it has ``at_least`` lines (what a disconnected client's
    subscriptions end comes after the client has gone)."""
    args = {"at_least": at_least}
    said = await host.tools.execute({"id": "j", "name": "up_journal", "args": args})
    assert said.ok, said.error
    return "\n".join(block["text"] for block in said.content if block["type"] == "text")


async def touch(host: Host, uri: str) -> None:
    said = await host.tools.execute({"id": "t", "name": "up_touch", "args": {"uri": uri}})
    assert said.ok, said.error


async def subscribe(client: SdkClient, uri: str, undo: bool = False) -> None:
    # the request itself: the SDK's helper is deprecated (2026-07-28 has none)
    if undo:
        request: Any = types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri))
    else:
        request = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
    await client.session.send_request(request, types.EmptyResult)


@pytest.mark.parametrize("protocol", ERAS)
async def test_handshake_era_clients_subscribe_once_upstream_and_hear_only_their_uris(
    tmp_path: Path, protocol: str
) -> None:
    first, second = (
        ("subscribe", "unsubscribe") if protocol == "2025-11-25" else ("listen", "unlisten")
    )
    async with Host(write_config(tmp_path, [entry(protocol)])) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        heard_a, heard_b = Updates(), Updates()
        async with SdkClient(surface.server, mode="legacy", message_handler=heard_a) as a:
            with anyio.fail_after(30):
                async with SdkClient(surface.server, mode="legacy", message_handler=heard_b) as b:
                    await subscribe(a, "feed://news")
                    await subscribe(b, "feed://news")  # the second subscriber: not upstream
                    await subscribe(b, "feed://topics/ada")  # a URI of a template
                    assert await journal(host) == (
                        f"{first} feed://news | {first} feed://topics/ada"
                    )
                    await touch(host, "feed://topics/ada")
                    await touch(host, "feed://news")
                    await heard_b.until("feed://news")
                    await heard_a.until("feed://news")
                    assert heard_a.uris == ["feed://news"]  # not the topic it did not ask for
                    assert heard_b.uris == ["feed://topics/ada", "feed://news"]
                    await subscribe(a, "feed://news", undo=True)  # b is still subscribed
                    assert await journal(host) == (
                        f"{first} feed://news | {first} feed://topics/ada"
                    )
                # b disconnected: its subscriptions end, and so do the upstream's
                assert await journal(host, 4) == (
                    f"{first} feed://news | {first} feed://topics/ada | "
                    f"{second} feed://news | {second} feed://topics/ada"
                )
                await touch(host, "feed://news")
                await touch(host, "feed://topics/ada")
                assert heard_a.uris == ["feed://news"]


@pytest.mark.parametrize("protocol", ERAS)
async def test_a_2026_listen_stream_downstream_subscribes_upstream_while_it_lasts(
    tmp_path: Path, protocol: str
) -> None:
    first, second = (
        ("subscribe", "unsubscribe") if protocol == "2025-11-25" else ("listen", "unlisten")
    )
    async with Host(write_config(tmp_path, [entry(protocol)])) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        async with SdkClient(surface.server, mode="2026-07-28") as client:
            with anyio.fail_after(30):
                async with client.listen(resource_subscriptions=["feed://news"]) as events:
                    assert await journal(host) == f"{first} feed://news"
                    await touch(host, "feed://topics/ada")  # not asked for: not heard
                    await touch(host, "feed://news")
                    event = await events.__anext__()
                assert event == ResourceUpdated(uri="feed://news")
                assert await journal(host, 2) == f"{first} feed://news | {second} feed://news"


async def test_an_upstream_without_subscribe_is_answered_as_the_local_registry_is(
    tmp_path: Path,
) -> None:
    async with Host(write_config(tmp_path, [entry("auto", "--no-subscribe")])) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        async with SdkClient(surface.server, mode="legacy") as client:
            with anyio.fail_after(30):
                await subscribe(client, "feed://news")
                await subscribe(client, "feed://news", undo=True)
                (news,) = (await client.read_resource("feed://news")).contents
        assert await journal(host) == "empty"
    assert isinstance(news, types.TextResourceContents)
    assert news.text == "feed://news now"


async def test_a_subscription_the_upstream_refuses_fails_downstream_saying_so(
    tmp_path: Path,
) -> None:
    async with Host(write_config(tmp_path, [entry("2025-11-25")])) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        async with SdkClient(surface.server, mode="legacy") as client:
            with anyio.fail_after(30):
                with pytest.raises(MCPError) as refused:
                    await subscribe(client, "feed://topics/secret")
                await subscribe(client, "feed://topics/ada")  # the next one is not refused
        assert await journal(host, 2) == (
            "subscribe feed://topics/ada | unsubscribe feed://topics/ada"
        )
        assert host.ctx.resources.subscriptions.counts == {}
    assert refused.value.error.message == (
        "MCP server 'up' answered subscribing to 'feed://topics/secret' with an error: "
        "feed://topics/secret is not for subscribing"
    )


async def test_after_the_upstream_restarts_harness_subscribes_again(tmp_path: Path) -> None:
    config = entry("2025-11-25")
    config["config"]["restart_delay"] = 0.05
    async with Host(write_config(tmp_path, [config])) as host:
        watch = Watch(host)
        fiber = fiber_of(host, "up")
        surface = McpSurface(host.ctx)
        surface.attach()
        heard = Updates()
        async with SdkClient(surface.server, mode="legacy", message_handler=heard) as client:
            with anyio.fail_after(30):
                await subscribe(client, "feed://news")
                assert await journal(host) == "subscribe feed://news"
                crashed = await host.tools.execute({"id": "c", "name": "up_crash", "args": {}})
                assert crashed.code == "tool_error"
                await watch.until(lambda: fiber.state is FiberState.FAILED)
                await watch.until(lambda: "up_journal" in host.tools.list())
                # a new server process: its journal is new, and harness subscribed again
                assert await journal(host, 1) == "subscribe feed://news"
                await touch(host, "feed://news")
                await heard.until("feed://news")
