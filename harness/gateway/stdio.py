"""The stdio transport to an upstream server, with the size caps applied while reading.

The SDK's ``stdio_client`` joins each chunk of the server's stdout to the line read so far
(``buffer + chunk``), so one 50 MB line costs gigabytes of copying on the event loop before
it is parsed whole; it has no cap, and no place to put one. This transport is harness's own
(the SDK's parts it uses are public: the safe environment, the message adapter): it reads
bytes, finds newlines with ``bytes.find``, and once a line passes the cap of the request it
answers (:mod:`.caps`) it keeps nothing more of it, fails that request at once with a
JSON-RPC error, and skips the rest as it streams by. The request is known from the ``id``:
at the start of the line (as Python's SDK writes it) the call fails as soon as the cap is
passed; at its end (as TypeScript's writes it) when the line ends. An oversized message
that answers no pending request is dropped when it is a notification and ends the
connection otherwise (fail closed: no request waits for its timeout). A
``tools/list_changed`` line is recognised without the parse and hand-over every other
message costs, and handed to the connection's coalesced re-list directly. A line that is not
JSON-RPC harness can read, and that answers a pending request, fails that request at once.

The process runs in its own session; closing stdin, then SIGTERM and SIGKILL to its group,
each after 2 s, end it (MCP's shutdown sequence).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pydantic
from anyio.abc import Process
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from .caps import CUT_CODE, Caps, cut_message

UNREADABLE_CODE = -32043
"""The JSON-RPC error code of an answer harness could not parse (harness's own): a request
it answers fails at once, saying why (a number of more than 4300 digits, say)."""
GRACE = 2.0
"""Seconds the server gets after its stdin closes, and again after SIGTERM."""
CHUNK = 65536
SKIP_CHUNK = 1 << 20
_HEAD_ID = re.compile(
    rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d+|"[^"\\]{0,200}")'
)
_TAIL_ID = re.compile(
    rb'"id"\s*:\s*(-?\d+|"[^"\\]{0,200}")\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$'
)
_METHOD = re.compile(rb'"method"\s*:')
_LIST_CHANGED = b'"notifications/tools/list_changed"'


class Reader:
    """Splits the server's stdout into messages, each at most the cap of what it answers."""

    def __init__(
        self,
        caps: Caps,
        send: Any,
        lost: Callable[[str], None],
        changed: Callable[[], None],
        logger: logging.Logger,
    ) -> None:
        self.caps = caps
        self.send = send
        self.lost = lost
        self.changed = changed
        """Called for each ``tools/list_changed`` (which is not passed on: see the module)."""
        self.logger = logger
        self.pending: dict[Any, str] = {}
        """Request id → method, for the requests sent and not answered yet."""
        self.cut = 0
        """Messages harness stopped reading."""
        self._line = bytearray()
        self._skipping = False
        self._skipped = 0
        self._answered: Any = None
        self._tail = b""
        self._head = b""
        self._gone = False

    @property
    def chunk(self) -> int:
        """How much to read next: more while skipping (fewer wake-ups for a flood of bytes)."""
        return SKIP_CHUNK if self._skipping else CHUNK

    async def feed(self, chunk: bytes) -> bool:
        """Take one chunk of stdout; False once the connection must end."""
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            start = len(chunk) if end < 0 else end + 1
            if self._skipping:
                self._skipped += len(piece)
                self._tail = (self._tail + piece[-512:])[-512:]
                if end >= 0 and not await self._skipped_line():
                    return False
                continue
            self._line += piece
            if end < 0:
                if len(self._line) > self._limit(bytes(self._line[:512])):
                    await self._start_skipping()
                continue
            line = bytes(self._line)
            self._line.clear()
            if not await self._line_done(line):
                return False
        return True

    def _limit(self, head: bytes) -> int:
        found = _id(_HEAD_ID.match(head))
        if found in self.pending:
            return self.caps.of(self.pending[found])[0]
        if "tools/list" in self.pending.values():
            return self.caps.largest
        return self.caps.result

    async def _line_done(self, line: bytes) -> bool:
        if not line.strip():
            return True
        if len(line) < 200 and _LIST_CHANGED in line and _is_list_changed(line):
            self.changed()  # a flood costs a bytes search each, not a parse and a hand-over
            return True
        if len(line) > self.caps.result:
            found = _id(_HEAD_ID.match(line[:512]))
            if found is None:
                found = _id(_TAIL_ID.search(line[-512:]))
            limit = self.caps.of(self.pending.get(found))[0]
            if len(line) > limit:
                self._head, self._tail, self._skipped = line[:512], line[-512:], len(line)
                return await self._oversized(found, finished=True)
        try:
            item: SessionMessage | Exception = SessionMessage(
                types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            )
        except ValueError as exc:
            found = _id(_HEAD_ID.match(line[:512]))
            if found is None:
                found = _id(_TAIL_ID.search(line[-512:]))
            if found in self.pending:  # its request fails now, not at its timeout
                await self._unreadable(found, exc)
                return True
            item = exc
        if isinstance(item, SessionMessage):
            message = item.message
            if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                self.pending.pop(message.id, None)
        await self._deliver(item)
        return True

    async def _start_skipping(self) -> None:
        head = bytes(self._line[:512])
        self._skipping, self._skipped = True, len(self._line)
        self._head, self._tail = head, bytes(self._line[-512:])
        self._line = bytearray()
        self.cut += 1
        found = _id(_HEAD_ID.match(head))
        self._answered = None
        if found in self.pending:  # fail the request now; the rest streams by unread
            self._answered = found
            await self._fail(found)

    async def _skipped_line(self) -> bool:
        self._skipping = False
        if self._answered is not None:
            self._answered = None
            return True
        found = _id(_TAIL_ID.search(self._tail))
        return await self._oversized(found, finished=False)

    async def _oversized(self, found: Any, finished: bool) -> bool:
        if finished:
            self.cut += 1
        if found in self.pending:
            await self._fail(found)
            return True
        size = self._skipped
        if _METHOD.search(self._head) and found is None:
            self.logger.warning("dropped a %d-byte notification from the server (too large)", size)
            return True
        self.lost(
            f"the server sent a {size}-byte message (more than max_result_bytes, "
            f"{self.caps.result}) that answers no request harness sent"
        )
        return False

    async def _fail(self, found: Any) -> None:
        method = self.pending.pop(found)
        error = types.ErrorData(code=CUT_CODE, message=cut_message(method, self.caps))
        await self._deliver(
            SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=found, error=error))
        )

    async def _unreadable(self, found: Any, exc: ValueError) -> None:
        method = self.pending.pop(found)
        errors = exc.errors() if isinstance(exc, pydantic.ValidationError) else []
        why = str(errors[0]["msg"]) if errors else str(exc).splitlines()[0]
        message = f"the server's answer to {method} is not JSON harness can read ({why})"
        error = types.ErrorData(code=UNREADABLE_CODE, message=message)
        await self._deliver(
            SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=found, error=error))
        )

    async def _deliver(self, item: SessionMessage | Exception) -> None:
        if self._gone:
            return
        try:
            await self.send.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._gone = True  # the session ended: the rest is drained unread


