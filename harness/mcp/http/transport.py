"""The streamable HTTP transport: the SDK's app behind harness's gates, served by uvicorn.

Requests must name an allowed host (:func:`~harness.mcp.hosts.allowed_hosts`), else 421; the
Origin must be one of them; with a token, ``Authorization: Bearer`` is required (401; 429 for
an address that sent too many wrong ones, :mod:`..auth`). The
limits of :class:`~harness.mcp.http.limits.HttpLimits` shed slow and flooding clients.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import anyio
from mcp.server.lowlevel.server import Server
from mcp.server.transport_security import TransportSecuritySettings

from ...errors import HarnessError
from ..auth import TokenThrottle, bearer_token, client_key, too_many
from ..hosts import allowed_hosts, check_bind, url_host
from .joined_writes import joined_writes_protocol
from .limits import BodyTimeout, HttpLimits, fastest_protocol, header_timeout_protocol
from .resume import RETRY_MS, resumable
from .sessions import SessionsPerClient


def streamable_app(
    server: Server[Any],
    host: str,
    token: str | None = None,
    allow_hosts: Sequence[str] = (),
    limits: HttpLimits | None = None,
    fast: Callable[[Any, list[str]], Any] | None = None,
    throttle: TokenThrottle | None = None,
) -> Any:
    """The streamable HTTP app of ``server`` (path ``/mcp``), Origin-checked, token-gated
    when ``token`` is set (wrong tokens counted in ``throttle``), with the body timeout,
    idle-session bound and per-client session count of ``limits``. ``fast(app,
    allowed_hosts)``, when given, wraps the SDK's app in a layer that answers some requests
    itself (:class:`~harness.mcp.http.fast_path.FastCalls`)."""
    limits = limits or HttpLimits()
    hosts = allowed_hosts(host, allow_hosts)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{entry}" for entry in hosts]
        + [f"https://{entry}" for entry in hosts],
    )
    app: Any = server.streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=security,
        host=host,
        session_idle_timeout=limits.idle_session,
        retry_interval=RETRY_MS,
    )
    resumable(server.session_manager)  # priming events and retry on handshake-era streams
    app = SessionsPerClient(app, limits.sessions_per_client, limits.idle_session)
    if fast is not None:
        app = fast(app, hosts)  # sessionless requests only: after the session count
    app = BodyTimeout(app, limits.body_timeout)
    return BearerGate(app, token, throttle) if token else app


async def serve_app(
    app: Any,
    host: str,
    port: int,
    token: str | None,
    limits: HttpLimits,
    on_ready: Callable[[str], object] | None = None,
    trusted: Sequence[str] = (),
) -> None:
    """Serve ``app`` with uvicorn until cancelled; refuses a public bind without a token.

    ``X-Forwarded-For`` and ``X-Forwarded-Proto`` are believed only from the ``trusted``
    proxies (addresses or networks, :func:`~harness.mcp.hosts.trusted_proxies`): uvicorn
    trusts them from loopback by default, which let any local process pose as any client
    to the per-client limits.
    """
    check_bind(host, token)
    import uvicorn

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=header_timeout_protocol(
            limits.header_timeout, joined_writes_protocol(fastest_protocol())
        ),
        log_level="warning",
        proxy_headers=bool(trusted),
        forwarded_allow_ips=list(trusted),
        access_log=False,  # at level warning it never shows, yet each response formatted it
        lifespan="on",
        timeout_graceful_shutdown=limits.shutdown_grace,
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
                on_ready(f"http://{url_host(host)}:{bound}/mcp")
            await anyio.sleep_forever()
        finally:
            server.should_exit = True


class BearerGate:
    """ASGI middleware: HTTP requests need ``Authorization: Bearer <token>`` (the scheme in
    any case), else 401; an address past its wrong tokens gets 429 (:mod:`..auth`)."""

    def __init__(self, app: Any, token: str, throttle: TokenThrottle | None = None) -> None:
        self.app = app
        self.token = token
        self.throttle = throttle if throttle is not None else TokenThrottle()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = None
            for name, value in scope.get("headers") or ():
                if name == b"authorization":
                    given = bearer_token(value)
                    break
            verdict = (
                False
                if given is None
                else self.throttle.attempt(client_key(scope), given, self.token)
            )
            if verdict is not True:
                await _refuse(send, verdict)
                return
        await self.app(scope, receive, send)


async def _refuse(send: Any, verdict: bool | int) -> None:
    if verdict is not False:
        status = 429
        body, extra = too_many(int(verdict))
    else:
        status = 401
        body = b'{"error": "unauthorized: send Authorization: Bearer <token>"}'
        extra = (b"www-authenticate", b"Bearer")
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _quiet_server(config: Any) -> Any:
    """A uvicorn server without its own signal handlers: the harness CLI owns Ctrl-C."""
    import uvicorn

    class Quiet(uvicorn.Server):
        def install_signal_handlers(self) -> None:
            return None

        def capture_signals(self) -> Any:
            return contextlib.nullcontext()

    return Quiet(config)
