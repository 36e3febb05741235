"""Opening an upstream's transport: a server process over stdio (a thread reads its stderr
and keeps the last lines, for messages) or a streamable HTTP client, both capped while
reading (:mod:`.caps`)."""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client

from .auth import AuthorisationNeeded, provider
from .caps import Caps
from .config import GatewayConfig
from .failures import Unavailable, short
from .http import Refusal, capping_hook
from .preflight import server_cwd, static_problem
from .stdio import stdio_transport
from .tokens import TokenFile, TokenRecord

STDERR_LINES = 20


class StderrTail:
    """The last lines a server process wrote to its stderr (each also logged at debug)."""

    def __init__(self, logger: logging.Logger, label: str) -> None:
        self.logger = logger
        self.label = label
        self.lines: deque[str] = deque(maxlen=STDERR_LINES)
        self.done = threading.Event()
        """Set once the server's end of the pipe closed and every line was read."""

    async def pump(self, fd: int) -> None:
        """Read ``fd`` until the server's end closes (in a thread, which goes on reading
        after this task is cancelled), then close it."""
        await anyio.to_thread.run_sync(
            _read_lines,
            fd,
            self.lines,
            self.done,
            self.logger,
            self.label,
            abandon_on_cancel=True,
            limiter=anyio.CapacityLimiter(1),
        )

    def note(self) -> str:
        """`` (its stderr ends with: ...)``, or "" when the server wrote nothing there."""
        lines = [line for line in self.lines if line.strip()]
        if not lines:
            return ""
        return f" (its stderr ends with: {short(' | '.join(lines[-3:]))})"


class Transport:
    """How one connection reaches its server (the same for each time it connects)."""

    def __init__(
        self,
        config: GatewayConfig,
        base_dir: Path,
        caps: Caps,
        logger: logging.Logger,
        label: str,
        entry: str = "",
        tokens: TokenRecord | None = None,
    ) -> None:
        self.config = config
        self.entry = entry
        self.base_dir = base_dir
        self.caps = caps
        self.logger = logger
        self.stderr = StderrTail(logger, label)
        """The server process's stderr (stdio): its last lines, for messages."""
        self.refusal = Refusal()
        """The server's last 401 or 403 (HTTP), for messages."""
        record = tokens if tokens is not None else TokenFile.of(base_dir, entry)
        self.oauth = provider(config, entry, record) if config.oauth is not None else None
        """The entry's OAuth provider (HTTP with ``oauth:``), kept across reconnections."""

    @asynccontextmanager
    async def open(
        self, refuse: Callable[[str], None], request_relist: Callable[[], None]
    ) -> AsyncIterator[tuple[Any, Any]]:
        """The ``(read, write)`` streams to the server, open while inside. ``refuse`` and
        ``request_relist`` are what the stdio reader calls on an answer it will not read and
        on ``tools/list_changed``."""
        config = self.config
        async with AsyncExitStack() as stack:
            if config.command is not None:
                read, write = await self._open_stdio(stack, refuse, request_relist)
            else:
                assert config.url is not None
                if self.oauth is not None and not (await self.oauth.tokens.load()).get("tokens"):
                    # Never authorised: no registration or browser step from here, which
                    # each restart attempt would repeat; `harness auth` does both.
                    raise AuthorisationNeeded(self.entry)
                http = await stack.enter_async_context(
                    httpx2.AsyncClient(
                        headers={"accept-encoding": "identity", **config.headers},
                        timeout=httpx2.Timeout(config.connect_timeout, read=300.0),
                        auth=self.oauth,
                        event_hooks={"response": [self.refusal.hook, capping_hook(self.caps)]},
                    )
                )
                read, write = await stack.enter_async_context(
                    streamable_http_client(
                        config.url, http_client=http, max_sse_event_size=self.caps.largest
                    )
                )
            yield read, write

    async def _open_stdio(
        self,
        stack: AsyncExitStack,
        refuse: Callable[[str], None],
        request_relist: Callable[[], None],
    ) -> tuple[Any, Any]:
        config = self.config
        assert config.command is not None
        static = static_problem(config, self.base_dir)
        if static is not None:
            raise Unavailable(static)
        cwd = server_cwd(config, self.base_dir)
        read_fd, write_fd = os.pipe()
        try:
            streams = await stack.enter_async_context(
                stdio_transport(
                    config.command,
                    config.args,
                    config.env,
                    cwd,
                    write_fd,
                    self.caps,
                    refuse,
                    request_relist,
                    self.logger,
                )
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)  # the server holds its own copy
        group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(group.cancel_scope.cancel)
        group.start_soon(self.stderr.pump, read_fd)
        return streams


def _read_lines(
    fd: int, tail: deque[str], done: threading.Event, logger: logging.Logger, label: str
) -> None:
    pending = b""
    try:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()[-4096:]
            for raw in lines:
                line = raw[:2000].decode("utf-8", "replace").rstrip()
                tail.append(line)
                logger.debug("%s stderr: %s", label, line)
        if pending:
            tail.append(pending.decode("utf-8", "replace").rstrip())
    finally:
        os.close(fd)
        done.set()
