"""Where the kernel meets the call journal (``harness:store``, :mod:`harness.store.journal`).

A call with a key (``ToolCall.key``) to a tool that is not ``read_only`` runs its stage 2
through the journal while a store is loaded; every other call never looks at it, so an
unkeyed or read-only call costs what it cost before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from .calls import ToolCall, ToolResult
from .definition import ToolDefinition


class Journal(Protocol):
    """What the kernel asks of the journal."""

    async def run(
        self, call: ToolCall, tool: ToolDefinition, step: Callable[[], Awaitable[ToolResult]]
    ) -> ToolResult:
        """``step()`` at most once per key, or the key's recorded answer."""
        ...


def journal_of(journal: Journal | None, tool: ToolDefinition | None) -> Journal | None:
    """The journal that records a keyed call of ``tool``: None when no store is loaded, the
    tool is unknown (the call ends ``unknown_tool``) or it is ``read_only``."""
    if journal is None or tool is None or tool.annotations.read_only:
        return None
    return journal
