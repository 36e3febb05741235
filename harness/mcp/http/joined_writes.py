"""One socket write per response: what uvicorn writes in one event-loop step goes out at once.

uvicorn writes a response's status line and headers, then its body, as two writes, and
with ``TCP_NODELAY`` each becomes its own ``send`` system call and its own packet: on a
small JSON answer the second call is a third of the server's time. :class:`JoinedWrites`
gathers the writes a connection makes in one step of the event loop and sends them as one,
at the end of that step; closing or aborting the connection keeps their order.
"""

from __future__ import annotations

import asyncio
from typing import Any


class JoinedWrites:
    """A transport whose writes in one loop step become one write to ``transport``."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self.loop = loop
        self.pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self.pending:
            self.loop.call_soon(self.flush)
        self.pending.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def flush(self) -> None:
        """Send what was written since the last flush, as one write."""
        if self.pending:
            data = b"".join(self.pending) if len(self.pending) > 1 else self.pending[0]
            self.pending.clear()
            self.transport.write(data)

    def get_write_buffer_size(self) -> int:
        return self.transport.get_write_buffer_size() + sum(map(len, self.pending))

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def write_eof(self) -> None:
        self.flush()
        self.transport.write_eof()

    def abort(self) -> None:
        self.pending.clear()
        self.transport.abort()

    def __getattr__(self, name: str) -> Any:  # is_closing, get_extra_info, pause_reading...
        return getattr(self.transport, name)


def joined_writes_protocol(base: type[asyncio.Protocol]) -> type[asyncio.Protocol]:
    """``base`` (a uvicorn HTTP protocol) writing through :class:`JoinedWrites`."""
    parent: Any = base

    class Joined(parent):  # type: ignore[misc]
        def connection_made(self, transport: Any) -> None:
            super().connection_made(JoinedWrites(transport, asyncio.get_running_loop()))

    return Joined
