"""The HTTP layers harness serves with, in process: the body timeout on both of anyio's
backends, and one socket write per event-loop step over a real loopback connection."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Generator
from typing import Any

import anyio
import pytest

from harness.mcp.http.joined_writes import JoinedWrites
from harness.mcp.http.limits import BodyTimeout

pytestmark = pytest.mark.anyio
SCOPE = {"type": "http", "method": "POST", "path": "/mcp", "headers": []}


class Forever:
    """An awaitable that is not a coroutine, and never completes."""

    def __await__(self) -> Generator[Any, None, None]:
        return anyio.sleep_forever().__await__()


async def answer(app: Any, receive: Any) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    with anyio.fail_after(10):
        await app(dict(SCOPE), receive, send)
    return sent


@pytest.mark.parametrize("kind", ["coroutine", "awaitable"])
async def test_a_body_that_does_not_come_is_a_408(kind: str) -> None:
    reached: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope)

    async def never() -> dict[str, Any]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    receive = never if kind == "coroutine" else Forever
    sent = await answer(BodyTimeout(app, 0.05), receive)
    assert reached == []
    assert sent[0]["status"] == 408
    assert sent[1]["body"] == b"the request body did not arrive in time"


async def test_a_body_in_parts_reaches_the_app_whole_and_in_order() -> None:
    parts: list[dict[str, Any]] = [
        {"type": "http.request", "body": b"one ", "more_body": True},
        {"type": "http.request", "body": b"two", "more_body": False},
        {"type": "http.disconnect"},
    ]
    slow = anyio.Event()

    async def receive() -> dict[str, Any]:
        if len(parts) == 2:  # the second part waits a little: the deadline is armed
            with anyio.move_on_after(0.01):
                await slow.wait()
        return parts.pop(0)

    got: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        for _ in range(3):
            got.append(await receive())
        await send({"type": "http.response.start", "status": 200, "headers": []})

    sent = await answer(BodyTimeout(app, 5), receive)
    assert [message.get("body") for message in got] == [b"one ", b"two", None]
    assert got[-1]["type"] == "http.disconnect"
    assert sent[0]["status"] == 200


class Counted(asyncio.Protocol):
    """The server side of a real loopback connection; its transport's writes are counted."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.writes: list[bytes] = []
        self.made = asyncio.Event()

    def connection_made(self, transport: Any) -> None:
        real_write = transport.write

        def write(data: bytes) -> None:
            self.writes.append(bytes(data))
            real_write(data)

        transport.write = write
        self.transport = transport
        self.made.set()


ASYNCIO_ONLY = pytest.mark.parametrize("anyio_backend", ["asyncio"])  # transports are asyncio's


async def connected() -> tuple[Counted, JoinedWrites, socket.socket, asyncio.Server]:
    loop = asyncio.get_running_loop()
    protocol = Counted()
    server = await loop.create_server(lambda: protocol, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port), timeout=10)
    await asyncio.wait_for(protocol.made.wait(), 10)
    assert protocol.transport is not None
    return protocol, JoinedWrites(protocol.transport, loop), client, server


def read_all(client: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := client.recv(65536):
            data += chunk
    except ConnectionResetError:  # an aborted connection
        pass
    return data


@ASYNCIO_ONLY
async def test_writes_in_one_step_go_out_as_one() -> None:
    protocol, joined, client, server = await connected()
    joined.write(b"HTTP/1.1 200 OK\r\n\r\n")
    joined.write(memoryview(b"body"))
    joined.write(b"")
    assert protocol.writes == []
    assert joined.get_write_buffer_size() == len(b"HTTP/1.1 200 OK\r\n\r\nbody")
    await asyncio.sleep(0)  # the end of this step
    assert protocol.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody"]
    joined.writelines([b"event: a\r\n\r\n"])
    await asyncio.sleep(0)
    joined.write(b"event: b\r\n\r\n")  # a later step: its own write
    joined.close()  # sends what is pending first
    assert protocol.writes[1:] == [b"event: a\r\n\r\n", b"event: b\r\n\r\n"]
    data = await anyio.to_thread.run_sync(read_all, client)
    assert data == b"HTTP/1.1 200 OK\r\n\r\nbodyevent: a\r\n\r\nevent: b\r\n\r\n"
    client.close()
    server.close()


@ASYNCIO_ONLY
async def test_an_abort_drops_what_is_pending() -> None:
    protocol, joined, client, server = await connected()
    joined.write(b"never sent")
    assert joined.is_closing() is False  # the rest is the real transport's
    joined.abort()
    await asyncio.sleep(0)
    assert protocol.writes == []
    assert await anyio.to_thread.run_sync(read_all, client) == b""
    client.close()
    server.close()
