"""The streamable HTTP transport's size caps, applied while the answer is read.

The SDK reads a JSON answer with ``response.aread()`` (whole, unbounded) and caps only each
event of an SSE answer (``max_sse_event_size``). harness gives the SDK an ``httpx2`` client
whose response hook wraps every POST answer's body in :class:`CappedBody`: it counts the bytes
as they arrive and stops at the cap of the request's method (:mod:`.caps`). It raises the
exception the SDK already turns into an error answer for that request — a ``StreamError``
for a JSON body, an ``SSEError`` for an event stream — so the call fails at once with
:func:`~.caps.cut_message` in the text (``tests/gateway/test_attacks.py`` pins this).

Requests ask for ``Accept-Encoding: identity``; a compressed answer is refused, since its
size on the wire says nothing about its size once inflated.

:class:`Refusal` keeps the last answer of 401 or 403, with its ``WWW-Authenticate``
challenge: the SDK turns both into "Server returned an error response", and the messages say
instead that the server requires authorisation (:mod:`.failures`). A call keeps its own in
:data:`CALL_REFUSAL` too (the SDK sends each request from a copy of its caller's context),
so another call's answer meanwhile cannot hide why it failed.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpx2

from .caps import Caps, cut_message


class CutJson(httpx2.StreamError):
    """A JSON answer passed its cap (the SDK answers the request with a parse error)."""


class CutEvents(httpx2.SSEError):
    """An event-stream answer passed its cap (the SDK answers with a stream failure)."""


class CappedBody(httpx2.AsyncByteStream):
    """A response body that raises once more than ``limit`` bytes came in."""

    def __init__(
        self, inner: Any, limit: int, message: str, error: type[Exception], refuse: bool
    ) -> None:
        self.inner = inner
        self.limit = limit
        self.message = message
        self.error = error
        self.refuse = refuse

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.refuse:
            raise self.error(
                "the server compressed its answer, which harness did not ask for (its size "
                "could not be bounded); serve it uncompressed"
            )
        seen = 0
        chunks = self.inner.__aiter__()
        try:
            async for chunk in chunks:
                seen += len(chunk)
                if seen > self.limit:
                    raise self.error(self.message)
                yield chunk
        finally:  # left early: close the inner generator now, not when it is collected
            close = getattr(chunks, "aclose", None)
            if close is not None:
                await close()

    async def aclose(self) -> None:
        await self.inner.aclose()


def capping_hook(caps: Caps) -> Callable[[httpx2.Response], Awaitable[None]]:
    """An ``httpx2`` response hook capping every POST answer's body by its request's method.

    A hook, not a transport: it runs for every transport the client picks (proxies too),
    before anything reads the body.
    """

    async def cap(response: httpx2.Response) -> None:
        request = response.request
        if request.method != "POST":
            return  # the GET stream: each event is capped by the SDK
        method = _method_of(request.content)
        kind = response.headers.get("content-type", "").lower()
        error: type[Exception] = CutEvents if kind.startswith("text/event-stream") else CutJson
        encoding = response.headers.get("content-encoding", "identity").lower()
        response.stream = CappedBody(
            response.stream,
            caps.of(method)[0],
            cut_message(method, caps),
            error,
            refuse=encoding not in ("", "identity"),
        )

    return cap


def _method_of(body: bytes) -> str | None:
    try:
        message = json.loads(body)
    except ValueError:
        return None
    method = message.get("method") if isinstance(message, dict) else None
    return method if isinstance(method, str) else None


@dataclass(slots=True)
class Refusal:
    """The server's last answer of HTTP 401 or 403 (0 once it answers a request again)."""

    status: int = 0
    challenge: str = ""
    """Its ``WWW-Authenticate`` header, as sent."""

    async def hook(self, response: httpx2.Response) -> None:
        """An ``httpx2`` response hook: note a refusal (here and in the call's own record,
        :data:`CALL_REFUSAL`), forget it on an answer."""
        if response.status_code in (401, 403):
            self.status = response.status_code
            self.challenge = response.headers.get("www-authenticate", "")
            call = CALL_REFUSAL.get()
            if call is not None:
                call.status, call.challenge = self.status, self.challenge
        elif response.status_code < 400 and response.request.method == "POST":
            self.status = 0


CALL_REFUSAL: ContextVar[Refusal | None] = ContextVar("harness_call_refusal", default=None)
"""The refusal met by the requests of the call running in this context (set by the call)."""
