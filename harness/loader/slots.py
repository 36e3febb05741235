"""The entries of a :class:`~harness.host.Host`, one :class:`Slot` each, and the
operations that change them as transactions.

A slot holds an entry's plan, its running fiber, the code that fiber runs and the plan it
was applied with (``good``), and why the last change failed. :meth:`Slots.reconcile`
brings the slots in line with a config's plans (a new config keeps a running version
serving when its change fails); :meth:`Slots.replace` swaps the fibers of some slots for
new code all or nothing, which is what hot reload and a changed ``name`` use.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

from ..context import Context
from ..errors import ConfigError, HarnessError
from ..fiber import Fiber, FiberState
from ..tools.service import ToolsService
from .config import Plan
from .config_problems import Problem
from .resolve import Resolved, ResolveError, Resolver, source_location

REGISTRIES = ("tools", "resources", "prompts")
"""The root services whose lists follow the order of the entries (:mod:`harness.registry`)."""


@dataclass
class Slot:
    """One entry: its plan, its fiber and the code it runs, and its problems."""

    plan: Plan
    fiber: Fiber | None = None
    resolved: Resolved | None = None
    good: Plan | None = None
    """The plan the running fiber was applied with."""
    error: Problem | None = None
    """Why the last change failed, or why the entry cannot load."""
    extra: list[Problem] = field(default_factory=list)


class Slots:
    """Every entry's slot, in config order, in one root context."""

    def __init__(self, root: Context, resolver: Resolver) -> None:
        self.root = root
        self.resolver = resolver
        self.by_id: dict[str, Slot] = {}
        """The slots by entry id, in config order."""
        self.implicit_tools: Fiber | None = None
        """The tools service loaded with defaults when no entry configures it."""

    async def reconcile(self, plans: list[Plan]) -> None:
        """Bring the slots in line with ``plans``: drop the entries gone, apply the others."""
        wanted = {plan.id for plan in plans}
        for entry_id in reversed(list(self.by_id)):
            if entry_id not in wanted:
                slot = self.by_id.pop(entry_id)
                if slot.fiber is not None:
                    await slot.fiber.dispose()
        await self.ensure_tools(plans)
        slots: dict[str, Slot] = {}
        for plan in plans:
            slot = self.by_id.get(plan.id) or Slot(plan)
            slots[plan.id] = slot
            await self.apply(slot, plan)
        self.by_id = slots
        positions = {plan.id: index for index, plan in enumerate(plans)}
        for name in REGISTRIES:  # each keeps its entry's place in cordis.yml, whatever reloads
            registry = self.root.get(name)
            if registry is not None:
                registry.order_by(positions)

    async def ensure_tools(self, plans: list[Plan]) -> None:
        """Load the tools service with defaults unless an entry configures it."""
        configured = any(p.name == "harness:tools" and p.enabled and not p.errors for p in plans)
        if configured and self.implicit_tools is not None:
            await self.implicit_tools.dispose()
            self.implicit_tools = None
        elif not configured and self.implicit_tools is None:
            self.implicit_tools = await self.root.plugin(ToolsService)

    async def apply(self, slot: Slot, plan: Plan) -> None:
        """Run ``plan`` in ``slot``: restart, replace or drop its fiber as the plan says;
        a running version keeps serving when the new one cannot load."""
        slot.plan = plan
        slot.extra = []
        if plan.entry.is_group:
            # a group loads nothing itself, but its problems (a 'name', a 'config', an
            # unknown key) are reported like any entry's
            slot.error = plan.errors[0] if plan.errors else None
            slot.extra = list(plan.errors[1:])
            return
        running = serving(slot)
        if plan.errors:
            slot.error = plan.errors[0]
            slot.extra = plan.errors[1:]
            if not running:
                await self.drop(slot)
            return  # a running old version keeps serving
        if not plan.enabled:
            slot.error = None
            await self.drop(slot)
            return
        good = slot.good if running else None
        if good is not None and good.key == plan.key and slot.resolved is not None:
            if good.config == plan.config and _same_inject(good, plan):
                slot.error = None
                return
            await self.restart(slot, plan, good)
            return
        try:
            resolved = self.resolver.resolve_plugin(plan.name or "", plan.base)
        except ResolveError as exc:
            slot.error = self.problem(plan, "name", str(exc))
            if not running:
                await self.drop(slot)
            return
        await self.replace([(slot, resolved, plan)])

    async def restart(self, slot: Slot, plan: Plan, good: Plan) -> None:
        """Same code, new config or inject: restart only this plugin, rolling back on failure."""
        fiber = slot.fiber
        assert fiber is not None
        assert slot.resolved is not None
        if not _same_inject(good, plan):
            await self.replace([(slot, slot.resolved, plan)])
            return
        with self.holding([fiber]):
            await self._restart(slot, plan, good, fiber)

    async def _restart(self, slot: Slot, plan: Plan, good: Plan, fiber: Fiber) -> None:
        assert slot.resolved is not None
        try:
            await fiber.update(plan.config)
        except ConfigError as exc:  # refused: the old config keeps running
            slot.error = self.problem(plan, "config", str(exc))
            return
        except Exception:  # the apply failed; the fiber holds the error
            pass
        if fiber.state is not FiberState.FAILED:
            slot.good, slot.error = plan, None
            return
        failure = self.failure_problem(plan, fiber, slot.resolved)
        with contextlib.suppress(Exception):
            await fiber.update(good.config)
        slot.error = failure

    async def replace(
        self,
        changes: list[tuple[Slot, Resolved, Plan]],
        undo: Callable[[], None] | None = None,
    ) -> Problem | None:
        """Swap each slot's fiber for ``resolved`` applied with ``plan``, all or nothing.

        The old fibers are disposed (last first) and the new ones loaded in order. When one
        fails, the new ones are disposed, ``undo`` runs, every slot that was serving gets
        its previous version back and the failure is returned (and kept on its slot); a slot
        with no previous version keeps its new fiber, failed or not.

        Calls that the swap concerns wait for it (see :meth:`holding`).
        """
        running = [slot.fiber for slot, _, _ in changes if slot.fiber is not None and serving(slot)]
        with self.holding(running):
            return await self._replace(changes, undo)

    def holding(self, fibers: list[Fiber]) -> contextlib.AbstractContextManager[object]:
        """The tools service's hold over ``fibers`` for one transaction: calls to their
        tools, or every call when one of them checks calls, wait until it ends (to callers
        a reload is atomic, see :mod:`harness.tools.reload_holds`)."""
        tools = self.root.get("tools")
        if tools is None or not fibers:
            return contextlib.nullcontext()
        hold: contextlib.AbstractContextManager[object] = tools.reloading(fibers)
        return hold

    async def _replace(
        self,
        changes: list[tuple[Slot, Resolved, Plan]],
        undo: Callable[[], None] | None,
    ) -> Problem | None:
        before = [(slot.resolved, slot.good if serving(slot) else None) for slot, _, _ in changes]
        for slot, _, _ in reversed(changes):
            await self.drop(slot)
        loaded: list[Fiber] = []
        failure: Problem | None = None
        for _, resolved, plan in changes:
            fiber = await self.load(resolved, plan)
            loaded.append(fiber)
            if fiber.state is FiberState.FAILED:
                failure = self.failure_problem(plan, fiber, resolved)
                break
        if failure is None:
            for (slot, resolved, plan), fiber in zip(changes, loaded, strict=True):
                slot.fiber, slot.resolved, slot.good, slot.error = fiber, resolved, plan, None
            return None
        for fiber, (_, good) in reversed(list(zip(loaded, before, strict=False))):
            if good is not None:
                await fiber.dispose()
        if undo is not None:
            undo()
        for index, ((slot, resolved, plan), (old, good)) in enumerate(
            zip(changes, before, strict=True)
        ):
            if good is not None and old is not None:
                slot.fiber = await self.load(old, good)
            elif index < len(loaded):  # nothing to go back to: the new fiber stays
                fiber = loaded[index]
                slot.fiber, slot.resolved, slot.error = fiber, resolved, None
                slot.good = None if fiber.state is FiberState.FAILED else plan
        if before[len(loaded) - 1][1] is not None:
            changes[len(loaded) - 1][0].error = failure
        return failure

    async def drop(self, slot: Slot) -> None:
        """Dispose of the slot's fiber, if any."""
        if slot.fiber is not None:
            await slot.fiber.dispose()
            slot.fiber = None

    async def load(self, resolved: Resolved, plan: Plan) -> Fiber:
        """Apply ``resolved`` with ``plan``'s config; the fiber holds any error."""
        fiber = self.root.plugin(
            resolved.plugin, plan.config, name=plan.id, inject=plan.entry.inject
        )
        with contextlib.suppress(Exception):  # the fiber holds the error; status() reports it
            await fiber
        return fiber

    def problem(self, plan: Plan, key: str, message: str) -> Problem:
        """A problem at ``key`` of ``plan``'s entry."""
        where = plan.entry.where_of(key)
        return Problem.at(where.file, where.line, plan.id, message)

    def failure_problem(self, plan: Plan, fiber: Fiber, resolved: Resolved | None) -> Problem:
        """The problem of a failed fiber, at its entry's ``config`` or ``name``."""
        key = "config" if isinstance(fiber.error, ConfigError) else "name"
        return self.problem(plan, key, failure_text(fiber.error, resolved))

    def describe_failure(self, slot: Slot) -> str:
        """Why the slot's fiber failed, in words."""
        assert slot.fiber is not None
        return failure_text(slot.fiber.error, slot.resolved)


def serving(slot: Slot) -> bool:
    """True when the slot's fiber runs a version that could be restored."""
    return slot.fiber is not None and slot.fiber.state is not FiberState.FAILED


def failure_text(error: BaseException | None, resolved: Resolved | None) -> str:
    if error is None:
        return "failed"
    if isinstance(error, HarnessError):
        return str(error)
    location = source_location(error, resolved.source if resolved else None)
    text = f"apply raised {type(error).__name__}: {error}"
    return f"{text} ({location[0]}:{location[1]})" if location else text


def _same_inject(a: Plan, b: Plan) -> bool:
    return bool(a.entry.inject == b.entry.inject)
