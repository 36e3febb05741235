"""Two apps of one surface on 127.0.0.1 — with the fast path and without it (the SDK's app
alone) — and the requests the tests send to both."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types

from harness import Host, define_tool
from harness.mcp import McpSurface
from harness.mcp.http.fast_path import FastCalls
from harness.mcp.http.limits import HttpLimits
from harness.mcp.http.transport import serve_app
from harness.tools.definition import ToolDefinition

from ....helpers import ALL_ON

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
}
ACCEPT = types.ElicitResult(action="accept", content={"approve": True})


@dataclass
class Gate:
    """What the ``wait`` tool does: say it started, wait for release, note a cancellation."""

    started: anyio.Event = field(default_factory=anyio.Event)
    release: anyio.Event = field(default_factory=anyio.Event)
    cancelled: anyio.Event = field(default_factory=anyio.Event)


@dataclass
class Twin:
    surface: McpSurface
    fast: str
    sdk: str
    layer: FastCalls
    gate: Gate

    def reset(self) -> Gate:
        self.gate = Gate()
        return self.gate


def extra_tools(twin: list[Twin]) -> list[ToolDefinition]:
    def fails(args: dict[str, Any]) -> Any:
        raise RuntimeError("the disk is on fire")

    async def wait(args: dict[str, Any]) -> str:
        gate = twin[0].gate
        gate.started.set()
        try:
            await gate.release.wait()
        except anyio.get_cancelled_exc_class():
            gate.cancelled.set()
            raise
        return "released"

    pixel = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
    return [
        define_tool(name="fails", description="Always fails", execute=fails),
        define_tool(name="wait", description="Waits to be released", execute=wait),
        define_tool(
            name="nothing",
            description="Returns nulls",
            execute=lambda args: {"x": None, "list": [None, 1.5], "ünï": "cödé ✓"},
        ),
        define_tool(
            name="picture",
            description="Returns an image and a link",
            execute=lambda args: "ok",
            output={
                "render": lambda value: [
                    {"type": "text", "text": "a picture"},
                    {"type": "image", "data": pixel, "mime_type": "image/png"},
                    {"type": "image", "url": "https://example.com/a.png", "mime_type": "image/png"},
                ]
            },
        ),
        ToolDefinition(  # declares an Mcp-Param header: the SDK checks it
            name="routed",
            description="Routed by region",
            parameters={
                "type": "object",
                "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
            },
            execute=lambda **args: args,
        ),
    ]


async def serve_twin(config: Path, workspace: Path) -> AsyncIterator[Twin]:
    """The twin apps over the project ``config``, served until the caller is done."""
    async with Host(config, overrides=ALL_ON) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        holder: list[Twin] = []
        for tool in extra_tools(holder):
            surface.tools.register(tool)
        apps = {
            "fast": surface.http_app("127.0.0.1"),
            "sdk": surface.http_app("127.0.0.1", fast=False),
        }
        urls: dict[str, str] = {}
        async with anyio.create_task_group() as group:
            for label, app in apps.items():
                ready = anyio.Event()

                def on_ready(url: str, label: str = label, ready: anyio.Event = ready) -> None:
                    urls[label] = url
                    ready.set()

                group.start_soon(
                    partial(serve_app, app, "127.0.0.1", 0, None, HttpLimits(), on_ready)
                )
                with anyio.fail_after(30):
                    await ready.wait()
            holder.append(
                Twin(surface, urls["fast"], urls["sdk"], fast_layer(apps["fast"]), Gate())
            )
            yield holder[0]
            group.cancel_scope.cancel()


def fast_layer(app: Any) -> FastCalls:
    while not isinstance(app, FastCalls):
        app = app.app
    return app


def call(name: str, arguments: Any = None, request_id: Any = 1, **params: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, **params, "_meta": META}
    if arguments is not None:
        body["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": body}


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str | None
    body: bytes


async def post(
    url: str, body: Any, headers: Any = None, name: str | None = None, raw: bytes | None = None
) -> Answer:
    sent: Any = dict(HEADERS) if headers is None else headers
    if name is not None and isinstance(sent, dict):
        sent = {**sent, "mcp-name": name}
    content = raw if raw is not None else json.dumps(body).encode()
    async with httpx2.AsyncClient(timeout=30) as client:
        response = await client.post(url, content=content, headers=sent)
    return Answer(response.status_code, response.headers.get("content-type"), response.content)


async def both(twin: Twin, *args: Any, **kwargs: Any) -> tuple[Answer, Answer, int]:
    """The answers of the fast and the SDK app, and how many the fast path answered."""
    before = twin.layer.served
    fast = await post(twin.fast, *args, **kwargs)
    sdk = await post(twin.sdk, *args, **kwargs)
    return fast, sdk, twin.layer.served - before


def headers(**changes: str | None) -> dict[str, str]:
    changed = {**HEADERS, "mcp-name": "add", **changes}
    return {key: value for key, value in changed.items() if value is not None}


def with_meta(body: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    params = body["params"]
    return {**body, "params": {**params, "_meta": {**params["_meta"], key: value}}}


ADD = call("add", {"a": 1, "b": 2})
VERSION = "io.modelcontextprotocol/protocolVersion"
