"""Who may use the web console: the MCP surface's rules, made fit for a browser.

Every request to the console (everything but ``/mcp``, which keeps its own gate) passes
:class:`WebGate`, an ASGI middleware, in this order:

- **Host** must be one the server answers to (the allowed-host list of :mod:`harness.mcp`):
  a page loaded through a rebinding DNS name gets 421.
- **Token**: when the server has one (it must, beyond loopback), a request needs
  ``Authorization: Bearer TOKEN`` or the console's cookie. A ``GET`` with ``?token=TOKEN``
  sets that cookie (HttpOnly, SameSite=Strict) and redirects to the same URL without the
  token, so it leaves the address bar and the history at once. Otherwise 401. The cookie is
  an HMAC of the token under a key only the server holds (:func:`cookie_key`), so a guessed
  token cannot be turned into a cookie; every wrong credential, a cookie included, counts in
  the shared :class:`~harness.mcp.auth.TokenThrottle` (429 past the free ones).
- **Reads** (GET/HEAD/OPTIONS) change nothing, but another page must not read them either: an
  ``Origin`` other than the page's own (``fetch``, ``EventSource``) gets 403, and so does a
  request a browser marks ``Sec-Fetch-Site: cross-site`` or ``same-site`` (an ``<img>``,
  ``<script>`` or frame of another page, which carry no ``Origin``) unless it is a top-level
  navigation. A request with neither header is a script's (curl) or an old browser's: the
  token, the ``SameSite=Strict`` cookie and the Host check are what keep those out.
- **State-changing requests** (anything but GET/HEAD/OPTIONS) must be same-origin JSON:
  ``Content-Type: application/json`` (a cross-site form cannot send it, and a cross-site
  script cannot without a CORS preflight, which is never granted), an ``Origin``, when sent,
  equal to the page's own origin, and ``Sec-Fetch-Site``, when sent, ``same-origin`` or
  ``none``. Otherwise 403 (415 for the content type).
- **Body size** is bounded (1 MiB by default; 413 beyond).

Every response carries a strict Content-Security-Policy: the page's own scripts only, no
inline script, images from the page, ``data:`` and ``http(s):`` only.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from mcp.server.transport_security import RequestBodyLimitMiddleware

from ..mcp.auth import TokenThrottle, bearer_token, client_key, same_token, too_many
from ..mcp.hosts import allowed_hosts
from ..tools.seal import SECRET

COOKIE = "harness_console"
MAX_BODY = 1024 * 1024
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: http: https:;"
    " connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


def cookie_key() -> bytes:
    """The key of the console's cookies: derived from ``HARNESS_SECRET`` when it is set (the
    replicas behind one load balancer share it, so each accepts the others' cookies), else
    random for this process (a restart then asks for the token again)."""
    secret = os.environ.get(SECRET)
    if secret:
        return hashlib.sha256(b"harness web console cookie\0" + secret.encode()).digest()
    return secrets.token_bytes(32)


def cookie_value(token: str, key: bytes) -> str:
    """The cookie a browser holds instead of the token itself: an HMAC of the token under
    ``key``, which only the server knows, so a guess of the token makes no cookie."""
    return hmac.new(key, token.encode(), hashlib.sha256).hexdigest()


def host_allowed(host: str, patterns: list[str]) -> bool:
    """True when the Host header matches one of :func:`allowed_hosts`' patterns."""
    for pattern in patterns:
        base = pattern.removesuffix(":*")
        if host == base or (host.startswith(base + ":") and host[len(base) + 1 :].isdigit()):
            return True
    return False


