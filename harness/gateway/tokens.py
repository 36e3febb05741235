"""Where an entry's OAuth tokens and client registration are kept (the SDK's
``TokenStorage``), with the access token's absolute expiry beside it.

With ``harness:store`` loaded, in the store (:class:`StoreTokens`: one row per entry, in
SQLite beside cordis.yml, or PostgreSQL shared by replicas); else in ``.harness/oauth/ID.json``
beside cordis.yml (:class:`TokenFile`). Both are readable by their owner only (0600: the
SQLite file and its journal files too, once a token is kept there) and never logged.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

if TYPE_CHECKING:
    from ..store.database import Database

TOKENS_FOLDER = Path(".harness") / "oauth"


def margin(lifetime: float) -> float:
    """How long before its expiry a token of ``lifetime`` seconds is refreshed."""
    return min(60.0, lifetime / 2)


class TokenRecord:
    """One entry's record: ``tokens``, ``client``, ``expires_at``, ``lifetime`` and a
    step-up's ``scope_wanted``, as one JSON object. Subclasses load and save it."""

    where = ""
    """Where the record is kept, for messages."""

    async def load(self) -> dict[str, Any]:
        """The record ({} when there is none)."""
        raise NotImplementedError

    async def save(self, data: dict[str, Any]) -> None:
        """Replace the record."""
        raise NotImplementedError

    async def refresh_at(self) -> float | None:
        """When the stored access token is due for a refresh (None: it does not expire)."""
        data = await self.load()
        expires_at, lifetime = data.get("expires_at"), data.get("lifetime")
        if not isinstance(expires_at, int | float) or not isinstance(lifetime, int | float):
            return None
        return float(expires_at) - margin(float(lifetime))

    async def get_tokens(self) -> OAuthToken | None:
        tokens = (await self.load()).get("tokens")
        return OAuthToken.model_validate(tokens) if tokens else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        data = await self.load()
        data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        if tokens.expires_in is not None:
            data["expires_at"] = time.time() + tokens.expires_in
            data["lifetime"] = tokens.expires_in
        else:
            data.pop("expires_at", None)
            data.pop("lifetime", None)
        await self.save(data)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        client = (await self.load()).get("client")
        return OAuthClientInformationFull.model_validate(client) if client else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        data = await self.load()
        data["client"] = client_info.model_dump(mode="json", exclude_none=True)
        await self.save(data)


class TokenFile(TokenRecord):
    """The record in a JSON file, 0600, replaced whole (a new file moved into place)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = str(path)

    @classmethod
    def of(cls, base_dir: Path, entry: str) -> TokenFile:
        """The token file of entry ``entry`` of the project in ``base_dir``."""
        return cls(base_dir / TOKENS_FOLDER / f"{entry}.json")

    async def load(self) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(self.read)

    async def save(self, data: dict[str, Any]) -> None:
        await anyio.to_thread.run_sync(self.write, data)

    def read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # A partial file of its own (0600, created new): two writers at once (two calls'
        # step-ups, `harness auth` beside `harness run`) never write into one file, or move
        # away the other's.
        descriptor, partial = tempfile.mkstemp(
            prefix=f".{self.path.stem}.", suffix=".partial", dir=self.path.parent
        )
        try:
            with os.fdopen(descriptor, "w") as file:
                json.dump(data, file)
            os.replace(partial, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(partial)
            raise


class StoreTokens(TokenRecord):
    """The record in the store, under the name ``oauth/<entry>``."""

    def __init__(self, database: Database, entry: str) -> None:
        self.database = database
        self.name = f"oauth/{entry}"
        self.where = f"the store ({database.where})"

    async def load(self) -> dict[str, Any]:
        try:
            data = json.loads(await self.database.secret(self.name) or "{}")
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    async def save(self, data: dict[str, Any]) -> None:
        await self.database.keep_secret(self.name, json.dumps(data))
