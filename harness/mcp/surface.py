"""Serving the registry over MCP, with the official SDK's low-level server.

``tools/list`` is the registry in the MCP format; ``tools/call`` runs the full pipeline. A
success returns the rendered content and ``structuredContent`` (the canonical value, wrapped
as ``{"result": value}`` when it is not an object); a failure — an unknown tool included —
is a result with ``isError: true`` and the model-facing message, never a JSON-RPC error.

Resources, prompts and completions are served by :mod:`.primitives`. Registry changes are
announced (debounced, :mod:`.changes`) with ``notifications/*/list_changed`` on
handshake-era connections and as events on 2026-07-28 ``subscriptions/listen`` streams, and
resource updates go to the clients subscribed to them. Each call gets a
:class:`~harness.tools.call_context.CallContext` whose client is the request's
(:class:`~.client.McpClient`): a tool's questions, sampling and roots requests, and the
policy's ``ask``, go to the client as requests on handshake-era connections and as
``InputRequiredResult`` rounds on 2026-07-28 ones (:mod:`.rounds`); its progress and logs
as notifications. A client without elicitation has its approvals answered by a console page
with its event stream open, or denied at once, saying how to approve. A client's
cancellation cancels the running call.
"""

from __future__ import annotations

import io
import weakref
from collections.abc import Sequence
from typing import Any, BinaryIO, cast

import anyio
import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .. import __version__
from ..context import Context
from ..errors import AccessDenied, HarnessError
from ..service import unwrap
from ..tools.seal import CallSeal
from ..tools.service import ToolsService
from . import log_messages
from .auth import TokenThrottle
from .changes import Changes
from .client import CallParams, McpClient
from .hosts import check_bind
from .http.fast_path import FastCalls, sdk_mirrored
from .http.limits import HttpLimits
from .http.transport import serve_app, streamable_app
from .paging import page
from .primitives import DENIED, Primitives
from .rounds import Rounds
from .tasks import McpTasks
from .tool_calls import ToolCalls
from .tools_list import Catalog