class WebGate:
    """ASGI middleware applying the console's security rules (see the module docstring)."""

    def __init__(
        self,
        app: Any,
        bind: str,
        token: str | None = None,
        max_body: int = MAX_BODY,
        allow_hosts: Sequence[str] = (),
        throttle: TokenThrottle | None = None,
    ) -> None:
        self.app = RequestBodyLimitMiddleware(app, max_body)
        self.hosts = allowed_hosts(bind, allow_hosts)
        self.token = token
        self.cookie = cookie_value(token, cookie_key()) if token else None
        self.throttle = throttle if throttle is not None else TokenThrottle()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {
            key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]
        }
        refusal = self._check(scope, headers)
        if refusal is not None:
            await refusal(send)
            return

        async def secured(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *HEADERS]}
            await send(message)

        if self.token and scope["method"] == "GET" and _query_token(scope) is not None:
            await self._take_token(scope, secured)
            return
        await self.app(scope, receive, secured)

    def _check(self, scope: Any, headers: dict[str, str]) -> _Reply | None:
        host = headers.get("host", "")
        if not host_allowed(host, self.hosts):
            return _Reply(421, f"this server does not answer to the host {host!r}")
        verdict = self._authorized(scope, headers) if self.token else True
        if verdict is False:
            return _Reply(
                401,
                "unauthorized: open the console with the URL harness run printed (it ends in "
                "?token=...), or send Authorization: Bearer <token>",
                [(b"www-authenticate", b"Bearer")],
            )
        if verdict is not True:
            body, retry_after = too_many(int(verdict))
            return _Reply(429, "", [retry_after], body)
        own = _own_origin(scope, host)
        origin = headers.get("origin")
        if origin is not None and origin != own:
            return _Reply(403, f"cross-origin request from {origin} refused")
        site = headers.get("sec-fetch-site")
        if scope["method"] in SAFE_METHODS:
            if site in ("cross-site", "same-site") and not _top_level_navigation(headers):
                dest = headers.get("sec-fetch-dest", "empty")
                return _Reply(
                    403,
                    f"a {site} request (for a {dest}) cannot read the console: open it in its "
                    "own tab",
                )
            return None
        if site is not None and site not in ("same-origin", "none"):
            return _Reply(403, f"a {site} request cannot change anything here")
        kind = headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            return _Reply(
                415,
                "requests that change something must be JSON: send Content-Type: application/json",
            )
        return None

    def _authorized(self, scope: Any, headers: dict[str, str]) -> bool | int:
        """True for the cookie or the token; False, or the seconds of a lock-out (429).

        The right cookie passes even while the client is locked out: nobody can make it
        without the server's key, so the pages already open keep working. Everything else
        presented, the token as ``Bearer`` or ``?token=`` or a wrong cookie, goes through
        the throttle (:mod:`harness.mcp.auth`), one count per request.
        """
        assert self.token is not None
        assert self.cookie is not None
        cookie = _cookies(headers.get("cookie", "")).get(COOKIE)
        if cookie is not None and same_token(cookie, self.cookie):
            return True
        given = bearer_token(headers.get("authorization"))
        if given is None and scope["method"] == "GET":
            given = _query_token(scope)
        if given is not None:
            return self.throttle.attempt(client_key(scope), given, self.token)
        if cookie is not None:  # a wrong cookie: stale (a restart) or made up
            return self.throttle.attempt(client_key(scope), cookie, self.cookie)
        return False  # no credentials: no guess either

    async def _take_token(self, scope: Any, send: Any) -> None:
        assert self.cookie is not None
        query = [
            (key, value)
            for key, value in parse_qsl(scope.get("query_string", b"").decode("latin-1"))
            if key != "token"
        ]
        target = same_origin_path(scope.get("path", "/")) + (
            f"?{urlencode(query)}" if query else ""
        )
        cookie = f"{COOKIE}={self.cookie}; HttpOnly; SameSite=Strict; Path=/"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", target.encode()),
                    (b"set-cookie", cookie.encode()),
                    (b"cache-control", b"no-store"),
                    (b"content-length", b"0"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


class _Reply:
    """A JSON refusal ``{"error": message}``."""

    def __init__(
        self,
        status: int,
        message: str,
        headers: list[tuple[bytes, bytes]] | None = None,
        body: bytes | None = None,
    ) -> None:
        self.status = status
        self.body = body if body is not None else json.dumps({"error": message}).encode()
        self.headers = headers or []

    async def __call__(self, send: Any) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": self.status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(self.body)).encode()),
                    *self.headers,
                    *HEADERS,
                ],
            }
        )
        await send({"type": "http.response.body", "body": self.body})


def same_origin_path(path: str) -> str:
    """``path`` as a redirect target that can only lead to this server.

    A browser reads ``//host/`` as another host, and also ``/\\host/`` (a backslash is a
    slash in http URLs), ``/\t/host/`` (tabs and newlines are dropped) and, after decoding,
    ``/%2F%2Fhost``. So every character but the plain ones of a path is percent-encoded
    again, and the leading slashes are collapsed to one.
    """
    encoded = quote(path, safe="/!$&'()*+,;=:@-._~")
    return "/" + encoded.lstrip("/")


def _own_origin(scope: Any, host: str) -> str:
    return f"{scope.get('scheme', 'http')}://{host}"


def _top_level_navigation(headers: dict[str, str]) -> bool:
    """A link followed or a URL typed: the page shows in its own tab, to the person."""
    return headers.get("sec-fetch-mode") == "navigate" and headers.get("sec-fetch-dest") in (
        None,
        "document",
    )


def _query_token(scope: Any) -> str | None:
    query: bytes = scope.get("query_string", b"")
    for key, value in parse_qsl(query.decode("latin-1")):
        if key == "token":
            return value
    return None


def _cookies(header: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in header.split(";"):
        name, _, value = part.strip().partition("=")
        if name:
            out[name] = value
    return out
