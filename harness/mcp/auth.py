"""The bearer token of ``harness run``: reading it from a request, and throttling guesses.

Shared by the MCP endpoint (:class:`~harness.mcp.http.transport.BearerGate`) and the web
console's gate, which take one :class:`TokenThrottle` between them, so a client cannot guess
twice as fast by alternating the two. Standard library only, like :mod:`.hosts`: the console
uses these two modules of MCP and nothing else.

**A client** (:func:`client_key`) is the address a request comes from: the TCP peer, or,
when the peer is a proxy the operator listed (``harness run --trust-proxy``), the address
that proxy forwarded (uvicorn resolves it before harness sees the request; nothing is
trusted by default). An IPv6 address counts by its /64 network, which one machine usually
holds whole; every loopback address (127.0.0.0/8, ``::1``) is one client, ``loopback``,
since one machine may send from any of them.

The throttle counts, per client, the requests that presented a wrong credential. The first
:data:`FREE_FAILURES` are answered 401, and the last of them locks the client out for 60 s;
each further wrong one (checked once a lock ends) doubles the lock, up to 15 minutes. While
locked, the client's token attempts are answered 429 with ``Retry-After`` without being
checked (a right guess would otherwise show). A wrong value the client already sent is no
new guess and is not counted again: a stale token in a client's config, or a stale cookie in
an open page, costs one failure, not a lock-out of everyone else on that address. A client
is forgotten an hour after its last failure; at most :data:`MAX_ADDRESSES` are remembered
(the longest quiet go first). A request with no credentials at all is no guess and is not
counted.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import ipaddress
import logging
import math
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_log = logging.getLogger("harness.auth")

FREE_FAILURES = 10
"""Wrong tokens an address may send before it is locked out."""
FIRST_LOCK = 60.0
"""Seconds of the first lock-out; each further failure doubles it."""
LONGEST_LOCK = 900.0
FORGET_AFTER = 3600.0
"""Seconds after its last failure when an address starts afresh."""
MAX_ADDRESSES = 10_000
REMEMBERED_VALUES = 16
"""Distinct wrong values remembered per client, so that sending one again is not counted."""
LOOPBACK = "loopback"


def bearer_token(header: str | bytes | None) -> str | None:
    """The credentials of an ``Authorization: Bearer ...`` header (the scheme in any case).

    None for no header, another scheme, or an empty token.
    """
    if header is None:
        return None
    text = header.decode("latin-1") if isinstance(header, bytes) else header
    parts = text.strip().split(None, 1)
    if len(parts) != 2 or parts[0].lower() != "bearer":
        return None
    return parts[1].strip() or None


def same_token(given: str, token: str) -> bool:
    """Constant-time comparison (of UTF-8 bytes, so any given text compares)."""
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), token.encode())


def client_key(scope: Any) -> str:
    """Which client a request counts as (see the module docstring): its address, an IPv6
    one by its /64, any loopback address as :data:`LOOPBACK`."""
    client = scope.get("client")
    address = str(client[0]) if client else ""
    if len(address) > 64:  # no IP address is this long: what a proxy forwarded, cut short
        return address[:64]
    return _key_of(address)


@functools.lru_cache(maxsize=4096)  # every request of a gated or counted client asks
def _key_of(address: str) -> str:
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address or "unknown"
    if parsed.version == 6 and parsed.ipv4_mapped is not None:
        parsed = parsed.ipv4_mapped
    if parsed.is_loopback:
        return LOOPBACK
    if parsed.version == 6:
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)


@dataclass(slots=True)
class _Record:
    failures: int
    last: float
    locked_until: float
    seen: list[int] = field(default_factory=list)
    """Digests of the wrong values counted, the newest last."""


class TokenThrottle:
    """Failed token attempts per client address, and the lock-outs they earn."""

    def __init__(
        self,
        free: int = FREE_FAILURES,
        first_lock: float = FIRST_LOCK,
        longest_lock: float = LONGEST_LOCK,
        forget_after: float = FORGET_AFTER,
        max_addresses: int = MAX_ADDRESSES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.free = free
        self.first_lock = first_lock
        self.longest_lock = longest_lock
        self.forget_after = forget_after
        self.max_addresses = max_addresses
        self.clock = clock
        self._records: OrderedDict[str, _Record] = OrderedDict()
        """By last failure, the oldest first."""
        self._salt = secrets.token_bytes(16)
        """Keys the digests of wrong values (no guess is kept in the clear)."""

    def __len__(self) -> int:
        return len(self._records)

    def attempt(self, key: str, given: str, token: str) -> bool | int:
        """Check one credential from ``key``: True when right, False when wrong (and counted
        unless ``key`` sent this value before), or the seconds to wait when ``key`` is
        locked out (the credential then is not checked)."""
        wait = self.retry_after(key)
        if wait is not None:
            return wait
        if same_token(given, token):
            return True
        self.failed(key, given)
        return False

    def retry_after(self, key: str) -> int | None:
        """Whole seconds until ``key`` may try a token again; None when it may now."""
        record = self._records.get(key)
        if record is None:
            return None
        wait = record.locked_until - self.clock()
        return math.ceil(wait) if wait > 0 else None

    def failed(self, key: str, given: str | None = None) -> None:
        """Count one wrong credential from ``key`` (locking it out past the free ones); a
        ``given`` value ``key`` already sent is not counted again."""
        now = self.clock()
        records = self._records
        while records:  # the quiet ones first: forget those past the window
            oldest = next(iter(records.values()))
            if now - oldest.last < self.forget_after:
                break
            records.popitem(last=False)
        record = records.pop(key, None) or _Record(0, now, now)
        records[key] = record
        record.last = now
        if given is not None:
            digest = hmac.new(self._salt, given.encode("utf-8", "surrogatepass"), hashlib.sha256)
            value = int.from_bytes(digest.digest()[:8], "big")
            if value in record.seen:
                return  # the same wrong value again: no new guess
            record.seen.append(value)
            del record.seen[:-REMEMBERED_VALUES]
        record.failures += 1
        over = record.failures - self.free
        if over >= 0:
            lock = min(self.first_lock * 2.0 ** min(over, 32), self.longest_lock)
            record.locked_until = now + lock
            _log.warning(
                "%d wrong tokens from %s: its token attempts are refused for %d s",
                record.failures,
                key,
                math.ceil(lock),
            )
        while len(records) > self.max_addresses:
            records.popitem(last=False)


def too_many(retry_after: int) -> tuple[bytes, tuple[bytes, bytes]]:
    """The body of the 429 answer, and its ``Retry-After`` header."""
    body = (
        '{"error": "too many wrong tokens from this address: try again in '
        f'{retry_after} s (Retry-After)"}}'
    ).encode()
    return body, (b"retry-after", str(retry_after).encode())
