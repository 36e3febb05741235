"""The MCP client's lines on stdin, read so that a stop can cancel the read.

The MCP SDK's ``stdio_server`` reads stdin in a worker thread, and a thread blocked in
``read()`` cannot be cancelled: ``harness mcp`` would ignore SIGTERM for as long as its
client kept stdin open. Here the process's stdin is claimed the way the SDK claims it (the
wire moves to a private descriptor; file descriptor 0 points at the null device while
serving, so a tool or a child process reads EOF instead of the protocol), and each read first
waits, cancellably, in the event loop until the descriptor is readable, then takes what is
there without blocking. A regular file or the null device on stdin (``harness mcp <
requests.jsonl``) cannot be waited on; it never blocks either, so it is read in a worker
thread as the SDK does.
"""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator

import anyio

__all__ = ["StdinLines", "claimed_stdin"]

CHUNK = 1 << 16
MAX_LINE = 64 * 1024 * 1024
"""A line (one JSON-RPC message) longer than this ends the stream: a client that never sends
a newline must not grow the buffer without bound."""


class StdinLines:
    """Async iterator over the text lines read from file descriptor ``fd`` (UTF-8, undecodable
    bytes replaced), each with its newline; the last one may lack it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        mode = os.fstat(fd).st_mode
        self.pollable = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)
        """Whether the event loop can wait on it: a pipe, a socket or a terminal (not a regular
        file, nor ``/dev/null``)."""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._eof = False

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        while True:
            newline = self._pending.find("\n")
            if newline >= 0:
                line, self._pending = self._pending[: newline + 1], self._pending[newline + 1 :]
                return line
            if len(self._pending) > MAX_LINE:
                self._pending = ""
                raise StopAsyncIteration
            if self._eof:
                line, self._pending = self._pending, ""
                if line:
                    return line
                raise StopAsyncIteration
            data = await self._read()
            if not data:
                self._eof = True
                self._pending += self._decoder.decode(b"", final=True)
            else:
                self._pending += self._decoder.decode(data)

    async def _read(self) -> bytes:
        if not self.pollable:
            return await anyio.to_thread.run_sync(os.read, self.fd, CHUNK)
        await anyio.wait_readable(self.fd)  # cancellable: a stop ends the wait
        return os.read(self.fd, CHUNK)  # readable: returns what is there without blocking


@contextlib.contextmanager
def claimed_stdin() -> Iterator[int]:
    """A private descriptor of the process's stdin; meanwhile descriptor 0 reads the null
    device. Everything is put back on exit."""
    private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        yield private
    finally:
        os.dup2(private, 0)
        os.close(private)
