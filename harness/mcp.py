"""Serving the registry over MCP, with the official SDK's low-level server.

``tools/list`` is the registry in the MCP format; ``tools/call`` runs the full pipeline. A
success returns the rendered content and ``structuredContent`` (the canonical value, wrapped
as ``{"result": value}`` when it is not an object); a failure — an unknown tool included —
is a result with ``isError: true`` and the model-facing message, never a JSON-RPC error.

Registry changes are announced (debounced) with ``notifications/tools/list_changed`` on
handshake-era connections and as ``ToolsListChanged`` events on 2026-07-28
``subscriptions/listen`` streams. ``ask`` decisions become an elicitation: a server-to-client
request on handshake-era connections, an ``InputRequiredResult`` round trip on 2026-07-28
ones; clients without elicitation get a denial saying approval is needed. A client's
cancellation cancels the running call.
"""

from __future__ import annotations

import contextvars
import hmac
import ipaddress
import json
import logging
import weakref
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from . import __version__
from .context import Context
from .errors import HarnessError
from .service import unwrap
from .tools.calls import ToolCall, ToolResult
from .tools.formats import mcp as mcp_schema
from .tools.service import ToolsService

_log = logging.getLogger("harness.mcp")
NOTIFY_DELAY = 0.05
"""Seconds registry changes are gathered before one list_changed goes out."""
APPROVAL_KEY = "harness/approval"
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve",
            "description": "Run this tool call?",
            "default": True,
        }
    },
}


@dataclass
class _Request:
    """The MCP request a tool call is running for (read by the approval service)."""

    ctx: Any
    params: types.CallToolRequestParams
    pending: types.ElicitRequest | None = None


_current: contextvars.ContextVar[_Request | None] = contextvars.ContextVar(
    "harness_mcp_request", default=None
)


class McpApproval:
    """The ``approval`` service while MCP is served: the client's user decides."""

    async def request(self, call: ToolCall, reason: str) -> bool | str:
        """Ask through elicitation; return True, or why the call is not approved."""
        state = _current.get()
        if state is None:
            return "approval needed, and this call did not come from an MCP client"
        capabilities = state.ctx.session.client_capabilities
        if capabilities is None or capabilities.elicitation is None:
            return "approval needed, and this MCP client cannot ask its user (no elicitation)"
        message = f"Allow the tool call {call.name}({_show(call.args)})? {reason}"
        if state.ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            answer = (state.params.input_responses or {}).get(APPROVAL_KEY)
            if answer is None:
                state.pending = types.ElicitRequest(
                    params=types.ElicitRequestFormParams(
                        message=message, requested_schema=APPROVAL_SCHEMA
                    )
                )
                return "waiting for the client's answer"
        else:
            answer = await state.ctx.session.elicit_form(
                message, APPROVAL_SCHEMA, related_request_id=state.ctx.request_id
            )
        return _accepted(answer) or "the user declined"


def _accepted(answer: Any) -> bool:
    if not isinstance(answer, types.ElicitResult) or answer.action != "accept":
        return False
    return (answer.content or {}).get("approve", True) is not False


def _show(args: Any) -> str:
    if isinstance(args, str):
        return args
    return json.dumps(args, ensure_ascii=False)


