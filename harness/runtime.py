"""State shared by a root context and every context below it.

The runtime owns the event bus, the service table, the live fibers and the root's task
group. It is where service changes turn into fiber transitions: publishing a service applies
the fibers that were waiting for it, withdrawing one unloads its dependents back to pending.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from weakref import WeakSet

from anyio.abc import TaskGroup

from .errors import DependencyCycle, HarnessError, ServiceConflict
from .events import EventBus

if TYPE_CHECKING:
    from .context import Context
    from .fiber import Fiber


@dataclass(slots=True)
class ServiceSlot:
    """One provided service: the instance, who provides it, and whether it is visible yet."""

    name: str
    instance: Any
    owner: Context
    published: bool = False
    readers: WeakSet[Context] = field(default_factory=WeakSet)
    """The contexts that keep this service's view as an attribute (``ctx.<name>``)."""


class Runtime:
    """The shared state of one root context."""

    def __init__(self) -> None:
        self.bus = EventBus()
        self.services: dict[str, ServiceSlot] = {}
        self.fibers: dict[Fiber, None] = {}
        self.group: TaskGroup | None = None
        self.base_dir = Path.cwd()
        self.ready = False
        """True once the root marked the initial load settled (``ready`` was emitted)."""
        self.stopping = False
        """True once the host began to stop (:meth:`.context.Context.mark_stopping`)."""

    # -- tasks -------------------------------------------------------------------------

    def spawn(self, func: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Run ``func`` on the root's task group."""
        if self.group is None:
            raise HarnessError(
                "the root context is not running; enter it first: async with Context() as ctx"
            )
        self.group.start_soon(func)

    # -- services ----------------------------------------------------------------------

    def reserve(self, name: str, instance: Any, owner: Context) -> ServiceSlot:
        """Claim ``name`` for ``owner``; raise :class:`ServiceConflict` when it is held."""
        held = self.services.get(name)
        if held is not None:
            raise ServiceConflict(
                f"service {name!r} is already provided by {held.owner.describe()}; "
                f"{owner.describe()} cannot provide it too (unload the holder first)"
            )
        slot = ServiceSlot(name, instance, owner)
        self.services[name] = slot
        return slot

    def available(self, name: str) -> Any:
        """The instance of a published service, or None."""
        slot = self.services.get(name)
        return slot.instance if slot is not None and slot.published else None

    def missing(self, fiber: Fiber) -> list[str]:
        """The required services of ``fiber`` that are not published."""
        services = self.services
        return [
            name
            for name, required in fiber.inject.items()
            if required and not ((slot := services.get(name)) and slot.published)
        ]

    async def publish(self, owner: Context) -> None:
        """Make the services ``owner`` reserved visible, then apply the fibers waiting on them."""
        names = [
            slot.name
            for slot in self.services.values()
            if slot.owner is owner and not slot.published
        ]
        if not names:
            return
        for name in names:
            self.services[name].published = True
        self.bus.emit("service/change", names)
        await self.wake(names)

    async def wake(self, names: list[str]) -> None:
        """Apply, in load order, the pending fibers that needed ``names`` and now have all."""
        for fiber in tuple(self.fibers):
            if fiber.is_waiting and any(fiber.inject.get(name) for name in names):
                await fiber.start()

    async def withdraw(self, slot: ServiceSlot) -> None:
        """Remove a service and unload the fibers that require it back to pending."""
        if self.services.get(slot.name) is not slot:
            return
        del self.services[slot.name]
        for reader in tuple(slot.readers):  # ctx.<name> is looked up again, and refused
            reader.__dict__.pop(slot.name, None)
        slot.readers.clear()
        if not slot.published:
            return
        slot.published = False
        for fiber in reversed(tuple(self.fibers)):
            if fiber.inject.get(slot.name) and fiber.is_running:
                await fiber.suspend()
        self.bus.emit("service/change", [slot.name])

    # -- diagnostics -------------------------------------------------------------------

    def find_cycle(self, start: Fiber) -> DependencyCycle | None:
        """Return an error naming the cycle ``start`` waits in, if any.

        A waiting plugin's services are known from ``provides``, or learned from its code
        (:func:`~harness.plugin.learned_provides`); a name computed at run time is unknown
        until its apply has run.
        """
        providers: dict[str, list[Fiber]] = {}
        for fiber in self.fibers:
            if fiber.is_waiting:
                for name in fiber.spec.provides:
                    providers.setdefault(name, []).append(fiber)

        def visit(fiber: Fiber, path: list[tuple[Fiber, str]]) -> list[tuple[Fiber, str]] | None:
            for name in self.missing(fiber):
                for provider in providers.get(name, ()):
                    step = [*path, (fiber, name)]
                    if provider is start:
                        return step
                    if all(provider is not seen for seen, _ in path) and provider is not fiber:
                        found = visit(provider, step)
                        if found:
                            return found
            return None

        cycle = visit(start, [])
        if cycle is None:
            return None
        chain = " -> ".join(f"{fiber.name} (needs {name!r})" for fiber, name in cycle)
        error = DependencyCycle(
            f"dependency cycle: {chain} -> {start.name}; break it by making one inject optional"
        )
        for fiber, _ in cycle:
            fiber.error = error
        return error
