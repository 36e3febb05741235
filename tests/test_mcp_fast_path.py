"""The fast path of streamable HTTP answers exactly as the SDK's transport would.

One surface is served twice on 127.0.0.1: with the fast path and without it (the SDK's app
alone). The same requests go to both, as raw bytes and through the official SDK client; the
answers must be the same bytes, and the fast path's count says which requests it answered.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.server import _streamable_http_modern
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS
from mcp_types import methods as _methods

from harness import Host, define_tool
from harness.http_limits import HttpLimits
from harness.mcp import APPROVAL_KEY, Catalog, McpSurface
from harness.mcp import answer as answer_module
from harness.mcp.fast import FastCalls
from harness.mcp.http import serve_app
from harness.tools.define import ToolDefinition

from .helpers import ALL_ON, CONFIG

pytestmark = pytest.mark.anyio
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


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn runs on asyncio


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


@pytest.fixture
async def twin(workspace: Path) -> AsyncIterator[Twin]:
    async with Host(CONFIG, overrides=ALL_ON) as host:
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


PLAIN = {
    "a sum": (call("add", {"a": 1, "b": 2}), "add"),
    "a string id": (call("add", {"a": 0.5, "b": 2}, request_id="req-é"), "add"),
    "a large id": (call("echo", {"text": "hi"}, request_id=2**62), "echo"),
    "a huge id": (call("add", {"a": 1, "b": 1}, request_id=-(10**40)), "add"),
    "an empty id": (call("add", {"a": 1, "b": 1}, request_id=""), "add"),
    "unicode text": (call("echo", {"text": "héllo ✓ \u202e"}), "echo"),
    "a body in many parts": (call("echo", {"text": "long " * 100_000}), "echo"),
    "no arguments": (call("greet"), "greet"),
    "an unknown tool": (call("nope", {}), "nope"),
    "invalid arguments": (call("add", {"a": "one", "b": 2}), "add"),
    "a failing tool": (call("fails", {}), "fails"),
    "nulls and non-ASCII": (call("nothing", {}), "nothing"),
    "images and links": (call("picture", {}), "picture"),
    "a denied call": (
        call("write_text_file", {"path": "a.txt", "content": "A"}),
        "write_text_file",
    ),
    "unknown body fields": ({**call("add", {"a": 1, "b": 1}), "extra": True}, "add"),
}


@pytest.mark.parametrize("case", list(PLAIN))
async def test_plain_calls_are_answered_here_with_the_sdks_bytes(twin: Twin, case: str) -> None:
    body, name = PLAIN[case]
    fast, sdk, served = await both(twin, body, name=name)
    assert served == 1
    assert fast == sdk
    assert fast.status == 200
    assert fast.content_type == "application/json"
    assert json.loads(fast.body)["result"]["resultType"] == "complete"


def headers(**changes: str | None) -> dict[str, str]:
    changed = {**HEADERS, "mcp-name": "add", **changes}
    return {key: value for key, value in changed.items() if value is not None}


def with_meta(body: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    params = body["params"]
    return {**body, "params": {**params, "_meta": {**params["_meta"], key: value}}}


ADD = call("add", {"a": 1, "b": 2})
VERSION = "io.modelcontextprotocol/protocolVersion"
REFUSED: dict[str, dict[str, Any]] = {
    "another method header": {"body": ADD, "headers": headers(**{"mcp-method": "tools/list"})},
    "another name header": {"body": ADD, "headers": headers(**{"mcp-name": "echo"})},
    "no name header": {"body": ADD, "headers": headers(**{"mcp-name": None})},
    "a version header unlike the body's": {
        "body": with_meta(ADD, VERSION, "2026-01-01"),
        "headers": headers(),
    },
    "an unsupported version": {
        "body": with_meta(ADD, VERSION, "2099-01-01"),
        "headers": headers(**{"mcp-protocol-version": "2099-01-01"}),
    },
    "no capabilities in the envelope": {
        "body": call("add", {"a": 1, "b": 2}) | {"params": {"name": "add", "_meta": {}}},
        "headers": headers(),
    },
    "another content type": {"body": ADD, "headers": headers(**{"content-type": "text/plain"})},
    "a foreign host": {"body": ADD, "headers": headers(host="evil.example:80")},
    "a foreign origin": {"body": ADD, "headers": headers(origin="http://evil.example")},
    "no event stream accepted": {"body": ADD, "headers": headers(accept="application/json")},
    "a repeated name header": {
        "body": ADD,
        "headers": [*headers().items(), ("mcp-name", "add")],
    },
    "malformed JSON": {"raw": b'{"jsonrpc": "2.0", "id": 1,', "headers": headers()},
    "a batch": {"body": [ADD, ADD], "headers": headers()},
    "a notification": {"body": {k: v for k, v in ADD.items() if k != "id"}, "headers": headers()},
    "jsonrpc 1.0": {"body": {**ADD, "jsonrpc": "1.0"}, "headers": headers()},
    "a boolean id": {"body": {**ADD, "id": True}, "headers": headers()},
    "a float id": {"body": {**ADD, "id": 1.0}, "headers": headers()},
    "no tool name": {
        "body": {**ADD, "params": {"arguments": {}, "_meta": META}},
        "headers": headers(**{"mcp-name": None}),
    },
    "a tool name that is a number": {
        "body": {**ADD, "params": {"name": 7, "_meta": META}},
        "headers": headers(**{"mcp-name": "7"}),
    },
    "arguments that are a list": {
        "body": {**ADD, "params": {"name": "add", "arguments": [1, 2], "_meta": META}},
        "headers": headers(),
    },
    "a malformed client info": {
        "body": with_meta(ADD, "io.modelcontextprotocol/clientInfo", "me"),
        "headers": headers(),
    },
    "malformed capabilities": {
        "body": with_meta(ADD, "io.modelcontextprotocol/clientCapabilities", []),
        "headers": headers(),
    },
    "a progress token": {"body": with_meta(ADD, "progressToken", 7), "headers": headers()},
    "a request state that is a number": {
        "body": {**ADD, "params": {**ADD["params"], "requestState": 7}},
        "headers": headers(),
    },
    "input responses that are not answers": {
        "body": {**ADD, "params": {**ADD["params"], "inputResponses": {"x": 1}}},
        "headers": headers(),
    },
    "a task": {"body": {**ADD, "params": {**ADD["params"], "task": 1}}, "headers": headers()},
    "a mismatched Mcp-Param header": {
        "body": call("routed", {"region": "us"}),
        "headers": headers(**{"mcp-name": "routed", "mcp-param-region": "eu"}),
    },
    "a matching Mcp-Param header": {
        "body": call("routed", {"region": "us"}),
        "headers": headers(**{"mcp-name": "routed", "mcp-param-region": "us"}),
    },
    "a session id": {"body": ADD, "headers": headers(**{"mcp-session-id": "abc"})},
    "tools/list": {
        "body": {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}},
        "headers": headers(**{"mcp-method": "tools/list", "mcp-name": None}),
    },
    "a body over the limit": {
        "raw": json.dumps(call("echo", {"text": "x" * (4 * 1024 * 1024)})).encode(),
        "headers": headers(**{"mcp-name": "echo"}),
    },
}


@pytest.mark.parametrize("case", list(REFUSED))
async def test_anything_else_goes_to_the_sdk_and_gets_its_answer(twin: Twin, case: str) -> None:
    request = REFUSED[case]
    fast, sdk, served = await both(
        twin, request.get("body"), request["headers"], raw=request.get("raw")
    )
    assert served == 0
    assert fast == sdk


async def test_a_call_with_a_cache_hint_or_a_middleware_goes_to_the_sdk(twin: Twin) -> None:
    seen: list[str] = []

    async def record(ctx: Any, call_next: Any) -> Any:
        seen.append(ctx.method)
        return await call_next(ctx)

    twin.surface.server.middleware.append(record)  # as the SDK's tracing middleware is
    try:
        fast, sdk, served = await both(twin, ADD, headers())
    finally:
        twin.surface.server.middleware.remove(record)
    assert served == 0
    assert fast == sdk
    assert seen == ["tools/call", "tools/call"]


@pytest.mark.parametrize(
    "failure",
    [RuntimeError("a bug"), MCPError(code=INVALID_PARAMS, message="no such thing", data={"x": 1})],
    ids=["a bug", "an MCP error"],
)
async def test_a_call_that_raises_is_answered_as_the_sdk_answers_it(
    twin: Twin, monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise failure

    monkeypatch.setattr(twin.surface, "call", broken)
    fast, sdk, served = await both(twin, ADD, headers())
    assert served == 1
    assert fast == sdk
    assert json.loads(fast.body)["error"]["code"] == (
        INVALID_PARAMS if isinstance(failure, MCPError) else INTERNAL_ERROR
    )


async def test_a_result_the_protocol_refuses_is_answered_as_the_sdk_answers_it(
    twin: Twin, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(method: str, version: str, data: Any) -> Any:
        return types.CallToolResult.model_validate({"content": "not a list"})

    monkeypatch.setattr(_methods, "serialize_server_result", refuse)
    fast, sdk, served = await both(twin, ADD, headers())
    assert served == 1
    assert fast == sdk
    assert json.loads(fast.body)["error"] == {
        "code": INTERNAL_ERROR,
        "message": "Handler returned an invalid result",
    }


async def test_a_catalog_that_cannot_be_built_leaves_the_call_to_the_sdk(
    twin: Twin, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(service: Any) -> Any:
        raise RuntimeError("a schema the MCP format cannot show")

    monkeypatch.setattr(Catalog, "of", staticmethod(broken))
    twin.surface._catalog = None
    fast, sdk, served = await both(twin, ADD, headers())
    assert served == 0
    assert fast == sdk
    assert json.loads(fast.body)["result"]["structuredContent"] == {"result": 3}


CLIENT_CASES = {
    "plain": ({}, 1),
    "a progress token": ({"progress_callback": "yes"}, 0),
    "a log level": ({"log_level": "debug"}, 0),
}


@pytest.mark.parametrize("case", list(CLIENT_CASES))
async def test_the_official_client_gets_the_same_results(twin: Twin, case: str) -> None:
    options, expected = CLIENT_CASES[case]
    client_options: dict[str, Any] = {"mode": "2026-07-28"}
    call_options: dict[str, Any] = {}
    if "log_level" in options:
        client_options["log_level"] = options["log_level"]
    if "progress_callback" in options:

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            return None

        call_options["progress_callback"] = progress
    results = {}
    for label in ("fast", "sdk"):
        url = twin.fast if label == "fast" else twin.sdk
        async with Client(url, **client_options) as client:
            before = twin.layer.served
            summed = await client.call_tool("add", {"a": 2, "b": 3}, **call_options)
            failed = await client.call_tool("fails", {}, **call_options)
            missing = await client.call_tool("nope", {}, **call_options)
            listed = await client.list_tools()
            results[label] = (summed, failed, missing, [tool.name for tool in listed.tools])
            count = twin.layer.served - before
        if label == "fast":
            assert count == 3 * expected
    assert results["fast"] == results["sdk"]
    summed, failed, missing, names = results["fast"]
    assert summed.structured_content == {"result": 5}
    assert failed.is_error is True
    assert "the disk is on fire" in "".join(getattr(block, "text", "") for block in failed.content)
    assert missing.is_error is True
    assert "add" in names


class Elicitor:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        self.asked.append(params.message)
        return ACCEPT


@pytest.mark.parametrize(("ask", "answer"), [("fast", "sdk"), ("sdk", "fast"), ("fast", "fast")])
async def test_an_approval_round_trip_crosses_the_two_paths(
    twin: Twin, workspace: Path, ask: str, answer: str
) -> None:
    urls = {"fast": twin.fast, "sdk": twin.sdk}
    args = {"path": f"{ask}-{answer}.txt", "content": "approved"}
    before = twin.layer.served
    async with Client(urls[ask], mode="2026-07-28", elicitation_callback=Elicitor()) as client:
        asked = await client.session.call_tool("write_text_file", args, allow_input_required=True)
    assert isinstance(asked, types.InputRequiredResult), asked
    assert set(asked.input_requests or {}) == {APPROVAL_KEY}
    assert not (workspace / args["path"]).exists()
    async with Client(urls[answer], mode="2026-07-28", elicitation_callback=Elicitor()) as client:
        done = await client.session.call_tool(
            "write_text_file",
            args,
            input_responses={APPROVAL_KEY: ACCEPT},
            request_state=asked.request_state,
        )
        replayed = await client.session.call_tool(
            "write_text_file",
            args,
            input_responses={APPROVAL_KEY: ACCEPT},
            request_state=asked.request_state,
        )
    assert isinstance(done, types.CallToolResult)
    assert done.is_error is False
    assert (workspace / args["path"]).read_text() == "approved"
    assert isinstance(replayed, types.CallToolResult)
    assert replayed.is_error is True  # a state opens once, on either path
    assert twin.layer.served - before == [ask, answer, answer].count("fast")


async def test_the_first_round_of_an_approval_has_the_sdks_shape(twin: Twin) -> None:
    capabilities: dict[str, Any] = {"elicitation": {"form": {}}}
    meta = {**META, "io.modelcontextprotocol/clientCapabilities": capabilities}
    body = call("write_text_file", {"path": "b.txt", "content": "B"})
    body["params"]["_meta"] = meta
    fast, sdk, served = await both(twin, body, name="write_text_file")
    assert served == 1
    assert (
        (fast.status, fast.content_type)
        == (sdk.status, sdk.content_type)
        == (
            200,
            "application/json",
        )
    )
    shapes = []
    for answer in (fast, sdk):
        result = json.loads(answer.body)["result"]
        assert result["resultType"] == "input_required"
        assert result.pop("requestState").startswith("v1.")  # sealed with a fresh nonce
        shapes.append(result)
    assert shapes[0] == shapes[1]


@contextlib.contextmanager
def ping_every(seconds: float) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(answer_module, "PING_INTERVAL", seconds)
        patch.setattr(_streamable_http_modern, "_SSE_PING_INTERVAL", seconds)
        yield


async def stream(url: str, twin: Twin, gate: Gate) -> tuple[int, str | None, list[bytes]]:
    """Call ``wait``; release it once the first ping came; the status, type and chunks."""
    chunks: list[bytes] = []
    async with (
        httpx2.AsyncClient(timeout=30) as client,
        client.stream(
            "POST",
            url,
            content=json.dumps(call("wait", {})),
            headers=headers(**{"mcp-name": "wait"}),
        ) as response,
    ):
        async for chunk in response.aiter_raw():
            chunks.append(chunk)
            if b": ping" in b"".join(chunks):
                gate.release.set()
    return response.status_code, response.headers.get("content-type"), chunks


def events(chunks: list[bytes]) -> list[str]:
    frames = b"".join(chunks).decode().split("\r\n\r\n")
    return [frame for frame in frames if frame and not frame.startswith(": ping")]


async def test_a_long_call_becomes_an_event_stream_as_in_the_sdk(twin: Twin) -> None:
    answers = {}
    with ping_every(0.2):
        for label, url in (("fast", twin.fast), ("sdk", twin.sdk)):
            before = twin.layer.served
            with anyio.fail_after(30):
                status, kind, chunks = await stream(url, twin, twin.reset())
            assert b"".join(chunks).startswith(b": ping\r\n\r\n")
            answers[label] = (status, kind, events(chunks))
            assert twin.layer.served - before == (label == "fast")
    assert answers["fast"] == answers["sdk"]
    status, kind, found = answers["fast"]
    assert (status, kind) == (200, "text/event-stream")
    assert len(found) == 1
    data = json.loads(found[0].removeprefix("event: message\r\ndata: "))
    assert data["result"]["structuredContent"] == {"result": "released"}


@pytest.mark.parametrize("label", ["fast", "sdk"])
async def test_a_client_that_disconnects_cancels_its_call(twin: Twin, label: str) -> None:
    url = httpx2.URL(twin.fast if label == "fast" else twin.sdk)
    gate = twin.reset()
    before = twin.layer.served
    body = json.dumps(call("wait", {})).encode()
    lines = [
        "POST /mcp HTTP/1.1",
        f"host: 127.0.0.1:{url.port}",
        *(f"{name}: {value}" for name, value in headers(**{"mcp-name": "wait"}).items()),
        f"content-length: {len(body)}",
    ]
    with anyio.fail_after(30):
        connection = await anyio.connect_tcp("127.0.0.1", url.port or 80)
        await connection.send(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        await gate.started.wait()
        await connection.aclose()
        await gate.cancelled.wait()
    assert not gate.release.is_set()
    assert twin.layer.served - before == (label == "fast")
    after = await post(str(url), ADD, headers())  # and the server goes on serving
    assert after.status == 200
    assert json.loads(after.body)["result"]["structuredContent"] == {"result": 3}


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_on_trio_the_sdk_answers_everything(workspace: Path, backend: str) -> None:
    async def main() -> tuple[int, Any, int]:
        async with Host(CONFIG) as host:
            surface = McpSurface(host.ctx)
            app = surface.http_app("127.0.0.1")
            layer = fast_layer(app)
            started, stop = anyio.Event(), anyio.Event()
            async with anyio.create_task_group() as group:
                group.start_soon(lifespan, app, started, stop)
                await started.wait()
                transport = httpx2.ASGITransport(app=app)
                async with httpx2.AsyncClient(
                    transport=transport, base_url="http://127.0.0.1:9"
                ) as client:
                    response = await client.post("/mcp", json=ADD, headers=headers())
                stop.set()
            return response.status_code, response.json(), layer.served

    status, answer, served = anyio.run(main, backend=backend)
    assert status == 200
    assert answer["result"]["structuredContent"] == {"result": 3}
    assert served == (backend == "asyncio")


async def lifespan(app: Any, started: anyio.Event, stop: anyio.Event) -> None:
    """Run an ASGI app's lifespan until ``stop`` (the SDK's session manager lives in it)."""
    messages = [{"type": "lifespan.startup"}]

    async def receive() -> dict[str, str]:
        if messages:
            return messages.pop(0)
        await stop.wait()
        return {"type": "lifespan.shutdown"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "lifespan.startup.complete":
            started.set()

    await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)