class _Server(Server[Any]):
    """The low-level server, announcing ``tools.listChanged`` on handshake-era connections."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


class McpSurface:
    """The tools of a root context, served over MCP."""

    def __init__(self, root: Context, name: str = "harness") -> None:
        self.root = root
        self.bus = InMemorySubscriptionBus()
        self.connections: weakref.WeakSet[Any] = weakref.WeakSet()
        self.notifications = 0
        self._dirty = False
        self._catalog: _Catalog | None = None
        """The tools/list answer and each tool's input schema, until the registry changes."""
        self.server = _Server(
            name,
            version=__version__,
            get_tool_input_schema=self._input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=ListenHandler(self.bus),
        )

    @property
    def tools(self) -> ToolsService:
        """The tools service of the root."""
        service: ToolsService = self.root.tools
        return service

    def catalog(self) -> _Catalog:
        """The registry in the MCP format, built once per registry change."""
        tools = unwrap(self.root.tools)
        catalog = self._catalog
        if catalog is None or catalog.service is not tools:
            catalog = self._catalog = _Catalog.of(tools)
        return catalog

    def attach(self) -> None:
        """Listen for registry changes and provide ``approval`` unless a plugin does."""
        self.root.on("tools/change", self._changed)
        if self.root.get("approval") is None:
            self.root.provide("approval", McpApproval())

    # -- handlers --------------------------------------------------------------------------

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        self._remember(ctx)
        return self.catalog().listing

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        # The SDK checks a call's Mcp-Param headers against this before dispatching it.
        return self.catalog().inputs.get(name)

    async def _call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        self._remember(ctx)
        state = _Request(ctx, params)
        token = _current.set(state)
        try:
            call = ToolCall(str(ctx.request_id), params.name, params.arguments or {})
            result = await unwrap(self.root.tools).execute(call)  # one look-up per call
        finally:
            _current.reset(token)
        if state.pending is not None and result.code == "denied":
            return types.InputRequiredResult(
                input_requests={APPROVAL_KEY: state.pending}, request_state=call.id
            )
        return to_mcp_result(result)

    # -- notifications ---------------------------------------------------------------------

    def _remember(self, ctx: Any) -> None:
        # ctx.session is a per-request proxy; notifications outlive the request, so keep
        # the connection behind it (weakly: a closed connection drops out by itself).
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            connection = getattr(ctx.session, "_connection", None)
            if connection is not None:
                self.connections.add(connection)

    def _changed(self, kind: str, name: str) -> None:
        self._catalog = None
        if not self._dirty and not self.root.is_disposed:
            self._dirty = True
            self.root.start_soon(self._notify)

    async def _notify(self) -> None:
        await anyio.sleep(NOTIFY_DELAY)
        self._dirty = False
        self.notifications += 1
        await self.bus.publish(ToolsListChanged())
        for connection in list(self.connections):
            try:
                await connection.send_tool_list_changed()
            except Exception as exc:  # a closed connection: forget it
                _log.debug("dropping an MCP connection: %s", exc)
                self.connections.discard(connection)

    # -- transports ------------------------------------------------------------------------

    async def serve_stdio(self) -> None:
        """Serve over this process's stdin and stdout until the client disconnects."""
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    def http_app(self, host: str, token: str | None = None) -> Any:
        """The streamable HTTP app (path ``/mcp``), Origin-checked, token-gated when set."""
        hosts = _allowed_hosts(host)
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=hosts,
            allowed_origins=[f"http://{entry}" for entry in hosts]
            + [f"https://{entry}" for entry in hosts],
        )
        app = self.server.streamable_http_app(
            streamable_http_path="/mcp", transport_security=security, host=host
        )
        return BearerGate(app, token) if token else app

    async def serve_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8765,
        token: str | None = None,
        on_ready: Any = None,
    ) -> None:
        """Serve streamable HTTP until cancelled; refuses a public bind without a token."""
        check_bind(host, token)
        import uvicorn

        config = uvicorn.Config(
            self.http_app(host, token),
            host=host,
            port=port,
            log_level="warning",
            lifespan="on",
        )
        server = _quiet_server(config)

        failed: list[str] = []

        async def run_server() -> None:
            # Shielded: on Ctrl-C the server is asked to exit and closes its connections
            # cleanly, instead of being cancelled mid-request.
            with anyio.CancelScope(shield=True):
                try:
                    await server.serve()
                except SystemExit:  # uvicorn exits this way when it cannot bind
                    failed.append("bind")

        async with anyio.create_task_group() as group:
            group.start_soon(run_server)
            try:
                while not server.started:
                    if failed or server.should_exit:
                        raise HarnessError(
                            f"cannot serve MCP on {host}:{port} (is the port in use? try --port)"
                        )
                    await anyio.sleep(0.01)
                sockets = server.servers[0].sockets if server.servers else []
                bound = sockets[0].getsockname()[1] if sockets else port
                if on_ready is not None:
                    on_ready(f"http://{_url_host(host)}:{bound}/mcp")
                await anyio.sleep_forever()
            finally:
                server.should_exit = True


@dataclass(frozen=True)
class _Catalog:
    """One registry state in the MCP format: the tools/list answer and the input schemas."""

    service: ToolsService
    listing: types.ListToolsResult
    inputs: dict[str, dict[str, Any]]

    @classmethod
    def of(cls, service: ToolsService) -> _Catalog:
        tools = []
        inputs: dict[str, dict[str, Any]] = {}
        for name in service.list():
            definition = service.get(name)
            if definition is None:
                continue
            schema = mcp_schema(definition)
            hints = schema.get("annotations") or {}
            inputs[name] = schema["inputSchema"]
            tools.append(
                types.Tool(
                    name=schema["name"],
                    description=schema["description"],
                    input_schema=schema["inputSchema"],
                    output_schema=schema.get("outputSchema"),
                    annotations=types.ToolAnnotations.model_validate(hints) if hints else None,
                )
            )
        return cls(service, types.ListToolsResult(tools=tools), inputs)


def to_mcp_result(result: ToolResult) -> types.CallToolResult:
    """A ToolResult as MCP's CallToolResult."""
    if not result.ok:
        message = result.error or "the tool call failed"
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=message)], is_error=True
        )
    value = result.result
    structured = value if isinstance(value, dict) else {"result": value}
    return types.CallToolResult(
        content=[_block(block) for block in result.content], structured_content=structured
    )


def _block(block: dict[str, Any]) -> Any:
    kind = block.get("type")
    if kind == "image" and isinstance(block.get("data"), str):
        return types.ImageContent(type="image", data=block["data"], mime_type=block["mime_type"])
    if kind == "image" and isinstance(block.get("url"), str):
        return types.ResourceLink(
            type="resource_link",
            uri=block["url"],
            name=block.get("name") or "image",
            mime_type=block.get("mime_type"),
        )
    if kind == "text":
        return types.TextContent(type="text", text=block["text"])
    return types.TextContent(type="text", text=json.dumps(block, ensure_ascii=False))


# -- HTTP security -------------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a bearer token."""
    if not is_loopback(host) and not token:
        raise HarnessError(
            f"refusing to serve MCP on {host}, which other machines can reach, without "
            "--token; pass --token SECRET (clients then send Authorization: Bearer SECRET) "
            "or bind to 127.0.0.1"
        )


def _allowed_hosts(host: str) -> list[str]:
    names = {"127.0.0.1", "localhost", "[::1]"}
    if not is_loopback(host) and host not in ("0.0.0.0", "::"):
        names.add(_url_host(host))
    return sorted(f"{name}:*" for name in names)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


class BearerGate:
    """ASGI middleware: HTTP requests need ``Authorization: Bearer <token>``, else 401."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = b'{"error": "unauthorized: send Authorization: Bearer <token>"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def _quiet_server(config: Any) -> Any:
    """A uvicorn server without its own signal handlers: the harness CLI owns Ctrl-C."""
    import contextlib

    import uvicorn

    class Quiet(uvicorn.Server):
        def install_signal_handlers(self) -> None:
            return None

        def capture_signals(self) -> Any:
            return contextlib.nullcontext()

    return Quiet(config)
