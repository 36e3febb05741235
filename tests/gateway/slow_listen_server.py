"""``subscribing_server.py``, but slow to acknowledge some listen streams: a stream for a
URI containing "slow" is acknowledged after 4 seconds, one containing "stuck" never (a slow
or hostile 2026-07-28 upstream). Run as ``python slow_listen_server.py`` (stdio); the
journal has ``listen URIS`` when a stream arrives and ``unlisten URIS`` when it ends.
"""

from __future__ import annotations

from typing import Any

import anyio
import subscribing_server as base  # type: ignore[import-not-found]  # run as a script
from mcp.server.stdio import stdio_server


async def listen(ctx: Any, params: Any) -> Any:
    uris = " ".join(params.notifications.resource_subscriptions or ())
    if uris:
        base.write(f"listen {uris}")
    try:
        if "stuck" in uris:
            await anyio.sleep_forever()
        if "slow" in uris:
            await anyio.sleep(4)
        return await base.listener(ctx, params)
    finally:
        if uris:
            base.write(f"unlisten {uris}")


async def main() -> None:
    server = base.Server(
        "slow-upstream",
        on_list_tools=base.list_tools,
        on_call_tool=base.call_tool,
        on_list_resources=base.list_resources,
        on_list_resource_templates=base.list_templates,
        on_read_resource=base.read_resource,
        on_subscribe_resource=base.subscribe,
        on_unsubscribe_resource=base.unsubscribe,
        on_subscriptions_listen=listen,
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
