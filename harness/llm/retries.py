"""Retries and failure messages shared by the providers built on Stainless SDKs (openai, anthropic).

Both SDKs raise the same family of errors (``APITimeoutError``, ``APIConnectionError``,
``APIStatusError`` with ``status_code``, ``body`` and ``response``), so one loop retries them:
429, 5xx (529 "overloaded" included), connection failures, idle timeouts, error events in the
stream that say the server is overloaded or failed, and streams that break before any text was
shown, with exponential backoff (``Retry-After`` honoured up to 60 s). Anything else fails at
once with what to check. The provider gives the hints only it knows (where its key comes from).
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import anyio

from .base import Completion, LLMError

_log = logging.getLogger("harness.llm")
MAX_RETRY_AFTER = 60.0

_STATUS_OF_ERROR = {
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
    "timeout_error": 504,
}
"""An error event inside a 200 stream, by its type, as the HTTP status it stands for."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """What the messages name: the server, its model, and where its key is set."""

    where: str
    model: str
    timeout: float
    backoff: float
    key_hint: str = "check the entry's api_key"
    not_found_hint: str = "check base_url"


async def with_retries(
    attempt: Callable[[Callable[[str], None]], Awaitable[Completion]],
    on_text: Callable[[str], None] | None,
    sdk: ModuleType,
    endpoint: Endpoint,
    max_retries: int,
) -> Completion:
    """Run ``attempt(show)`` until it answers, retrying what is worth it, or raise LLMError."""
    shown = False

    def show(text: str) -> None:
        nonlocal shown
        shown = True
        if on_text is not None:
            on_text(text)

    attempts = max_retries + 1
    for number in range(1, attempts + 1):
        try:
            return await attempt(show)
        except Exception as exc:
            retry, wait, message = classify(exc, sdk, endpoint, number)
            if not retry or shown or number == attempts:
                if shown and retry:
                    message += " (not retried: part of the answer was already shown)"
                raise LLMError(message, code_of(exc, sdk)) from None
            _log.info("%s; retrying in %.2f s (attempt %d of %d)", message, wait, number, attempts)
            await anyio.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


def classify(
    exc: Exception, sdk: ModuleType, endpoint: Endpoint, attempt: int
) -> tuple[bool, float, str]:
    """``(retry, seconds to wait, message)`` for a failed attempt."""
    where = endpoint.where
    wait = min(endpoint.backoff * 2 ** (attempt - 1), 30.0)
    tried = f" after {attempt} attempt{'s' if attempt > 1 else ''}"
    if isinstance(exc, sdk.APITimeoutError) or _is_timeout(exc):
        return (
            True,
            wait,
            f"no answer from the model server at {where} within {endpoint.timeout:g} s"
            f"{tried}; check that it is running, or raise the entry's timeout",
        )
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc
        if type(cause).__name__ in ("RemoteProtocolError", "ReadError"):
            return True, wait, _broken(where, tried, cause)
        return (
            True,
            wait,
            f"cannot reach the model server at {where}{tried} ({type(cause).__name__}: "
            f"{cause}); check that the server is running and that base_url is right",
        )
    if isinstance(exc, sdk.APIStatusError):
        return _status(exc, endpoint, wait, tried)
    if isinstance(exc, sdk.APIError) and _error_type(exc):  # an error event in the stream
        return _event(exc, endpoint, wait, tried)
    if is_broken_stream(exc):
        return True, wait, _broken(where, tried, exc)
    _log.warning("unexpected error from the model server at %s", where, exc_info=exc)
    return (
        False,
        0,
        f"unexpected error from the model server at {where}: {type(exc).__name__}: {exc}",
    )


def _status(exc: Any, endpoint: Endpoint, wait: float, tried: str) -> tuple[bool, float, str]:
    where = endpoint.where
    status = int(exc.status_code)
    detail = _detail(exc)
    if status < 400:  # an error event in the stream of a 200 answer
        return _event(exc, endpoint, wait, tried)
    if status == 429 or status >= 500:
        after = _retry_after(exc)
        if after is not None:
            wait = min(after, MAX_RETRY_AFTER)
        kind = {429: "rate-limited the request", 529: "is overloaded"}.get(status, "failed")
        return True, wait, f"the model server at {where} {kind} (HTTP {status}){tried}: {detail}"
    if status in (401, 403):
        return (
            False,
            0,
            f"the model server at {where} refused the credentials (HTTP {status}): {detail}; "
            f"{endpoint.key_hint}",
        )
    if status == 404:
        return (
            False,
            0,
            f"HTTP 404 from {where}: {detail}; {endpoint.not_found_hint} and that the server "
            f"has the model {endpoint.model!r}",
        )
    return False, 0, f"the model server at {where} rejected the request (HTTP {status}): {detail}"


def _event(exc: Any, endpoint: Endpoint, wait: float, tried: str) -> tuple[bool, float, str]:
    """An error event in the middle of a stream: retried when it says overloaded or failed."""
    kind = _error_type(exc)
    detail = _detail(exc)
    if _STATUS_OF_ERROR.get(kind, 400) >= 429:
        return (
            True,
            wait,
            f"the model server at {endpoint.where} sent an error event ({kind}){tried}: {detail}",
        )
    return (
        False,
        0,
        f"the model server at {endpoint.where} stopped the answer with an error event "
        f"({kind or 'unknown'}): {detail}",
    )


def _broken(where: str, tried: str, cause: BaseException) -> str:
    return (
        f"the answer from the model server at {where} broke off mid-stream{tried} "
        f"({type(cause).__name__}: {cause})"
    )


def _error_type(exc: Any) -> str:
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    return str(error.get("type") or "") if isinstance(error, dict) else ""


def _detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:500]
    return str(getattr(exc, "message", exc))[:500]


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    value = None if response is None else response.headers.get("retry-after")
    try:
        return None if value is None else max(0.0, float(value))
    except ValueError:
        return None


def code_of(exc: Exception, sdk: ModuleType) -> str:
    """What failed, in a word (an :class:`LLMError`'s ``code``)."""
    if isinstance(exc, sdk.APITimeoutError) or _is_timeout(exc):
        return "timeout"
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc
        broken = type(cause).__name__ in ("RemoteProtocolError", "ReadError")
        return "stream_broken" if broken else "connection_error"
    if isinstance(exc, sdk.APIStatusError) and exc.status_code >= 400:
        return str(exc.status_code)
    if isinstance(exc, sdk.APIError) and _error_type(exc):  # an error event in the stream
        return _error_type(exc)
    return "stream_broken" if is_broken_stream(exc) else "error"


def _is_timeout(exc: Exception) -> bool:
    """A read timeout raised by the HTTP library while the stream was being read."""
    return any(
        kind.__name__ == "TimeoutException" and kind.__module__.split(".")[0].startswith("httpx")
        for kind in type(exc).__mro__
    )


def is_broken_stream(exc: Exception) -> bool:
    """A transport failure while reading the stream (the SDK's HTTP library raises it)."""
    if isinstance(exc, EOFError | ConnectionError):
        return True
    return any(
        kind.__name__ in ("TransportError", "HTTPError", "StreamError")
        and kind.__module__.split(".")[0].startswith("httpx")
        for kind in type(exc).__mro__
    )


def is_local(host: str) -> bool:
    """True for a server on this machine or a private network (where a key may be absent)."""
    if host == "localhost" or host.endswith((".local", ".localhost", ".internal", ".lan")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "." not in host  # a bare host name on the local network
    return address.is_loopback or address.is_private or address.is_link_local
