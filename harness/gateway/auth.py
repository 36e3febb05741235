"""OAuth 2.1 for HTTP upstreams, through the SDK's client provider (DESIGN §12).

``oauth:`` on an entry gives its HTTP client the SDK's ``OAuthClientProvider``: on a 401 it
discovers the server's authorisation server, registers a client (dynamic registration, or
the ``client_id`` configured), and runs the authorisation-code flow with PKCE; it refreshes
an expired token with the refresh token. harness adds three things:

- Where the tokens live (:mod:`.tokens`): in the store when ``harness:store`` is loaded,
  else in one file per entry under ``.harness/oauth/`` beside cordis.yml; readable by
  their owner only (0600) either way, and never logged.
- When they are refreshed: before they expire. The SDK keeps a token until its expiry
  passes, and after a restart it cannot know the expiry at all (the stored ``expires_in``
  counts from when it was issued); :class:`EntryOAuth` keeps the absolute expiry beside
  the token and refreshes once less than :func:`~.tokens.margin` is left, across restarts
  too.
- Who sees the browser: only ``harness auth ID`` (:mod:`.authorise`) runs the flow's
  browser step. A running harness that would need it fails the entry with
  :class:`AuthorisationNeeded` instead, which says to run ``harness auth ID``. A step-up
  (HTTP 403 ``insufficient_scope`` on one request) is not the SDK's to answer there: the
  403 goes back as that request's answer, so only its call fails (:mod:`.failures` says
  what to do) and the connection goes on; the scope it needed is kept with the tokens, and
  ``harness auth`` asks for it too. A step-up met after ``harness auth`` kept new tokens
  loads them and sends the request once more. (No browser-free way to widen the scope exists: a
  refresh may not ask for more than was granted, RFC 6749 §6.)

``EntryOAuth`` overrides five private steps of the SDK's provider (pinned: SDK 2.3;
``tests/gateway/test_oauth.py`` fails by name when they change).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.utils import (
    extract_field_from_www_auth,
    extract_scope_from_www_auth,
    union_scopes,
)
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
)

from .config import GatewayConfig
from .tokens import TokenRecord


class AuthorisationNeeded(Exception):
    """Raised when an entry's server wants the browser step, outside ``harness auth``."""

    def __init__(self, entry: str) -> None:
        self.entry = entry
        super().__init__(
            f"the server requires authorisation (OAuth): run `harness auth {entry}` to "
            "authorise harness in a browser; the entry connects again by itself"
        )


class EntryOAuth(OAuthClientProvider):
    """The SDK's provider, refreshing tokens before they expire (see the module)."""

    def __init__(self, storage: TokenRecord, interactive: bool, **options: Any) -> None:
        super().__init__(storage=storage, **options)
        self.tokens = storage
        self.interactive = interactive
        self.configured: OAuthClientInformationFull | None = None
        """The client configured (``client_id``), stored before the first request."""
        self._wanting = anyio.Lock()

    async def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        # The SDK's flow, but a step-up met by a running harness (which cannot send the
        # person to the browser) ends it: the 403 is the request's answer (see the module),
        # unless `harness auth` kept other tokens meanwhile: then once more with those.
        retried = False
        while True:
            flow = super()._auth_flow(request)
            try:
                sent = await flow.__anext__()
                while True:
                    response = yield sent
                    if sent is request and not self.interactive and step_up(response):
                        break
                    sent = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()
            if retried or not await self._stored_anew():
                await self._want(extract_scope_from_www_auth(response))
                return
            retried = True

    async def _stored_anew(self) -> bool:
        """Whether other tokens were stored than those in use (then the next request
        loads them)."""
        stored = await self.tokens.get_tokens()
        current = self.context.current_tokens
        if stored is None or (current is not None and stored.access_token == current.access_token):
            return False
        self._initialized = False
        return True

    async def _want(self, scope: str | None) -> None:
        """Keep ``scope`` (and the scope granted so far) for ``harness auth`` to ask for."""
        async with self._wanting:  # concurrent step-ups: one read-modify-write at a time
            data = await self.tokens.load()
            granted = self.context.current_tokens.scope if self.context.current_tokens else None
            wanted = union_scopes(union_scopes(data.get("scope_wanted"), granted), scope)
            if wanted and wanted != data.get("scope_wanted"):
                data["scope_wanted"] = wanted
                await self.tokens.save(data)

    async def _perform_authorization(self) -> httpx2.Request:
        # `harness auth` asks for the scope a step-up needed as well as what the server
        # asks for now.
        data = await self.tokens.load()
        wanted = union_scopes(self.context.client_metadata.scope, data.get("scope_wanted"))
        self.context.client_metadata.scope = wanted
        return await super()._perform_authorization()

    async def _initialize(self) -> None:
        if self.configured is not None:
            await _configured_client(self.tokens, self.configured)
        await super()._initialize()
        await self._due()

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        await super()._handle_token_response(response)
        await self._due()
        data = await self.tokens.load()
        if data.pop("scope_wanted", None) is not None:
            await self.tokens.save(data)

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        refreshed = await super()._handle_refresh_response(response)
        if refreshed:
            await self._due()
        return refreshed

    async def _due(self) -> None:
        # The SDK refreshes once ``token_expiry_time`` has passed: make that the moment
        # the token is due, read from the record (which survives a restart).
        if self.context.current_tokens is not None:
            self.context.token_expiry_time = await self.tokens.refresh_at()


