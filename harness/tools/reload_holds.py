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

The plugins that depend on a service one of the fibers provides are unloaded and applied
again inside the same transaction (the runtime does it as the provider goes and returns):
their tools, and their pipeline listeners, count as the replaced fibers' own. Any tool
removed while a hold is open is waited for, and any pipeline listener gone meanwhile makes
every call wait.

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
    from ..events import EventBus
    from ..fiber import Fiber

PIPELINE = ("tools/pre-execute", "tools/execute", "tools/post-execute")
"""The stages whose listeners check or wrap every call: reloading one holds every call."""


class Hold:
    """One reload transaction, as calls see it."""

    __slots__ = ("bus", "checkers", "checks", "done", "fibers", "names", "stages", "tools", "who")

    def __init__(
        self, fibers: set[Fiber], tools: Mapping[str, Any], bus: EventBus, who: str
    ) -> None:
        self.fibers = fibers
        """The fibers being replaced."""
        self.tools = tools
        """The registry's live name → entry map (an entry's ``context`` registered it)."""
        self.bus = bus
        self.names: set[str] = set()
        """The tools removed since the transaction began (the registry adds them)."""
        self.stages = {stage: bus.listeners(stage) for stage in PIPELINE}
        """The pipeline's listeners when the transaction began."""
        self.checks = any(
            listener.owner is not None and within(listener.owner, fibers)
            for listeners in self.stages.values()
            for listener in listeners
        )
        """True once a replaced fiber (or a dependent) is known to check calls."""
        self.checkers: dict[tuple[str, int], Fiber] = {}
        """The replaced fibers that listened on a stage, by (name, id of their parent)."""
        for listeners in self.stages.values():
            for listener in listeners:
                fiber = None if listener.owner is None else listener.owner.fiber
                while fiber is not None and fiber not in fibers:
                    fiber = fiber.parent.fiber
                if fiber is not None:
                    self.checkers[(fiber.name, id(fiber.parent))] = fiber
        self.who = who
        """The replaced plugins, for messages (``plugin 'a', plugin 'b'``)."""
        self.done = anyio.Event()

    def concerns(self, name: str) -> bool:
        """Whether a call to ``name`` must wait for this transaction: a plugin that checks
        calls is being replaced, or the tool was removed meanwhile, or it belongs to one of
        the replaced fibers.

        Worked out when a call asks, so a reload that no call meets costs nothing per tool.
        """
        if self.checks or name in self.names:
            return True
        for stage, listeners in self.stages.items():  # a dependent's checks went away
            now = self.bus.listeners(stage)
            if any(listener not in now for listener in listeners):
                self.checks = True
                return True
        entry = self.tools.get(name)
        return entry is not None and within(entry.context, self.fibers)


def failed_checkers(hold: Hold) -> list[Fiber]:
    """The fibers that replaced ``hold``'s checkers and failed, the old version too (a
    rollback whose apply raised again): their checks are gone, so calls must be refused."""
    out: list[Fiber] = []
    for checker in hold.checkers.values():
        parent = checker.parent
        after = [
            fiber
            for fiber in checker.runtime.fibers
            if fiber.name == checker.name and fiber.parent is parent and fiber is not checker
        ]
        states = {fiber.state.value for fiber in after}
        if "failed" in states and "active" not in states:
            out.extend(fiber for fiber in after if fiber.state.value == "failed")
    return out


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
