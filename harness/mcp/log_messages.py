"""Problems reach MCP clients as ``notifications/message`` log entries.

The server declares the ``logging`` capability (it sends these) and honours
``logging/setLevel``: a handshake-era connection that asked for a level gets only the
entries at that level or above (:class:`LogLevels`); one that did not gets them all. A
2026-07-28 request gets them only when it opted in with ``io.modelcontextprotocol/logLevel``
in its ``_meta``, at that level or above, as that protocol requires.

Each entry is ``{"file", "line", "entry", "message", "text"}`` from logger ``harness``:

- handshake-era connections get the host's problems (:meth:`harness.Host.problems`) at level
  ``error`` with their first ``tools/list`` (on that request's own stream, which every
  transport delivers, where a notification sent at the handshake could beat the client's
  event stream), and each problem a hot reload introduces (``reload/problems``) at level
  ``warning`` — the reload went through, that entry did not;
- 2026-07-28 connections keep no channel for them (the protocol lets ``notifications/message``
  ride only the stream of a request that opted in with a log level), so the host's problems
  ride each ``tools/list`` that opts in: after a reload's ``ToolsListChanged`` the client
  re-lists and sees the problems the edit left.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Iterable
from typing import Any, get_args

import mcp_types as types
from mcp_types import LOG_LEVEL_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..context import Context

_log = logging.getLogger("harness.mcp")
LOGGER = "harness"
LEVELS: tuple[str, ...] = get_args(types.LoggingLevel)
"""The levels of RFC 5424, the least severe first."""


def at_least(level: str, minimum: str | None) -> bool:
    """Whether an entry at ``level`` goes to a client that asked for ``minimum`` (None: all)."""
    if minimum not in LEVELS:
        return True
    return LEVELS.index(level) >= LEVELS.index(minimum)


class LogLevels:
    """The level each handshake-era connection asked for with ``logging/setLevel``."""

    def __init__(self) -> None:
        self._levels: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    def attach(self, server: Any, connection_of: Callable[[Any], Any]) -> None:
        """Serve ``logging/setLevel`` on ``server`` (which then declares ``logging``).

        Added as a request handler: the server's constructor argument for it warns that
        logging is deprecated (as of 2026-07-28; handshake-era clients still use it)."""

        async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
            self.set(connection_of(ctx.session), params.level)
            return types.EmptyResult()

        server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)

    def set(self, connection: Any, level: str) -> None:
        """Remember ``connection``'s level (for as long as the connection lives)."""
        self._levels[connection] = level

    def of(self, connection: Any) -> str | None:
        """The level ``connection`` asked for; None when it asked for none."""
        return self._levels.get(connection)


def entry(problem: Any) -> dict[str, Any]:
    """A problem as the ``data`` of a log entry."""
    return {
        "file": getattr(problem, "file", None),
        "line": getattr(problem, "line", None),
        "entry": getattr(problem, "entry", None),
        "message": getattr(problem, "message", str(problem)),
        "text": str(problem),
    }


def current(root: Context) -> list[Any]:
    """The host's problems, when a host serves this root (none otherwise)."""
    host = root.get("host")
    problems = getattr(host, "problems", None)
    if not callable(problems):
        return []
    try:
        return list(problems())
    except Exception:  # a broken host must not break serving
        _log.exception("cannot read the host's problems")
        return []


async def notify(
    connection: Any, level: str, problems: Iterable[Any], minimum: str | None = None
) -> None:
    """Send each problem to one handshake-era connection (best effort, as notifications are),
    unless it asked for a level above ``level``."""
    if not at_least(level, minimum):
        return
    for problem in problems:
        await connection.notify(
            "notifications/message", {"level": level, "logger": LOGGER, "data": entry(problem)}
        )


async def reply(ctx: Any, problems: Iterable[Any], minimum: str | None = None) -> None:
    """Send each problem at level ``error`` on the stream of the request of ``ctx``, when
    the request opted in (2026-07-28) or its connection did not ask for a level above
    (handshake era: ``minimum``)."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        minimum = (ctx.meta or {}).get(LOG_LEVEL_META_KEY)
        if minimum not in LEVELS:
            return  # no opt-in: no log entries
    if not at_least("error", minimum):
        return
    for problem in problems:
        message = types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(
                level="error", logger=LOGGER, data=entry(problem)
            )
        )
        await ctx.session.send_notification(message, related_request_id=ctx.request_id)