def _is_list_changed(line: bytes) -> bool:
    try:
        message = json.loads(line)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("method") == _LIST_CHANGED.decode().strip('"')


def _id(match: re.Match[bytes] | None) -> Any:
    if match is None:
        return None
    value = json.loads(match.group(1))
    return value if isinstance(value, int | str) else None


@asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    env: dict[str, str],
    cwd: Path | None,
    stderr: int,
    caps: Caps,
    lost: Callable[[str], None],
    changed: Callable[[], None],
    logger: logging.Logger,
) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server; yield the (read, write) streams an SDK ``Client`` takes."""
    process = await anyio.open_process(
        [command, *args],
        env=get_default_environment() | env,
        stderr=stderr,
        cwd=cwd,
        start_new_session=True,
    )
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    reader = Reader(caps, read_send, lost, changed, logger)

    async def read() -> None:
        assert process.stdout is not None
        async with read_send:
            with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, OSError):
                while await reader.feed(await process.stdout.receive(reader.chunk)):
                    pass
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, OSError):
            while True:  # drained after an end, so a server blocked on a write can exit
                await process.stdout.receive(CHUNK)

    async def write() -> None:
        assert process.stdin is not None
        try:
            async with write_receive:
                async for item in write_receive:
                    message = item.message
                    if isinstance(message, types.JSONRPCRequest):
                        reader.pending[message.id] = message.method
                    elif (
                        isinstance(message, types.JSONRPCNotification)
                        and message.method == "notifications/cancelled"
                    ):
                        reader.pending.pop((message.params or {}).get("requestId"), None)
                    data = message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()  # the server stopped reading: end the session

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read)
            group.start_soon(write)
            try:
                yield read_receive, write_send
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process)
                    read_receive.close()
                    write_send.close()
                group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(GRACE):
            await process.aclose()


async def _stop(process: Process) -> None:
    """Close stdin; after GRACE, SIGTERM the group; after GRACE again, SIGKILL it."""
    if process.stdin is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
        with anyio.move_on_after(GRACE):
            await process.wait()
        if process.returncode is not None:
            return
