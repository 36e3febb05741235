"""How the fast path (:mod:`.fast_path`) answers one call, on asyncio, as the SDK's transport does.

The SDK runs each 2026-07-28 request beside a task that watches for the client leaving, and
answers with JSON when the call ends within :data:`PING_INTERVAL` seconds; a call still
running then commits the answer to an SSE stream, pinged every interval, that ends with the
result as its one event. A client that disconnects cancels the call and gets nothing.

:func:`answer` does the same at less cost: most calls end on their first step (``add(a, b)``
does), so that step runs at once, and only a call that waits gets the watcher and the ping
timer. The watcher cannot enter a cancel scope around a call already under way (scopes nest
strictly), so it cancels the task as a deadline does (:class:`~harness.tools.deadline.CancelOnce`):
one ``task.cancel()``, undone with ``uncancel()`` once handled, so that any other
cancellation still goes through.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from typing import Any

import anyio

from ...tools.deadline import CancelOnce, Later, start

PING_INTERVAL = 15.0
"""Seconds a call may run before the answer becomes an SSE stream with pings (as the SDK)."""
Reply = tuple[int, dict[str, Any]]
"""An HTTP status and the JSON-RPC message to send with it."""
_SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"x-accel-buffering", b"no"),
]


async def answer(reply: Coroutine[Any, Any, Reply], receive: Any, send: Any) -> None:
    """Run ``reply`` (a call) and send what it gives, unless the client leaves first."""
    stream = _Stream(send)
    loop = asyncio.get_running_loop()
    started = start(reply, None, loop)  # the call's first step, now
    if type(started) is not Later:  # answered on its first step: nothing to watch for
        await stream.finish(started)
        return
    task = asyncio.current_task(loop)
    assert task is not None  # an ASGI request runs in a task
    gone = CancelOnce(task)  # the client's disconnect cancels the request's task once
    watcher = loop.create_task(_watch(receive, gone))
    timer = loop.call_later(PING_INTERVAL, stream.commit, loop)
    try:
        value, _ = await started.rest
    except asyncio.CancelledError:
        if not gone.fired or gone.settle():
            raise  # someone else's cancellation (the server stopping): it goes on
        value = None
    finally:
        timer.cancel()
        watcher.cancel()
    if value is None or gone.fired:  # the client went away (the call may have gone on)
        gone.settle()
        stream.stop()
        return  # nothing to answer, as in the SDK
    await stream.finish(value)


async def _watch(receive: Any, gone: CancelOnce) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    gone.fire()


class _Stream:
    """One answer: JSON when the call ends within the interval, else an SSE stream whose
    pings a task sends until the call ends."""

    def __init__(self, send: Any) -> None:
        self.send = send
        self.pinger: asyncio.Task[None] | None = None

    def commit(self, loop: asyncio.AbstractEventLoop) -> None:
        self.pinger = loop.create_task(self._ping())

    async def _ping(self) -> None:
        await self.send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
        while True:
            ping = {"type": "http.response.body", "body": b": ping\r\n\r\n", "more_body": True}
            await self.send(ping)
            await anyio.sleep(PING_INTERVAL)

    def stop(self) -> None:
        if self.pinger is not None:
            self.pinger.cancel()

    async def finish(self, reply: Reply) -> None:
        status, message = reply
        data = json.dumps(message, separators=(",", ":"))
        if self.pinger is None:
            body = data.encode()
            await self.send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [
                        (b"content-length", str(len(body)).encode()),
                        (b"content-type", b"application/json"),
                    ],
                }
            )
            await self.send({"type": "http.response.body", "body": body})
            return
        self.pinger.cancel()
        with anyio.CancelScope(shield=True):
            await asyncio.gather(self.pinger, return_exceptions=True)
        event = f"event: message\r\ndata: {data}\r\n\r\n".encode()
        await self.send({"type": "http.response.body", "body": event, "more_body": False})
