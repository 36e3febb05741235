"""What can go wrong with an upstream: the exceptions a connection raises, and the messages
that say what happened (the end of a transport, a refused answer, a failed handshake)."""

from __future__ import annotations

import re
from typing import Any

import httpx2
import mcp_types as types
from mcp.shared.exceptions import MCPError

from .auth import AuthorisationNeeded
from .caps import cut_reason
from .config import GatewayConfig
from .http import Refusal


class Unavailable(Exception):
    """Raised when the upstream cannot be used (not started, gone, or unreachable)."""


class TooLarge(Exception):
    """Raised when the server's answer passed its cap and was not read (see :mod:`.caps`)."""


def explain(
    exc: BaseException,
    config: GatewayConfig,
    refused: str | None,
    refusal: Refusal | None = None,
    entry: str = "ID",
) -> str:
    """Why a connection to the server of ``config`` (entry ``entry``) ended with ``exc``
    (``refused``: what harness refused to read from it, if anything; ``refusal``: the
    server's last 401 or 403)."""
    if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        return explain(exc.exceptions[0], config, refused, refusal, entry)
    needed = _authorisation_needed(exc)
    if needed is not None:
        return str(needed)
    if isinstance(exc, Unavailable):
        return str(exc)
    if isinstance(exc, FileNotFoundError | PermissionError):
        return f"cannot start command {config.command!r}: {exc.strerror or exc}"
    if isinstance(exc, httpx2.TransportError):
        return f"cannot reach {config.url}: {transport_error(exc)}"
    if isinstance(exc, httpx2.HTTPStatusError):
        if exc.response.status_code in (401, 403):
            status, challenge = exc.response.status_code, exc.response.headers
            found = Refusal(status, challenge.get("www-authenticate", ""))
            return unauthorised(found, config, entry) or ""
        return f"{config.url} answered HTTP {exc.response.status_code}"
    if isinstance(exc, MCPError) and refusal is not None and refusal.status:
        return unauthorised(refusal, config, entry) or ""
    if isinstance(exc, MCPError):
        cut = cut_reason(exc.error.message)
        if cut is not None:
            return cut
        if exc.code == types.CONNECTION_CLOSED and refused is not None:
            return refused
        if exc.code == types.CONNECTION_CLOSED:
            started = f"command {config.command!r}" if config.command else "it"
            return f"the server closed the connection during the handshake ({started} exited?)"
        return f"the server answered with an error: {exc}"
    return f"{type(exc).__name__}: {exc}"


def unauthorised(refusal: Refusal, config: GatewayConfig, entry: str = "ID") -> str | None:
    """What a 401 or 403 from the server means, and what to do; None for neither."""
    challenge = f" ({short(refusal.challenge, 300)})" if refusal.challenge else ""
    if refusal.status == 401 and config.oauth is not None:
        return (
            f"the server requires authorisation: {config.url} answered HTTP 401{challenge}; "
            f"run `harness auth {entry}` to authorise harness in a browser"
        )
    if refusal.status == 401:
        return (
            f"the server requires authorisation: {config.url} answered HTTP 401{challenge}; "
            f"for OAuth, set oauth: true on entry {entry!r} and run `harness auth {entry}`; "
            "else set the credentials it expects in the entry's headers, e.g. "
            'headers: {Authorization: "Bearer ${TOKEN}"}'
        )
    if (
        refusal.status == 403
        and config.oauth is not None
        and _field(refusal, "error") == ("insufficient_scope")
    ):
        scope = _field(refusal, "scope")
        wanted = f", asking for the scope {scope!r}" if scope else ""
        which = "for that scope as well" if scope else "again"
        return (
            f"the call needs more access than harness was granted: {config.url} answered HTTP "
            f"403 insufficient_scope{wanted}; run `harness auth {entry}` to authorise entry "
            f"{entry!r} {which} (its other calls go on meanwhile)"
        )
    if refusal.status == 403 and config.oauth is not None:
        return (
            f"the server refused access: {config.url} answered HTTP 403{challenge}; run "
            f"`harness auth {entry}` to authorise harness again (for the scope it names, "
            "if it names one)"
        )
    if refusal.status == 403:
        return (
            f"the server refused access: {config.url} answered HTTP 403{challenge}; check the "
            "credentials in the entry's headers"
        )
    return None


def _field(refusal: Refusal, name: str) -> str | None:
    """Field ``name`` of the refusal's ``WWW-Authenticate`` challenge, if it has one."""
    found = re.search(rf'\b{name}=(?:"([^"]*)"|([^\s,]+))', refusal.challenge)
    return (found.group(1) or found.group(2)) if found else None


def _authorisation_needed(exc: BaseException) -> AuthorisationNeeded | None:
    """The :class:`AuthorisationNeeded` that ``exc`` is, holds or was caused by, if any."""
    seen: set[int] = set()
    pending = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, AuthorisationNeeded):
            return current
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None


def transport_error(exc: BaseException) -> str:
    """An HTTP transport error's text, bounded."""
    text = str(exc) or type(exc).__name__
    return text if len(text) < 300 else text[:300] + "..."


def short(value: Any, limit: int = 500) -> str:
    """``value`` as text of at most ``limit`` characters (and "...")."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
