"""OAuth 2.1 for HTTP upstreams, through the SDK's client provider (DESIGN §12).

``oauth:`` on an entry gives its HTTP client the SDK's ``OAuthClientProvider``: on a 401 it
discovers the server's authorisation server, registers a client (dynamic registration, or
the ``client_id`` configured), and runs the authorisation-code flow with PKCE; it refreshes
an expired token with the refresh token. harness adds three things:

- Where the tokens live: :class:`TokenFile`, one file per entry under
  ``.harness/oauth/`` beside cordis.yml, readable by its owner only (0600), written whole
  (a new file moved into place). Tokens are never logged.
- When they are refreshed: before they expire. The SDK keeps a token until its expiry
  passes, and after a restart it cannot know the expiry at all (the stored ``expires_in``
  counts from when it was issued); :class:`EntryOAuth` keeps the absolute expiry beside
  the token and refreshes once less than :func:`margin` is left, across restarts too.
- Who sees the browser: only ``harness auth ID`` (:mod:`harness.cli.auth`) runs the flow's
  browser step. A running harness that would need it fails the entry with
  :class:`AuthorisationNeeded` instead, which says to run ``harness auth ID``. When that
  happens on a step-up (a 403 asking for more scope), the scope it needed is kept in the
  file, and ``harness auth`` asks for it too.

``EntryOAuth`` overrides four private steps of the SDK's provider (pinned: SDK 2.3;
``tests/gateway/test_oauth.py`` fails by name when they change).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.utils import union_scopes
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from .config import GatewayConfig

TOKENS_FOLDER = Path(".harness") / "oauth"


class AuthorisationNeeded(Exception):
    """Raised when an entry's server wants the browser step, outside ``harness auth``."""

    def __init__(self, entry: str) -> None:
        self.entry = entry
        super().__init__(
            f"the server requires authorisation (OAuth): run `harness auth {entry}` to "
            "authorise harness in a browser; the entry connects again by itself"
        )


def margin(lifetime: float) -> float:
    """How long before its expiry a token of ``lifetime`` seconds is refreshed."""
    return min(60.0, lifetime / 2)


class TokenFile:
    """One entry's tokens and client registration, in a 0600 JSON file (the SDK's
    ``TokenStorage``)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def of(cls, base_dir: Path, entry: str) -> TokenFile:
        """The token file of entry ``entry`` of the project in ``base_dir``."""
        return cls(base_dir / TOKENS_FOLDER / f"{entry}.json")

    def read(self) -> dict[str, Any]:
        """What the file holds ({} when there is none, or it cannot be read)."""
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def write(self, data: dict[str, Any]) -> None:
        """Replace the file's content, readable and writable by its owner only."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = self.path.with_suffix(".partial")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as file:
            json.dump(data, file)
        os.chmod(partial, 0o600)  # an existing file keeps its mode through O_CREAT
        os.replace(partial, self.path)

    def refresh_at(self) -> float | None:
        """When the stored access token is due for a refresh (None: it does not expire)."""
        data = self.read()
        expires_at, lifetime = data.get("expires_at"), data.get("lifetime")
        if not isinstance(expires_at, int | float) or not isinstance(lifetime, int | float):
            return None
        return float(expires_at) - margin(float(lifetime))

    async def get_tokens(self) -> OAuthToken | None:
        tokens = (await anyio.to_thread.run_sync(self.read)).get("tokens")
        return OAuthToken.model_validate(tokens) if tokens else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        def save() -> None:
            data = self.read()
            data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
            if tokens.expires_in is not None:
                data["expires_at"] = time.time() + tokens.expires_in
                data["lifetime"] = tokens.expires_in
            else:
                data.pop("expires_at", None)
                data.pop("lifetime", None)
            self.write(data)

        await anyio.to_thread.run_sync(save)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        client = (await anyio.to_thread.run_sync(self.read)).get("client")
        return OAuthClientInformationFull.model_validate(client) if client else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        def save() -> None:
            data = self.read()
            data["client"] = client_info.model_dump(mode="json", exclude_none=True)
            self.write(data)

        await anyio.to_thread.run_sync(save)


class EntryOAuth(OAuthClientProvider):
    """The SDK's provider, refreshing tokens before they expire (see the module)."""

    def __init__(self, storage: TokenFile, interactive: bool, **options: Any) -> None:
        super().__init__(storage=storage, **options)
        self.tokens = storage
        self.interactive = interactive

    async def _perform_authorization(self) -> httpx2.Request:
        # A step-up (a 403 asking for more scope) met by a running harness, which cannot
        # send the person to the browser: the scope it needed is kept in the file, and
        # `harness auth` asks for it as well as what the server asks for then.
        data = await anyio.to_thread.run_sync(self.tokens.read)
        wanted = union_scopes(self.context.client_metadata.scope, data.get("scope_wanted"))
        self.context.client_metadata.scope = wanted
        if not self.interactive and wanted and wanted != data.get("scope_wanted"):
            data["scope_wanted"] = wanted
            await anyio.to_thread.run_sync(self.tokens.write, data)
        return await super()._perform_authorization()

    async def _initialize(self) -> None:
        await super()._initialize()
        self._due()

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        await super()._handle_token_response(response)
        self._due()
        data = await anyio.to_thread.run_sync(self.tokens.read)
        if data.pop("scope_wanted", None) is not None:
            await anyio.to_thread.run_sync(self.tokens.write, data)

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        refreshed = await super()._handle_refresh_response(response)
        if refreshed:
            self._due()
        return refreshed

    def _due(self) -> None:
        # The SDK refreshes once ``token_expiry_time`` has passed: make that the moment
        # the token is due, read from the file (which survives a restart).
        if self.context.current_tokens is not None:
            self.context.token_expiry_time = self.tokens.refresh_at()


Redirect = Callable[[str], Awaitable[None]]
Callback = Callable[[], Awaitable[AuthorizationCodeResult]]


def provider(
    config: GatewayConfig,
    entry: str,
    base_dir: Path,
    redirect_uri: str | None = None,
    redirect: Redirect | None = None,
    callback: Callback | None = None,
) -> EntryOAuth:
    """The OAuth provider of entry ``entry`` (its ``oauth:`` set). Without ``redirect`` and
    ``callback`` (a running harness), the browser step raises :class:`AuthorisationNeeded`."""
    oauth = config.oauth
    assert oauth is not None
    assert config.url is not None

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
    storage = TokenFile.of(base_dir, entry)
    if oauth.client_id is not None:
        _configured_client(storage, config, metadata)
    return EntryOAuth(
        storage,
        redirect is not None,
        server_url=config.url,
        client_metadata=metadata,
        redirect_handler=redirect or refuse,
        callback_handler=callback or never,
        client_metadata_url=oauth.client_metadata_url,
    )


def _configured_client(storage: TokenFile, config: GatewayConfig, metadata: Any) -> None:
    """Store the configured client (unless it is stored already), so the SDK uses it
    rather than registering one."""
    oauth = config.oauth
    assert oauth is not None
    assert oauth.client_id is not None
    data = storage.read()
    client = OAuthClientInformationFull(
        **metadata.model_dump(exclude_none=True),
        client_id=oauth.client_id,
        client_secret=oauth.client_secret,
    )
    stored = data.get("client") or {}
    if stored.get("client_id") != client.client_id or stored.get("redirect_uris") != [
        str(uri) for uri in client.redirect_uris or ()
    ]:
        data["client"] = client.model_dump(mode="json", exclude_none=True)
        storage.write(data)
