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

import contextlib
import hmac
import io
import ipaddress
import json
import logging
import socket
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

import anyio
import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from . import __version__
from .context import Context
from .errors import HarnessError
from .gateway.results import mcp_block
from .http_limits import BodyTimeout, HttpLimits, SessionsPerClient, header_timeout_protocol
from .service import unwrap
from .tools.approval import ApprovalAnswer, Approved, CallSeal, Denied, Pending, SealError, prompt
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


class McpApproval:
    """The approval of one MCP request: the client's user decides, through elicitation.

    Handshake-era connections get an ``elicitation/create`` request while the call waits. On
    2026-07-28 connections the first round answers :class:`Pending`: the call ends as an
    ``InputRequiredResult`` whose ``requestState`` is sealed to the call's name and canonical
    arguments (:class:`~harness.tools.approval.CallSeal`); the client's next round carries the
    answer in ``inputResponses`` with that state, and only then is it read. An answer without
    a valid state for this exact call, or a state used before, approves nothing.
    """

    def __init__(self, ctx: Any, params: types.CallToolRequestParams, seal: CallSeal) -> None:
        self.ctx = ctx
        self.params = params
        self.seal = seal

    async def request(self, call: ToolCall, reason: str) -> ApprovalAnswer:
        """Ask the client's user; Approved, Denied, or Pending (a later round answers)."""
        capabilities = self.ctx.session.client_capabilities
        if capabilities is None or capabilities.elicitation is None:
            return Denied(
                "approval needed, and this MCP client cannot ask its user (no elicitation)"
            )
        message = prompt(call, reason)
        if self.ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            answer = await self.ctx.session.elicit_form(
                message, APPROVAL_SCHEMA, related_request_id=self.ctx.request_id
            )
            return _accepted(answer)
        state = self.params.request_state
        if state is None:
            # A first round: ask. inputResponses sent without our state are not an answer.
            request = types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message=message, requested_schema=APPROVAL_SCHEMA
                )
            )
            return Pending(message, request)
        try:
            self.seal.open(state, call)
        except SealError as exc:
            _log.warning("refused an MCP approval for tool %r: %s", call.name, exc)
            return Denied(str(exc))
        return _accepted((self.params.input_responses or {}).get(APPROVAL_KEY))


