"""``harness auth ID``'s flow: the gateway's connection, with the browser step allowed.

It connects to the entry's server as the running gateway would (:mod:`.handshake`), but its
OAuth provider (:mod:`.auth`) may send the person to the authorisation server: the URL is
shown and opened in a browser (:mod:`.loopback`), and the redirect comes back to a listener
on 127.0.0.1. The command line (``harness.cli.auth``) reads the entry and calls
:func:`authorise`; nothing else of the gateway is its business.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import pydantic
from mcp.client.streamable_http import streamable_http_client

from ..store.config import StoreConfig
from ..store.service import open_store
from .auth import provider
from .config import GatewayConfig
from .handshake import connect
from .loopback import Loopback
from .tokens import StoreTokens, TokenFile, TokenRecord


class AuthProblem(Exception):
    """Raised when ``harness auth`` is given an entry it cannot authorise."""


def entry_config(entry: str, name: str | None, config: Any) -> GatewayConfig:
    """The config of entry ``entry`` (plugin ``name``, raw ``config``) when it is an OAuth
    MCP entry; else :class:`AuthProblem` saying what to do."""
    if not (name or "").endswith("mcp-client"):
        raise AuthProblem(f"entry {entry!r} is {name}, not harness:mcp-client")
    try:
        found = GatewayConfig.model_validate(config or {})
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        raise AuthProblem(f"entry {entry!r}: config: {first['msg']}") from None
    if found.url is None:
        raise AuthProblem(f"entry {entry!r} is a stdio server; OAuth is for url servers")
    if found.oauth is None:
        raise AuthProblem(
            f"entry {entry!r} does not use OAuth: add `oauth: true` to its config, then "
            f"run harness auth {entry} again"
        )
    return found


async def authorise(
    config: GatewayConfig,
    entry: str,
    base_dir: Path,
    show: Callable[[str], None],
    browser: bool = True,
    seconds: float = 300.0,
    store: Any = None,
) -> tuple[bool, str]:
    """Connect to the server of entry ``entry`` and run the browser step: show the
    authorisation URL (and open it in a browser when ``browser``), wait at most ``seconds``
    for the whole flow, keep the tokens (in the store ``store`` configures, a
    ``harness:store`` entry's config, else in the entry's token file). The step runs every
    time (the tokens kept before are put back when it fails). Returns whether the server
    asked for authorisation, and where the tokens are."""
    async with AsyncExitStack() as stack:
        storage: TokenRecord = TokenFile.of(base_dir, entry)
        if store is not None:
            database = await open_store(StoreConfig.model_validate(store), base_dir)
            stack.push_async_callback(database.close)
            storage = StoreTokens(database, entry)
        kept = await storage.load()
        if "tokens" in kept:
            await storage.save({key: value for key, value in kept.items() if key != "tokens"})
        try:
            asked = await _flow(config, entry, show, browser, seconds, storage)
        except BaseException:
            with anyio.CancelScope(shield=True):
                if "tokens" in kept and "tokens" not in await storage.load():
                    await storage.save(kept)
            raise
        return asked, storage.where


async def _flow(
    config: GatewayConfig,
    entry: str,
    show: Callable[[str], None],
    browser: bool,
    seconds: float,
    storage: TokenRecord,
) -> bool:
    assert config.url is not None
    assert config.oauth is not None
    url = config.url
    async with anyio.create_task_group() as group, AsyncExitStack() as stack:
        try:
            loopback = await stack.enter_async_context(
                Loopback(await _port(config, storage)).serving(group)
            )
        except OSError:  # the port registered before is taken: register anew
            fallback = Loopback(config.oauth.redirect_port)
            loopback = await stack.enter_async_context(fallback.serving(group))
        await _forget_other_redirects(config, storage, loopback.redirect_uri)

        asked = False

        async def redirect(url: str) -> None:
            nonlocal asked
            asked = True
            group.start_soon(loopback.redirect, url, show, browser)

        oauth = provider(config, entry, storage, loopback.redirect_uri, redirect, loopback.callback)
        with anyio.fail_after(seconds):
            async with (
                httpx2.AsyncClient(auth=oauth, headers=config.headers, timeout=30) as http,
                connect(
                    lambda: streamable_http_client(url, http_client=http),
                    config.protocol,
                    lambda: False,
                    cache=None,
                ) as client,
            ):
                await client.list_tools()
        await stack.aclose()
        group.cancel_scope.cancel()
    return asked


async def _port(config: GatewayConfig, storage: TokenRecord) -> int:
    """The port registered with the authorisation server before, else the configured one."""
    assert config.oauth is not None
    if config.oauth.redirect_port:
        return config.oauth.redirect_port
    uris: list[str] = ((await storage.load()).get("client") or {}).get("redirect_uris") or []
    found = urlsplit(uris[0]) if uris else None
    if found is not None and found.hostname == "127.0.0.1" and found.port:
        return found.port
    return 0


async def _forget_other_redirects(
    config: GatewayConfig, storage: TokenRecord, redirect_uri: str
) -> None:
    """A client registered (dynamically) with another redirect URI is registered anew."""
    assert config.oauth is not None
    data = await storage.load()
    client = data.get("client")
    if client and config.oauth.client_id is None and client.get("redirect_uris") != [redirect_uri]:
        del data["client"]
        await storage.save(data)