class _Server(Server[Any]):
    """The low-level server, announcing ``listChanged`` for tools, resources and prompts on
    handshake-era connections."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options
            or NotificationOptions(
                tools_changed=True, resources_changed=True, prompts_changed=True
            ),
            experimental_capabilities,
            extensions,
        )


class McpSurface:
    """The tools of a root context, served over MCP."""

    def __init__(self, root: Context, name: str = "harness", search: bool = False) -> None:
        self.root = root
        self.search = search
        """Serve ``search_tools``, ``call_tool`` and the kept tools, not every tool (also
        when the tools service's ``search.mcp`` is on)."""
        self.bus = InMemorySubscriptionBus()
        self.connections: weakref.WeakSet[Any] = weakref.WeakSet()
        self._told: weakref.WeakSet[Any] = weakref.WeakSet()
        """Handshake-era connections already sent the host's problems."""
        self.levels = log_messages.LogLevels()
        self.changes = Changes(root, self.bus, self.connections)
        self.seal = CallSeal()
        self.rounds = Rounds(self.seal)
        self.tasks = McpTasks(root)
        self.calls = ToolCalls(
            root, self.rounds, self.levels, self._remember, self.catalog, self.tasks
        )
        self.primitives = Primitives(root, self.client_of, self.rounds)
        self._listener = ListenHandler(self.bus)
        self._catalog: Catalog | None = None
        """The tools/list answer and each tool's input schema, until the registry changes."""
        self.server = _Server(
            name,
            version=__version__,
            icons=server_icons(root),
            get_tool_input_schema=self._input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe,
            on_subscriptions_listen=self._listen,
            **self.primitives.handlers(),
        )
        if not tracing_installed():
            # The SDK wraps every request in an OpenTelemetry span, a fifth of a tools/call's
            # server time in `python -m bench mcp_http`, and a no-op until a tracer provider
            # is installed: drop it then (the SDK documents removing it from this list).
            self.server.middleware = [
                layer
                for layer in self.server.middleware
                if type(layer).__name__ != "OpenTelemetryMiddleware"
            ]
        self.tasks.install(self.server)
        # logging declared (problems go out as log entries) and logging/setLevel honoured
        self.levels.attach(self.server, connection_of)
        # a handshake-era client hears of changes from its handshake on, not from its
        # first request
        self.server.add_notification_handler(
            "notifications/initialized", types.NotificationParams, self._initialized
        )

    @property
    def tools(self) -> ToolsService:
        """The tools service of the root."""
        service: ToolsService = self.root.tools
        return service

    def catalog(self) -> Catalog:
        """The registry in the MCP format, built once per registry change."""
        tools = unwrap(self.root.tools)
        catalog = self._catalog
        if catalog is None or catalog.service is not tools:
            searching = self.search or tools.config.search.mcp
            catalog = self._catalog = Catalog.of(tools, searching)
        return catalog

    def attach(self) -> None:
        """Listen for registry changes and resource updates (approvals go to the client of
        each call)."""
        self.root.on("tools/change", self._changed)
        self.root.on("resources/change", self._resources_changed)
        self.root.on("prompts/change", self._prompts_changed)
        self.root.on("resources/updated", self.changes.updated)
        self.root.on("reload/problems", self._reload_problems)
        if self.search:
            self.root.effect(unwrap(self.root.tools).offer_search)

    # -- handlers --------------------------------------------------------------------------

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await log_messages.reply(ctx, log_messages.current(self.root))
        else:
            connection = self._remember(ctx)
            if connection not in self._told:  # once per connection, on its first listing
                self._told.add(connection)
                found = log_messages.current(self.root)
                await log_messages.reply(ctx, found, self.levels.of(connection))
        return page(self.catalog().listing, "tools", params, self.tools.config.page_size)

    async def _initialized(self, ctx: Any, params: types.NotificationParams) -> None:
        self._remember(ctx)

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        # The SDK checks a call's Mcp-Param headers against this before dispatching it.
        return self.catalog().inputs.get(name)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> Any:
        # Any: a CreateTaskResult is a dict the SDK sends as it is (an extension's
        # resultType), which its handler type does not name
        capabilities = ctx.session.client_capabilities
        return await self.call(str(ctx.request_id), params, capabilities, ctx)

    def client_of(self, request: Any, capabilities: types.ClientCapabilities | None) -> McpClient:
        """The client of one request (see :meth:`.tool_calls.ToolCalls.client_of`)."""
        return self.calls.client_of(request, capabilities)

    async def call(
        self,
        request_id: str,
        params: CallParams,
        capabilities: types.ClientCapabilities | None,
        request: Any = None,
    ) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
        """One ``tools/call``: the SDK's handler and the fast path (:mod:`.http.fast_path`)
        both run this. ``request`` is the SDK's request context (None on the fast path);
        see :meth:`.tool_calls.ToolCalls.run`."""
        return await self.calls.run(request_id, params, self.client_of(request, capabilities))

    # -- notifications ---------------------------------------------------------------------

    def _remember(self, ctx: Any) -> Connection | None:
        # ctx.session is a per-request proxy; notifications outlive the request, so keep
        # the connection behind it (weakly: a closed connection drops out by itself).
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None
        connection = connection_of(ctx.session)
        self.connections.add(connection)
        return connection

    def _changed(self, kind: str, name: str) -> None:
        self._catalog = None
        self.changes.changed("tools")

    def _resources_changed(self, kind: str, key: str) -> None:
        self.primitives.changed("resources")
        self.changes.changed("resources")

    def _prompts_changed(self, kind: str, key: str) -> None:
        self.primitives.changed("prompts")
        self.changes.changed("prompts")

    async def _subscribe(self, ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        try:
            await self.changes.subscribe(connection_of(ctx.session), str(params.uri))
        except AccessDenied as exc:
            raise MCPError(DENIED, str(exc)) from None
        except HarnessError as exc:
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: Any, params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        await self.changes.unsubscribe(connection_of(ctx.session), str(params.uri))
        return types.EmptyResult()

    async def _listen(
        self, ctx: Any, params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """A 2026-07-28 listen stream: the SDK's, its resource URIs counted as subscribers
        while it lasts."""
        uris = list(dict.fromkeys(params.notifications.resource_subscriptions or ()))
        watched: list[str] = []
        try:
            for uri in uris:
                try:
                    await self.changes.watch(uri)
                except AccessDenied as exc:
                    raise MCPError(DENIED, str(exc)) from None
                except HarnessError as exc:
                    raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
                watched.append(uri)
            return await self._listener(ctx, params)
        finally:
            with anyio.CancelScope(shield=True):
                for uri in watched:
                    await self.changes.unwatch(uri)

    def _reload_problems(self, found: list[Any]) -> None:
        if found and not self.root.is_disposed:
            self.root.start_soon(self._tell_problems, list(found))

    async def _tell_problems(self, found: list[Any]) -> None:
        for connection in list(self.connections):
            await log_messages.notify(connection, "warning", found, self.levels.of(connection))

    # -- transports ------------------------------------------------------------------------

    async def serve_stdio(self, wire: BinaryIO | None = None) -> None:
        """Serve over stdin and stdout (or the binary file ``wire``, see
        :func:`harness.cli.serve_host.protocol_stdout`) until the client disconnects."""
        from mcp.server.stdio import stdio_server

        from .stdin_lines import StdinLines, claimed_stdin

        stdout = None
        if wire is not None:
            text = io.TextIOWrapper(wire, encoding="utf-8", newline="\n", write_through=True)
            stdout = anyio.wrap_file(text)
        # stdin read so that a stop (SIGTERM) can cancel the read: the SDK reads it in a
        # thread, which nothing cancels while the client keeps stdin open
        with claimed_stdin() as fd:
            lines = cast("anyio.AsyncFile[str]", StdinLines(fd))
            async with stdio_server(stdin=lines, stdout=stdout) as (read, write):
                await self.server.run(read, write, self.server.create_initialization_options())

    def http_app(
        self,
        host: str,
        token: str | None = None,
        allow_hosts: Sequence[str] = (),
        limits: HttpLimits | None = None,
        fast: bool = True,
        throttle: TokenThrottle | None = None,
    ) -> Any:
        """The streamable HTTP app (path ``/mcp``), see
        :func:`~harness.mcp.http.transport.streamable_app`; with ``fast``, plain 2026-07-28
        calls take the fast path (:mod:`.http.fast_path`) when the installed SDK is one it
        mirrors."""
        wrap = None
        if fast and sdk_mirrored():

            def wrap(app: Any, hosts: list[str]) -> Any:
                return FastCalls(app, self, hosts)

        return streamable_app(self.server, host, token, allow_hosts, limits, wrap, throttle)

    async def serve_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8765,
        token: str | None = None,
        on_ready: Any = None,
        wrap: Any = None,
        allow_hosts: Sequence[str] = (),
        limits: HttpLimits | None = None,
        throttle: TokenThrottle | None = None,
        trusted_proxies: Sequence[str] = (),
    ) -> None:
        """Serve streamable HTTP until cancelled; refuses a public bind without a token.

        ``wrap``, when given, turns the MCP app into the app served (the web console
        mounts itself this way, beside ``/mcp``, sharing ``throttle``: the wrong tokens
        counted per client, :mod:`.auth`). Forwarded headers are believed only from
        ``trusted_proxies`` (:func:`~harness.mcp.http.transport.serve_app`).
        """
        check_bind(host, token)
        limits = limits or HttpLimits()
        app = self.http_app(host, token, allow_hosts, limits, throttle=throttle)
        served = wrap(app) if wrap is not None else app
        await serve_app(served, host, port, token, limits, on_ready, trusted_proxies)


def server_icons(root: Context) -> list[types.Icon] | None:
    """The server's icons, from the tools service's ``server_icons`` (None: none)."""
    icons = unwrap(root.tools).config.server_icons
    return [types.Icon.model_validate(icon) for icon in icons] or None


def tracing_installed() -> bool:
    """Whether an OpenTelemetry tracer provider is installed (spans would go somewhere)."""
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)


def connection_of(session: ServerSession) -> Connection:
    """The connection behind a per-request ``ServerSession``.

    A private attribute of the MCP SDK: handlers get a session made for one request, and
    no public way to its ``Connection``, which outlives the request and is what later
    ``list_changed`` notifications go through (keeping sessions instead would notify a
    connection once per request it made). ``tests/repository/test_private_apis.py`` fails when the
    SDK changes this; here a change fails loudly rather than silently dropping notices.
    """
    connection = getattr(session, "_connection", None)
    if not isinstance(connection, Connection):
        raise HarnessError(
            f"the MCP SDK's ServerSession no longer holds its Connection as _connection "
            f"(got {type(connection).__name__}); harness.mcp.connection_of needs updating"
        )
    return connection
