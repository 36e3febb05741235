"""One connection to an upstream MCP server, through the official SDK's ``Client``.

The connection lives in a background task (the SDK's context managers must be entered and
left in one task). It starts the server (stdio) or reaches it (streamable HTTP), settles the
protocol era by the handshake (:mod:`.handshake`), lists the tools, and then waits: a tool
list change (``notifications/tools/list_changed``, or a 2026-07-28 listen event) re-lists,
the end of the transport (the process exited, the HTTP server went away) ends the
connection with a message saying what happened.

The transport itself (the server process and its stderr, or the HTTP client) is opened by
:mod:`.transport`; what goes wrong is said by :mod:`.failures`. Between the transport and the
SDK session sits :class:`~.watch.WatchedStream`: it notices the end of the stream, turns
``tools/list_changed`` into one coalesced re-list, and passes at most ``max_notifications``
other notifications a second (the rest are dropped and counted).
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import LOG_LEVEL_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .callers import Callers, Progress
from .caps import Caps, cut_reason
from .config import GatewayConfig
from .failures import TooLarge, Unavailable, explain, short, transport_error, unauthorised
from .handshake import LISTEN_WAIT, connect, follow_changes
from .http import CALL_REFUSAL, Refusal
from .primitives import Listed, list_primitives
from .stdio import UNREADABLE_CODE
from .tasks import CreatedTask, TasksExtension
from .tokens import TokenRecord
from .transport import Transport
from .watch import CALLER_CAPABILITIES, CALLER_TASKS, StampedWrites, WatchedStream

LIST_PAGES = 100
"""tools/list pages read at most (a server that paginates forever cannot hang harness)."""
RELIST_INTERVAL = 0.5
"""Seconds between the starts of two re-lists (the first after a quiet spell is at once)."""


def _version() -> str:
    try:
        return version("cordis-harness")
    except PackageNotFoundError:  # running from a source tree without metadata
        return "0"


class Connection:
    """A live (or starting, or ended) connection to one upstream server."""

    def __init__(
        self,
        config: GatewayConfig,
        label: str,
        base_dir: Path,
        logger: logging.Logger,
        entry: str = "",
        tokens: TokenRecord | None = None,
    ) -> None:
        self.config = config
        self.label = label
        self.base_dir = base_dir
        self.logger = logger
        self.ready = anyio.Event()
        """Set once connected and listed, or once the attempt failed (see ``failure``)."""
        self.closed = anyio.Event()
        self.failure: str | None = None
        self.tools: list[types.Tool] = []
        self.client: Client | None = None
        self.protocol: str | None = None
        """The protocol version the handshake settled on (:mod:`.handshake`)."""
        self.on_tools: Callable[[list[types.Tool]], None] | None = None
        self.listed = Listed()
        """The server's resources, templates and prompts (:mod:`.primitives`)."""
        self.on_listed: Callable[[Listed], None] | None = None
        self.on_updated: Callable[[str], None] | None = None
        self.on_lost: Callable[[str], None] | None = None
        self.callers: Callers | None = None
        """Where the server's progress, logs and requests go: the running call's caller."""
        self.dropped = 0
        """Notifications dropped by the flood bound."""
        self.caps = Caps(config.max_result_bytes, config.max_list_bytes)
        self.relists = 0
        """tools/list rounds after the first (each one after a list change)."""
        self._scope = anyio.CancelScope()
        self._wake = anyio.Event()
        self._gone = anyio.Event()
        self._refused: str | None = None
        self._relist = False
        self._lost: str | None = None
        self._stopping = False
        self._transport = Transport(config, base_dir, self.caps, logger, label, entry, tokens)

    # -- lifecycle -------------------------------------------------------------------------

    async def run(self) -> None:
        """Connect, list, then serve re-lists until the transport ends or ``stop``."""
        timeout = self.config.connect_timeout
        try:
            with self._scope:
                self._scope.deadline = anyio.current_time() + timeout
                async with connect(
                    self._watched_transport,
                    self.config.protocol,
                    lambda: bool(self._transport.refusal.status),
                    cache=None,
                    message_handler=self._on_message,
                    elicitation_callback=self._on_elicit,
                    sampling_callback=self._on_sample,
                    list_roots_callback=self._on_roots,
                    logging_callback=self._on_log,
                    client_info=types.Implementation(name="harness", version=_version()),
                    extensions=[TasksExtension()],
                ) as client:
                    self.client = client
                    self.protocol = client.protocol_version
                    async with anyio.create_task_group() as watching:
                        listening = anyio.Event()
                        watching.start_soon(
                            follow_changes,
                            *(client, self.request_relist, listening, self.logger, self.label),
                        )
                        with anyio.move_on_after(LISTEN_WAIT):
                            await listening.wait()
                        self.tools = await self._list_tools(client)
                        self.listed = await list_primitives(client, self.config, self.label)
                        self._scope.deadline = math.inf
                        self.ready.set()
                        await self._serve(client)
                        watching.cancel_scope.cancel()
            if self._scope.cancelled_caught and not self.ready.is_set():
                self.failure = self._with_stderr(
                    f"did not complete the MCP handshake and tools/list within "
                    f"connect_timeout ({timeout:g} s)"
                )
        except Exception as exc:
            if self.config.command is not None:
                # The server's last words may still be in its stderr pipe: read them first.
                await anyio.to_thread.run_sync(self._transport.stderr.done.wait, 5.0)
            why = explain(
                exc, self.config, self._refused, self._transport.refusal, self._transport.entry
            )
            self.failure = self._with_stderr(why)
            self.logger.debug("%s: connection ended", self.label, exc_info=exc)
        finally:
            self.client = None
            was_ready = self.ready.is_set()
            self.ready.set()
            self.closed.set()
            if was_ready and not self._stopping and self.on_lost is not None:
                self.on_lost(self.failure or self._with_stderr("the server closed the connection"))

    async def stop(self) -> None:
        """End the connection (the server process is stopped) and wait, bounded, for it."""
        self._stopping = True
        self._scope.cancel()
        with anyio.move_on_after(10), anyio.CancelScope(shield=True):
            await self.closed.wait()

    async def _serve(self, client: Client) -> None:
        listed = anyio.current_time()
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            if self._lost is not None:
                self.failure = self._with_stderr(self._lost)
                return
            if self._relist:
                # A flood of list changes costs at most one re-list per RELIST_INTERVAL: the
                # notifications meanwhile only leave one pending re-list (the flag).
                wait = listed + RELIST_INTERVAL - anyio.current_time()
                if wait > 0:
                    with anyio.move_on_after(wait):
                        await self._gone.wait()
                    self._wake.set()
                    continue
                self._relist = False
                listed = anyio.current_time()
                self.relists += 1
                try:
                    with anyio.fail_after(self.config.connect_timeout):
                        tools = await self._list_tools(client)
                except Exception as exc:
                    self.logger.warning("%s: re-listing tools failed: %s", self.label, exc)
                    continue
                self.tools = tools
                if self.on_tools is not None:
                    self.on_tools(tools)
                with anyio.move_on_after(self.config.connect_timeout):
                    self.listed = await list_primitives(client, self.config, self.label)
                if self.on_listed is not None:
                    self.on_listed(self.listed)

    async def _list_tools(self, client: Client) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(LIST_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor or len(tools) >= self.config.max_tools:
                break
        return tools[: self.config.max_tools]

    # -- calls -----------------------------------------------------------------------------

    async def call(
        self,
        name: str,
        args: dict[str, Any],
        progress: Progress | None = None,
        *,
        responses: dict[str, Any] | None = None,
        state: str | None = None,
        declared: frozenset[str] | None = None,
        level: str | None = None,
        task: bool = False,
    ) -> types.CallToolResult | types.InputRequiredResult | CreatedTask:
        """Call upstream tool ``name`` (its progress to ``progress``), with the answers and
        state of an input round (:mod:`.rounds`); ``declared`` narrows the capabilities a
        2026-07-28 request says its client has to the caller's, and ``level`` is the least
        severe log it asks for (None: none); ``task`` declares the tasks extension, so the
        server may answer with a task (:mod:`.tasks`). An ``InputRequiredResult`` is
        returned, not answered. Raise :class:`Unavailable` when not connected."""
        client = self.client
        if client is None:
            raise Unavailable(f"{self.label} is not connected: {self.failure or 'starting'}")
        meta: dict[str, Any] = {}
        if declared is not None:
            meta[CALLER_CAPABILITIES] = sorted(declared)
        if level is not None and client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            meta[LOG_LEVEL_META_KEY] = level  # 2026-07-28 logs are asked for per request
        if task:
            meta[CALLER_TASKS] = True
        refused = Refusal()
        mine = CALL_REFUSAL.set(refused)
        try:
            answer = await client.session.call_tool(
                name,
                args,
                progress_callback=progress,
                input_responses=responses,  # the wire's JSON, validated by the SDK
                request_state=state,
                meta=meta or None,  # type: ignore[arg-type]
                allow_input_required=True,
                allow_claimed=task,
            )
            if isinstance(answer, CreatedTask):
                return answer
            assert isinstance(answer, types.CallToolResult | types.InputRequiredResult)
            return answer  # the only claim is CreatedTask's
        except MCPError as exc:
            cut = cut_reason(exc.error.message)
            if cut is not None:
                raise TooLarge(cut) from None
            if exc.code == UNREADABLE_CODE:
                raise Unavailable(f"{self.label}: {exc.error.message}") from None
            met = refused if refused.status else self._transport.refusal
            refusal = unauthorised(met, self.config, self._transport.entry)
            if refusal is not None:
                raise Unavailable(f"{self.label}: {refusal}") from None
            if exc.code == types.CONNECTION_CLOSED:
                await anyio.lowlevel.checkpoint()
                if self._refused is not None:
                    raise Unavailable(f"{self.label}: {self._refused}") from None
                raise Unavailable(
                    f"{self.label} closed the connection while the call was running"
                    + self._transport.stderr.note()
                ) from None
            raise
        finally:
            CALL_REFUSAL.reset(mine)

    # -- the transport ---------------------------------------------------------------------

    @asynccontextmanager
    async def _watched_transport(self) -> AsyncIterator[tuple[Any, Any]]:
        # Each attempt starts afresh: the handshake may open a second transport.
        self._lost = self._refused = None
        self._gone = anyio.Event()
        async with self._transport.open(self.refuse, self.request_relist) as (read, write):
            yield WatchedStream(read, self), StampedWrites(write)

    # -- what the session hands us ---------------------------------------------------------

    def mark_lost(self, why: str) -> None:
        """The transport ended: end the connection with ``why``."""
        if self._lost is None:
            self._lost = why
            self._wake.set()
            self._gone.set()

    def refuse(self, why: str) -> None:
        """The server sent what harness will not read: end the connection with ``why``."""
        self._refused = why
        self.mark_lost(why)

    def request_relist(self) -> None:
        """The server's tool list changed: re-list (coalesced)."""
        self._relist = True
        self._wake.set()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, httpx2.TransportError):
            self.mark_lost(f"the server cannot be reached ({transport_error(message)})")
        elif isinstance(message, Exception):
            self.logger.warning("%s: %s", self.label, message)

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        if self.callers is None or not await self.callers.log(params):
            self.logger.info("%s logs (%s): %s", self.label, params.level, short(params.data))

    async def _on_elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        if self.callers is None:
            return types.ElicitResult(action="decline")
        return await self.callers.elicit(params)

    async def _on_sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        if self.callers is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message="no call is running")
        return await self.callers.sample(params)

    async def _on_roots(
        self, context: ClientRequestContext
    ) -> types.ListRootsResult | types.ErrorData:
        if self.callers is None:
            return types.ListRootsResult(roots=[])
        return await self.callers.roots()

    # -- messages --------------------------------------------------------------------------

    def _with_stderr(self, message: str) -> str:
        return message + self._transport.stderr.note()
