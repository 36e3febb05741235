"""What the providers built on a Stainless SDK (openai, anthropic) share: the base URL check,
the SDK's async client made from the entry's config, its close, and requests retried by
:func:`~.retries.with_retries`. A provider adds its config and ``_stream``, one request."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar
from urllib.parse import urlsplit

from ..service import Service
from .base import ChatRequest, Completion
from .retries import Endpoint, with_retries

if TYPE_CHECKING:
    from ..context import Context


class SDKConfig(Protocol):
    """The config fields every SDK provider has."""

    @property
    def model(self) -> str: ...
    @property
    def base_url(self) -> str: ...
    @property
    def api_key(self) -> str: ...
    @property
    def timeout(self) -> float: ...
    @property
    def max_retries(self) -> int: ...
    @property
    def retry_backoff(self) -> float: ...
    @property
    def headers(self) -> dict[str, str]: ...


class SDKClient(Protocol):
    """An SDK's async client, as far as the provider closes it."""

    async def close(self) -> None: ...


C = TypeVar("C", bound=SDKConfig)


def http_base_url(value: str, examples: str) -> str:
    """``value`` without a trailing ``/``; raise ValueError (naming ``examples``) when it is
    not an http(s) URL with a host."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"base_url {value!r} is not an http(s) URL; write it like {examples}")
    return value.rstrip("/")


class SDKProvider(Service, Generic[C]):
    """An ``llm`` service over an SDK's async client (``client``): the SDK retries nothing
    itself (``max_retries=0``), :meth:`complete` retries, so a stream that breaks is retried
    too. A provider declares its client's own class as the type of ``client``."""

    provides = ("llm",)
    client: SDKClient

    def __init__(
        self,
        ctx: Context,
        config: C,
        sdk: ModuleType,
        client: Callable[..., SDKClient],
        **hints: str,
    ) -> None:
        """``sdk`` is the SDK's module (its errors and ``Timeout``), ``client`` its async
        client class; ``hints`` are :class:`~.retries.Endpoint`'s ``key_hint`` and
        ``not_found_hint``."""
        super().__init__(ctx, "llm")
        self.config = config
        self._sdk = sdk
        self.client = client(
            api_key=config.api_key or "not-needed",
            base_url=config.base_url,
            timeout=sdk.Timeout(config.timeout, connect=min(config.timeout, 30.0)),
            max_retries=0,  # retried here, so a stream that breaks is retried too
            default_headers=config.headers or None,
        )
        self._endpoint = Endpoint(
            config.base_url, config.model, config.timeout, config.retry_backoff, **hints
        )

    async def stop(self) -> None:
        await self.client.close()

    async def complete(
        self, request: ChatRequest, on_text: Callable[[str], None] | None = None
    ) -> Completion:
        """One streamed request, retried as the config says."""
        return await with_retries(
            lambda show: self._stream(request, show),
            on_text,
            self._sdk,
            self._endpoint,
            self.config.max_retries,
        )

    async def _stream(self, request: ChatRequest, show: Callable[[str], None]) -> Completion:
        """One request, its text shown through ``show`` as it streams."""
        raise NotImplementedError
