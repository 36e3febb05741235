"""The headers of a request the fast path (:mod:`.fast_path`) may answer: those the SDK's
streamable HTTP transport would let through to dispatch, unchanged.

The SDK checks a 2026-07-28 POST's ``Content-Type`` (``application/json``, else 400), its
``Host`` (one of the allowed names, else 421) and ``Origin`` (absent or allowed, else 403),
its ``Accept`` (JSON and SSE, else 406) and that no routing header comes twice. Any request
that would fail one of these, and any request with a repeated header or an
``Mcp-Session-Id``, is not plain: the SDK answers it.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

_CACHE_SIZE = 256
"""Distinct (Host, Origin, Accept, Content-Type) verdicts remembered, so that hostile
clients sending many values cannot grow the cache without bound."""


class HeaderChecks:
    """The SDK's header checks, remembered per distinct set of the values they read."""

    def __init__(self, hosts: Sequence[str]) -> None:
        self.hosts = list(hosts)
        self.origins = [f"http://{host}" for host in hosts] + [f"https://{host}" for host in hosts]
        self._verdicts: dict[tuple[str | None, ...], bool] = {}

    def plain(self, raw: list[tuple[bytes, bytes]]) -> dict[str, str] | None:
        """The request's headers (lower-case names) when the SDK would accept them as they
        are for a 2026-07-28 request, else None."""
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in raw}
        if len(headers) != len(raw) or "mcp-session-id" in headers:
            return None  # a repeated header (the SDK reads its first copy) or a session
        if headers.get("mcp-protocol-version") not in MODERN_PROTOCOL_VERSIONS:
            return None
        key = (
            headers.get("host"),
            headers.get("origin"),
            headers.get("accept"),
            headers.get("content-type"),
        )
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = self._accepts(*key)
            if len(self._verdicts) >= _CACHE_SIZE:
                self._verdicts.clear()
            self._verdicts[key] = verdict
        return headers if verdict else None

    def _accepts(
        self, host: str | None, origin: str | None, accept: str | None, content_type: str | None
    ) -> bool:
        if content_type is None or not content_type.lower().startswith("application/json"):
            return False
        if not host or not matches(host, self.hosts):
            return False
        if origin and not matches(origin, self.origins):
            return False
        kinds = [kind.strip().split(";")[0].strip().lower() for kind in (accept or "").split(",")]
        wildcard = "*/*" in kinds
        json = wildcard or "application/json" in kinds or "application/*" in kinds
        sse = wildcard or "text/event-stream" in kinds or "text/*" in kinds
        return json and sse


def matches(value: str, allowed: Sequence[str]) -> bool:
    """Whether ``value`` is one of ``allowed``, where ``name:*`` stands for any port."""
    if value in allowed:
        return True
    return any(pattern.endswith(":*") and value.startswith(pattern[:-1]) for pattern in allowed)
