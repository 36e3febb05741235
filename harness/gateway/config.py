"""The config of one ``harness:mcp-client`` entry: which server to mount, and how."""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import urlsplit

import pydantic

from .names import PREFIX_PATTERN


class OAuthConfig(pydantic.BaseModel):
    """``oauth:`` of an HTTP entry (``oauth: true`` for every default): OAuth 2.1."""

    model_config = pydantic.ConfigDict(extra="forbid")

    client_id: str | None = None
    """A client registered with the authorisation server beforehand; default: dynamic
    registration (or ``client_metadata_url`` where the server supports it)."""
    client_secret: str | None = None
    """That client's secret, if it has one (``${VAR}``)."""
    client_metadata_url: str | None = None
    """An https URL of a client metadata document, used as the client id where the server
    supports it (instead of registering)."""
    scope: str | None = None
    """Scopes to ask for (space-separated); default: what the server says it needs."""
    client_name: str = "harness"
    """The name registered with the authorisation server (shown on its consent page)."""
    redirect_port: int = pydantic.Field(0, ge=0, le=65535)
    """The loopback port ``harness auth`` listens on for the redirect (0: any free one;
    set it when the client was registered with a fixed redirect URI)."""


class GatewayConfig(pydantic.BaseModel):
    """``config:`` of an entry ``name: harness:mcp-client`` (stdio or streamable HTTP)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    command: str | None = None
    """stdio: the executable that runs the server (looked up on ``PATH``)."""
    args: list[str] = pydantic.Field(default_factory=list)
    """stdio: its arguments."""
    env: dict[str, str] = pydantic.Field(default_factory=dict)
    """stdio: extra environment, over the SDK's safe defaults (HOME, PATH, USER, ...)."""
    cwd: str | None = None
    """stdio: working directory; relative to the folder of cordis.yml."""
    url: str | None = None
    """streamable HTTP: the server's endpoint, ``http(s)://host:port/mcp``."""
    headers: dict[str, str] = pydantic.Field(default_factory=dict)
    """streamable HTTP: request headers (tokens via ``${VAR}``)."""
    oauth: OAuthConfig | None = None
    """streamable HTTP: authorise with OAuth 2.1 (``harness auth ID``); ``true`` for the
    defaults."""
    prefix: str | None = None
    """Put before every upstream name; default ``<id>_``; ``""`` keeps upstream names."""
    include: list[str] = pydantic.Field(default_factory=lambda: ["*"])
    """Globs over upstream tool names: only these are mounted."""
    exclude: list[str] = pydantic.Field(default_factory=list)
    """Globs over upstream tool names: never mounted (wins over include)."""
    timeout: float | None = pydantic.Field(60.0, gt=0)
    """Seconds one mounted call may run (null: the tools service default)."""
    connect_timeout: float = pydantic.Field(30.0, gt=0)
    """Seconds to start or reach the server and list its tools."""
    restart_delay: float = pydantic.Field(0.5, gt=0)
    """Seconds before the first restart after a failure; doubled per failure."""
    max_restart_delay: float = pydantic.Field(30.0, gt=0)
    """Cap of the restart delay."""
    max_result_bytes: int = pydantic.Field(4_000_000, ge=1024)
    """Results larger than this are refused: each message is cut off at this size as it is
    read (tools/list answers: ``max_list_bytes``), and the converted result is checked too."""
    max_list_bytes: int = pydantic.Field(16_000_000, ge=65536)
    """One tools/list answer (a page) larger than this fails the listing (read while capped)."""
    max_description_bytes: int = pydantic.Field(16_000, ge=256)
    """A longer upstream tool description is cut to this many bytes (UTF-8), with a problem."""
    max_schema_bytes: int = pydantic.Field(64_000, ge=1024)
    """A tool whose input or output schema (compact JSON) is larger is not mounted."""
    resources: bool = True
    """Mount the server's resources, resource templates and prompts too."""
    max_notifications: int = pydantic.Field(50, ge=1)
    """Notifications per second passed on; the rest are dropped (list changes coalesce)."""
    max_tools: int = pydantic.Field(1000, ge=1)
    """Upstream tools mounted at most (the first ones, in upstream order)."""
    protocol: Literal["auto", "2025-11-25", "2026-07-28"] = "auto"
    """The protocol era: ``auto`` finds it by the handshake (2025-11-25 where the server
    speaks both), or pin one."""
    elicitation: Literal["ask", "approval", "decline"] = "ask"
    """Upstream elicitation: ask the person behind the call (``approval`` is the older name
    of ``ask``), or always decline."""

    @pydantic.field_validator("prefix")
    @classmethod
    def _check_prefix(cls, value: str | None) -> str | None:
        if value is not None and not PREFIX_PATTERN.match(value):
            raise ValueError(
                "prefix may hold only letters, digits, '_' and '-', at most 48 characters"
            )
        return value

    @pydantic.field_validator("oauth", mode="before")
    @classmethod
    def _oauth_switch(cls, value: object) -> object:
        if value is True:
            return {}
        return None if value is False else value

    @pydantic.model_validator(mode="after")
    def _check_transport(self) -> GatewayConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                "give either command (a stdio server) or url (a streamable HTTP server), not "
                + ("both" if self.command else "neither")
            )
        if self.url is not None:
            _check_url(self.url)
            stray = [key for key in ("args", "env", "cwd") if getattr(self, key)]
            if stray:
                raise ValueError(f"{', '.join(stray)} only apply to command (stdio) servers")
        elif self.headers:
            raise ValueError("headers only apply to url (streamable HTTP) servers")
        elif self.oauth is not None:
            raise ValueError("oauth only applies to url (streamable HTTP) servers")
        if self.command is not None and not self.command.strip():
            raise ValueError("command must not be empty")
        if self.max_restart_delay < self.restart_delay:
            raise ValueError("max_restart_delay must be at least restart_delay")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        """``stdio`` or ``http``."""
        return "stdio" if self.command is not None else "http"


_HOST = re.compile(r"^[A-Za-z0-9._~%-]+$|^[0-9A-Fa-f:.]+$")


def _check_url(url: str) -> None:
    """Refuse, with the config, a URL no request could use (retrying would not fix it)."""
    shape = "give http://host[:port]/path or https://host[:port]/path"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"url {url!r} is malformed ({exc}); {shape}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"url {url!r} must be http:// or https:// with a host; {shape}")
    if any(char.isspace() for char in url) or not _HOST.match(parts.hostname):
        raise ValueError(f"url {url!r} has an invalid host {parts.hostname!r}; {shape}")
    if port == 0:
        raise ValueError(f"url {url!r} has port 0; {shape}")
