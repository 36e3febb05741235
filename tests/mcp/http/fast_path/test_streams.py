"""The fast path through the official client, approvals across the two paths, long calls
as event streams, disconnects, and other event loops than asyncio."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.server import _streamable_http_modern
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from harness import Host
from harness.mcp import APPROVAL_KEY, McpSurface
from harness.mcp.http import fast_answer as answer_module

from ....helpers import Elicitor
from .twin import ACCEPT, ADD, META, Gate, Twin, both, call, fast_layer, headers, post

pytestmark = pytest.mark.anyio


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
        with pytest.raises(MCPError) as replayed:  # a state opens once, on either path
            await client.session.call_tool(
                "write_text_file",
                args,
                input_responses={APPROVAL_KEY: ACCEPT},
                request_state=asked.request_state,
            )
    assert isinstance(done, types.CallToolResult)
    assert done.is_error is False
    assert (workspace / args["path"]).read_text() == "approved"
    assert replayed.value.code == INVALID_PARAMS
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
def test_on_trio_the_sdk_answers_everything(config: Path, workspace: Path, backend: str) -> None:
    async def main() -> tuple[int, Any, int]:
        async with Host(config) as host:
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
