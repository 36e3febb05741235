"""The SDK upstream of ``upstream_server.py`` over streamable HTTP, speaking 2026-07-28 only.

Run as ``python modern_server.py PORT``. The SDK's server speaks both eras; in front of it
sits a gate that refuses, as a 2026-only server does, every request that is not of the
2026-07-28 era (no ``MCP-Protocol-Version`` header of that era: the ``initialize``
handshake, above all) with HTTP 400 and a JSON-RPC error. ``MODERN_MARK`` (a file) receives
one line per refused request, for the tests to count.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import uvicorn
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from upstream_server import server  # type: ignore[import-not-found]  # run as a script

REFUSED = Path(os.environ["MODERN_MARK"]) if os.environ.get("MODERN_MARK") else None


class ModernOnly:
    """ASGI middleware: only 2026-07-28 requests reach the SDK server."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            version = headers.get(b"mcp-protocol-version", b"").decode()
            if version not in MODERN_PROTOCOL_VERSIONS:
                await self._refuse(scope, send, version)
                return
        await self.app(scope, receive, send)

    async def _refuse(self, scope: Any, send: Any, version: str) -> None:
        if REFUSED is not None:
            with REFUSED.open("a") as marks:
                marks.write(f"{scope['method']} {version or '-'}\n")
        error = {"code": -32020, "message": "this server speaks only 2026-07-28"}
        body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 400,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})


if __name__ == "__main__":
    app = ModernOnly(server.streamable_http_app(stateless_http=True))
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="info")