def _accepted(answer: Any) -> Approved | Denied:
    """Only an accepted form whose ``approve`` is the boolean True approves."""
    if isinstance(answer, dict):
        try:
            answer = types.ElicitResult.model_validate(answer)
        except ValueError:
            return Denied("the client's answer is not an elicitation result")
    if not isinstance(answer, types.ElicitResult) or answer.action != "accept":
        return Denied("the user declined")
    if (answer.content or {}).get("approve") is not True:
        return Denied("the user did not approve")
    return Approved()


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
        self.seal = CallSeal()
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
        """Listen for registry changes (approvals go to the client of each call)."""
        self.root.on("tools/change", self._changed)

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
        call = ToolCall(str(ctx.request_id), params.name, params.arguments or {})
        # The client's user decides (elicitation); a plugin's ``approval`` service (the
        # agent's broker, the web console) answers only for clients that cannot ask.
        capabilities = ctx.session.client_capabilities
        asks = capabilities is not None and capabilities.elicitation is not None
        approval = (
            McpApproval(ctx, params, self.seal)
            if asks or self.root.get("approval") is None
            else None
        )
        result = await unwrap(self.root.tools).execute(call, approval=approval)  # one look-up
        if result.code == "approval_pending" and result.pending is not None:
            return types.InputRequiredResult(
                input_requests={APPROVAL_KEY: result.pending.data},
                request_state=self.seal.seal(call),
            )
        return to_mcp_result(result)

    # -- notifications ---------------------------------------------------------------------

    def _remember(self, ctx: Any) -> None:
        # ctx.session is a per-request proxy; notifications outlive the request, so keep
        # the connection behind it (weakly: a closed connection drops out by itself).
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self.connections.add(connection_of(ctx.session))

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

    async def serve_stdio(self, wire: BinaryIO | None = None) -> None:
        """Serve over stdin and stdout (or the binary file ``wire``, see
        :func:`harness.serving.protocol_stdout`) until the client disconnects."""
        from mcp.server.stdio import stdio_server

        stdout = None
        if wire is not None:
            text = io.TextIOWrapper(wire, encoding="utf-8", newline="\n", write_through=True)
            stdout = anyio.wrap_file(text)
        async with stdio_server(stdout=stdout) as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    def http_app(
        self,
        host: str,
        token: str | None = None,
        allow_hosts: Sequence[str] = (),
        limits: HttpLimits | None = None,
    ) -> Any:
        """The streamable HTTP app (path ``/mcp``), Origin-checked, token-gated when set,
        with the body timeout, idle-session bound and per-client session count of
        ``limits``.

        Requests must name an allowed host (:func:`allowed_hosts`), else 421.
        """
        limits = limits or HttpLimits()
        hosts = allowed_hosts(host, allow_hosts)
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=hosts,
            allowed_origins=[f"http://{entry}" for entry in hosts]
            + [f"https://{entry}" for entry in hosts],
        )
        app: Any = self.server.streamable_http_app(
            streamable_http_path="/mcp",
            transport_security=security,
            host=host,
            session_idle_timeout=limits.idle_session,
        )
        app = SessionsPerClient(app, limits.sessions_per_client, limits.idle_session)
        app = BodyTimeout(app, limits.body_timeout)
        return BearerGate(app, token) if token else app

    async def serve_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8765,
        token: str | None = None,
        on_ready: Any = None,
        wrap: Any = None,
        allow_hosts: Sequence[str] = (),
        limits: HttpLimits | None = None,
    ) -> None:
        """Serve streamable HTTP until cancelled; refuses a public bind without a token.

        ``wrap``, when given, turns the MCP app into the app served (the web console
        mounts itself this way, beside ``/mcp``).
        """
        check_bind(host, token)
        import uvicorn

        limits = limits or HttpLimits()
        app = self.http_app(host, token, allow_hosts, limits)
        config = uvicorn.Config(
            wrap(app) if wrap is not None else app,
            host=host,
            port=port,
            http=header_timeout_protocol(limits.header_timeout),
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


def connection_of(session: ServerSession) -> Connection:
    """The connection behind a per-request ``ServerSession``.

    A private attribute of the MCP SDK: handlers get a session made for one request, and
    no public way to its ``Connection``, which outlives the request and is what later
    ``list_changed`` notifications go through (keeping sessions instead would notify a
    connection once per request it made). ``tests/test_private_apis.py`` fails when the
    SDK changes this; here a change fails loudly rather than silently dropping notices.
    """
    connection = getattr(session, "_connection", None)
    if not isinstance(connection, Connection):
        raise HarnessError(
            f"the MCP SDK's ServerSession no longer holds its Connection as _connection "
            f"(got {type(connection).__name__}); harness.mcp.connection_of needs updating"
        )
    return connection


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
    converted = mcp_block(block)  # audio, resource links and embedded resources
    if converted is not None:
        return converted
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


def allowed_hosts(host: str, extra: Sequence[str] = ()) -> list[str]:
    """The ``Host`` header values accepted (``name:*``), derived from the bind address.

    Loopback names always; a specific address itself; for a wildcard bind (``0.0.0.0``,
    ``::``) this machine's host name, its fully qualified name and its addresses; plus every
    ``extra`` name (``--allow-host``: a DNS name or a proxy's, say).
    """
    names = {"127.0.0.1", "localhost", "[::1]"}
    if host in ("0.0.0.0", "::", ""):
        names.update(machine_names(ipv6=host == "::"))
    elif not is_loopback(host):
        names.add(host)
    names.update(name.strip() for name in extra if name.strip())
    return sorted({_host_pattern(name) for name in names})


_allowed_hosts = allowed_hosts  # the web console's gate uses the same list


def _host_pattern(name: str) -> str:
    """``name:*``, or ``name:port`` as given; IPv6 literals in brackets."""
    if name.startswith("["):
        return name if "]:" in name else f"{name}:*"
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        base, _, port = name.rpartition(":")
        return name if base and port.isdigit() else f"{name}:*"
    return f"[{address}]:*" if address.version == 6 else f"{address}:*"


def machine_names(ipv6: bool = False) -> set[str]:
    """This machine's host names and addresses (what clients on the network may use)."""
    names = {socket.gethostname(), socket.getfqdn()}
    families = (socket.AF_INET, socket.AF_INET6) if ipv6 else (socket.AF_INET,)
    for family in families:
        with contextlib.suppress(OSError):
            for *_, address in socket.getaddrinfo(socket.gethostname(), None, family):
                names.add(str(address[0]))
        # the address of the default route: a UDP "connection" sends nothing
        probe = "192.0.2.1" if family == socket.AF_INET else "2001:db8::1"
        with contextlib.suppress(OSError), socket.socket(family, socket.SOCK_DGRAM) as udp:
            udp.connect((probe, 9))
            names.add(str(udp.getsockname()[0]))
    return {name for name in names if name and not name.startswith("fe80")}


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
