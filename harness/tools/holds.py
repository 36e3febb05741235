"""Reload holds: to callers, a reload is atomic.

While the host swaps an entry's code (a hot reload, or a config change that restarts it), the
entry's tools and listeners are gone for a moment: the old fiber is disposed before the new
one applies. The host opens a :class:`Hold` over the fibers it replaces for the length of
that transaction (:meth:`~harness.tools.registry.ToolRegistry.reloading`). A call that
arrives meanwhile waits for the hold to end when it concerns the call:

- the call's tool belonged to one of the fibers (it runs on the new version afterwards, or
  on the old one when the transaction rolled back: it never finds the tool missing);
- one of the fibers wraps the pipeline, with a ``tools/pre-execute``, ``tools/execute`` or
  ``tools/post-execute`` listener: then every call waits, so none runs unchecked between the
  old listeners' removal and the new ones' arrival.

The wait is bounded by the tools service's ``reload_wait`` (seconds, default
:data:`~harness.tools.config.RELOAD_WAIT`). Past it the call is refused, never run: ``denied``
when a checker was reloading, ``timeout`` when only its tool's entry was, each saying who
and what to do. Calls that do not concern a hold never wait.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio

from .calls import ToolCall, ToolResult

if TYPE_CHECKING:
    from ..context import Context
    from ..fiber import Fiber

PIPELINE = ("tools/pre-execute", "tools/execute", "tools/post-execute")
"""The stages whose listeners check or wrap every call: reloading one holds every call."""


class Hold:
    """One reload transaction, as calls see it."""

    __slots__ = ("checks", "done", "fibers", "names", "tools", "who")

    def __init__(
        self, fibers: set[Fiber], tools: Mapping[str, Any], checks: bool, who: str
    ) -> None:
        self.fibers = fibers
        """The fibers being replaced."""
        self.tools = tools
        """The registry's live name → entry map (an entry's ``context`` registered it)."""
        self.names: set[str] = set()
        """The tools of the replaced fibers removed so far (the registry adds them)."""
        self.checks = checks
        """True when one of the replaced fibers listened on a pipeline stage."""
        self.who = who
        """The replaced plugins, for messages (``plugin 'a', plugin 'b'``)."""
        self.done = anyio.Event()

    def concerns(self, name: str) -> bool:
        """Whether a call to ``name`` must wait for this transaction: one of the fibers
        checks calls, or held the tool (it still does, or it was removed meanwhile).

        Worked out when a call asks, so a reload that no call meets costs nothing per tool.
        """
        if self.checks or name in self.names:
            return True
        entry = self.tools.get(name)
        return entry is not None and within(entry.context, self.fibers)


def within(ctx: Context, fibers: set[Fiber]) -> bool:
    """Whether ``ctx`` belongs to one of ``fibers`` or to a plugin below one."""
    fiber = ctx.fiber
    while fiber is not None:
        if fiber in fibers:
            return True
        fiber = fiber.parent.fiber
    return False


async def wait(holds: list[Hold], call: ToolCall, seconds: float) -> ToolResult | None:
    """Wait until no open hold concerns ``call``; None then, or the refusal past ``seconds``.

    ``holds`` is the live list the registry keeps (holds leave it as they end); the holds
    are looked at again after each wake-up, so a transaction that began meanwhile is waited
    for too, within the same bound.
    """
    with anyio.move_on_after(seconds):
        while True:
            for hold in holds:
                if hold.concerns(call.name):
                    break
            else:
                return None
            await hold.done.wait()
    late = [hold for hold in holds if hold.concerns(call.name)]
    if not late:  # it ended as the bound ran out
        return None
    who = ", ".join(dict.fromkeys(hold.who for hold in late))
    checker = [hold for hold in late if hold.checks]
    if checker:
        return ToolResult.failure(
            call,
            "denied",
            f"Tool denied: {', '.join(dict.fromkeys(h.who for h in checker))}, which checks "
            f"calls before they run, is being reloaded and the reload did not finish within "
            f"{seconds:g} seconds (the tools service's reload_wait); the call was refused, "
            "not run unchecked: try again, and see the host log if it persists",
        )
    return ToolResult.failure(
        call,
        "timeout",
        f"Tool {call.name} is being reloaded ({who}) and the reload did not finish within "
        f"{seconds:g} seconds (the tools service's reload_wait); the call did not run: "
        "try again, and see the host log if it persists",
    )
