"""An OAuth-protected MCP server with its own authorisation server, both from the SDK.

Run as ``python oauth_server.py``: it prints ``serving http://127.0.0.1:PORT/mcp`` on stderr.
The SDK's ``MCPServer`` serves the MCP endpoint (bearer tokens required), the protected
resource metadata, and the authorisation server's routes (metadata, dynamic registration,
authorize, token) around :class:`Provider`, an in-memory provider that approves every
authorisation at once (no person: the browser step is a plain redirect) and issues access
tokens ``access-N`` of ``OAUTH_TOKEN_SECONDS`` (default 3600). ``OAUTH_MARK`` (a file) gets
one line per grant and per tool call, for the tests to read.

The tool ``admin`` needs the scope ``admin`` (which every client registered may ask for,
and none is granted unasked): :class:`StepUp` answers a ``tools/call`` of it with a token
that lacks the scope with HTTP 403 ``insufficient_scope`` naming the scope, as the MCP
authorisation spec's step-up says.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

LIFETIME = int(os.environ.get("OAUTH_TOKEN_SECONDS", "3600"))
MARK = Path(os.environ["OAUTH_MARK"]) if os.environ.get("OAUTH_MARK") else None


def mark(line: str) -> None:
    if MARK is not None:
        with MARK.open("a") as file:
            file.write(line + "\n")


class Provider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """Clients, codes and tokens in memory; every authorisation approved at once."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.access: dict[str, AccessToken] = {}
        self.issued = 0

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        client_info.scope = "user admin"  # what a client may ask for (it asks for none at first)
        self.clients[client_info.client_id] = client_info
        mark(f"register {client_info.client_name}")

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = secrets.token_urlsafe(24)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        mark(" ".join(["authorize", *(params.scopes or [])]))
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        mark("token authorization_code")
        return self._issue(authorization_code.client_id, authorization_code.scopes)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        mark("token refresh_token")
        return self._issue(refresh_token.client_id, scopes or refresh_token.scopes)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str]) -> OAuthToken:
        self.issued += 1
        access = f"access-{self.issued}"
        refresh = secrets.token_urlsafe(24)
        expires = int(time.time()) + LIFETIME
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=LIFETIME,
            refresh_token=refresh,
            scope=" ".join(scopes) or None,
        )


def build(port: int, provider: Provider) -> MCPServer:
    base = f"http://127.0.0.1:{port}"
    server = MCPServer(
        "protected",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            client_registration_options=ClientRegistrationOptions(enabled=True),
        ),
    )

    @server.tool(description="The access token this call was made with.")
    def token(ctx: Context) -> str:
        request = ctx.request_context.request
        used = str(request.headers.get("authorization", "")) if request is not None else ""
        mark(f"call {used}")
        return used.removeprefix("Bearer ")

    @server.tool(description="Needs the scope admin.")
    def admin() -> str:
        mark("call admin")
        return "admin done"

    return server


class StepUp:
    """ASGI middleware: a ``tools/call`` of ``admin`` without the scope ``admin`` gets 403."""

    def __init__(self, app: Any, provider: Provider, base: str) -> None:
        self.app = app
        self.provider = provider
        self.base = base

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        if self._refused(scope, body):
            mark("refused admin: insufficient_scope")
            challenge = (
                'Bearer error="insufficient_scope", scope="admin", resource_metadata='
                f'"{self.base}/.well-known/oauth-protected-resource/mcp"'
            )
            headers = [(b"www-authenticate", challenge.encode()), (b"content-length", b"0")]
            await send({"type": "http.response.start", "status": 403, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    def _refused(self, scope: Any, body: bytes) -> bool:
        try:
            message = json.loads(body)
        except ValueError:
            return False
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            return False
        if (message.get("params") or {}).get("name") != "admin":
            return False
        authorization = dict(scope["headers"]).get(b"authorization", b"").decode()
        token = self.provider.access.get(authorization.removeprefix("Bearer "))
        return token is not None and "admin" not in token.scopes


async def main() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    provider = Provider()
    app = StepUp(build(port, provider).streamable_http_app(), provider, f"http://127.0.0.1:{port}")
    served = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    print(f"serving http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    await served.serve(sockets=[sock])


if __name__ == "__main__":
    anyio.run(main)
