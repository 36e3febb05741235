"""Problems reach MCP clients as ``notifications/message`` log entries.

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
from collections.abc import Iterable
from typing import Any

from ..context import Context

_log = logging.getLogger("harness.mcp")
LOGGER = "harness"


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


async def notify(connection: Any, level: str, problems: Iterable[Any]) -> None:
    """Send each problem to one handshake-era connection (best effort, as notifications are)."""
    for problem in problems:
        await connection.notify(
            "notifications/message", {"level": level, "logger": LOGGER, "data": entry(problem)}
        )


async def reply(session: Any, request_id: Any, problems: Iterable[Any]) -> None:
    """Send each problem on the stream of one request (dropped unless the request opted in)."""
    for problem in problems:
        await session.send_log_message(
            "error", entry(problem), logger=LOGGER, related_request_id=request_id
        )