def step_up(response: httpx2.Response) -> bool:
    """Whether ``response`` asks for more scope (HTTP 403 ``insufficient_scope``)."""
    return (
        response.status_code == 403
        and extract_field_from_www_auth(response, "error") == "insufficient_scope"
    )


Redirect = Callable[[str], Awaitable[None]]
Callback = Callable[[], Awaitable[AuthorizationCodeResult]]


def provider(
    config: GatewayConfig,
    entry: str,
    storage: TokenRecord,
    redirect_uri: str | None = None,
    redirect: Redirect | None = None,
    callback: Callback | None = None,
) -> EntryOAuth:
    """The OAuth provider of entry ``entry`` (its ``oauth:`` set). Without ``redirect`` and
    ``callback`` (a running harness), the browser step raises :class:`AuthorisationNeeded`."""
    oauth = config.oauth
    assert oauth is not None
    assert config.url is not None
    _quiet_flow_errors()

    async def refuse(url: str) -> None:
        raise AuthorisationNeeded(entry)

    async def never() -> AuthorizationCodeResult:
        raise AuthorisationNeeded(entry)

    metadata = OAuthClientMetadata(
        client_name=oauth.client_name,
        redirect_uris=[redirect_uri or "http://127.0.0.1/callback"],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=oauth.scope,
        token_endpoint_auth_method="client_secret_basic" if oauth.client_secret else "none",
    )
    found = EntryOAuth(
        storage,
        redirect is not None,
        server_url=config.url,
        client_metadata=metadata,
        redirect_handler=redirect or refuse,
        callback_handler=callback or never,
        client_metadata_url=oauth.client_metadata_url,
    )
    if oauth.client_id is not None:
        found.configured = OAuthClientInformationFull(
            **metadata.model_dump(exclude_none=True),
            client_id=oauth.client_id,
            client_secret=oauth.client_secret,
        )
    return found


async def _configured_client(storage: TokenRecord, client: OAuthClientInformationFull) -> None:
    """Store the configured client (unless it is stored already), so the SDK uses it
    rather than registering one."""
    data = await storage.load()
    stored = data.get("client") or {}
    if stored.get("client_id") != client.client_id or stored.get("redirect_uris") != [
        str(uri) for uri in client.redirect_uris or ()
    ]:
        data["client"] = client.model_dump(mode="json", exclude_none=True)
        await storage.save(data)


class _FlowErrors(logging.Filter):
    """The SDK logs each failed flow with its traceback ("OAuth flow error"); harness says
    what failed itself (the entry's problem, ``harness auth``'s message): keep one line,
    and none for :class:`AuthorisationNeeded`, which is no error of the flow."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is None:
            return True
        if isinstance(error, AuthorisationNeeded):
            return False
        record.msg, record.args = f"{record.getMessage()}: {type(error).__name__}: {error}", ()
        record.exc_info = record.exc_text = None
        return True


def _quiet_flow_errors() -> None:
    """Install :class:`_FlowErrors` on the SDK's OAuth logger, once (when a provider is
    first made, not on import)."""
    logger = logging.getLogger("mcp.client.auth.oauth2")
    if not any(isinstance(found, _FlowErrors) for found in logger.filters):
        logger.addFilter(_FlowErrors())
