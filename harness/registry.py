"""Registries: named definitions that plugins register as effects.

Tools, resources and prompts share this shape: ``register`` is an effect of the calling
plugin (unloading it removes what it registered), a key another plugin holds raises
:class:`~harness.errors.NameConflict` naming the holder, ``get`` and ``list`` look up, and
every change emits ``<kind>s/change`` with ``("added" | "removed", key)``. Lists keep a
stable order: by the position of the ``cordis.yml`` entry that registered the definition
(:meth:`Registry.order_by`), then by registration. Each registry adds what only it needs
(the tools' pipeline, the resources' URI templates, the prompts' rendering).
"""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar

from .errors import NameConflict

if TYPE_CHECKING:
    from .context import Context
    from .events import EventBus
    from .fiber import Fiber

D = TypeVar("D")


@dataclass(frozen=True, slots=True)
class Entry(Generic[D]):
    """One registered definition."""

    definition: D
    owner: str
    """Who registered it (``plugin 'x'``)."""
    context: Context
    """The context it was registered through (an effect of that context's plugin)."""
    seq: int
    """Registration sequence number: the order within one plugin."""


class Registry(Generic[D]):
    """The shape every registry shares; subclasses name their ``kind`` and add the rest."""

    kind: ClassVar[str] = "definition"
    """What a key names, in messages (``tool``, ``resource``, ``prompt``)."""
    changes: ClassVar[str] = "definitions/change"
    """The event every change emits, with ``("added" | "removed", key)``."""
    conflict: ClassVar[type[NameConflict]] = NameConflict
    """What registering a held key raises."""

    ctx: Context

    def __init__(self, ctx: Context) -> None:
        self._entries: dict[str, Entry[D]] = {}
        """Key → entry, in registration order."""
        self._bus: EventBus = ctx.bus
        self._seq = itertools.count()
        self._positions: Mapping[str, int] = {}
        self._order: builtins.list[str] | None = None
        """Keys in list order; None until computed after a change."""

    def _register(self, key: str, definition: D, owner: Context) -> Callable[[], None]:
        """Add ``definition`` under ``key`` as an effect of ``owner``; return its dispose."""
        held = self._entries.get(key)
        if held is not None:
            raise self.conflict(
                f"{self.kind} {key!r} is already registered by {held.owner}; "
                f"{owner.describe()} cannot register it too (rename one of them or unload "
                "the holder)"
            )
        entry = Entry(definition, owner.describe(), owner, next(self._seq))

        def setup() -> Callable[[], None]:
            self._entries[key] = entry
            self._added(key, entry)
            self._changed()
            self._bus.emit(self.changes, "added", key)
            return cleanup

        def cleanup() -> None:
            if self._entries.get(key) is entry:
                self._removing(key)
                del self._entries[key]
                self._changed()
                self._bus.emit(self.changes, "removed", key)

        dispose: Callable[[], None] = owner.effect(setup)
        return dispose

    def get(self, key: str) -> D | None:
        """The definition registered under ``key``, or None."""
        entry = self._entries.get(key)
        return None if entry is None else entry.definition

    def list(self) -> builtins.list[str]:
        """Keys in order: by the position of the plugin that registered them (see
        :meth:`order_by`), then in registration order."""
        return builtins.list(self._ordered())

    def owner(self, key: str) -> str | None:
        """Who registered ``key`` (``plugin 'x'``), or None."""
        entry = self._entries.get(key)
        return None if entry is None else entry.owner

    def of(self, fiber: Fiber) -> builtins.list[str]:
        """The keys registered by ``fiber`` or the plugins below it, in list order."""
        keys = []
        for key in self._ordered():
            owner = self._entries[key].context.fiber
            while owner is not None and owner is not fiber:
                owner = owner.parent.fiber
            if owner is fiber:
                keys.append(key)
        return keys

    def order_by(self, positions: Mapping[str, int]) -> None:
        """Order by the position of each definition's top-level plugin (a plugin loaded on
        the root context, by name), then by registration order; unplaced plugins' come last.

        The host passes each ``cordis.yml`` entry's position, so a definition keeps its
        place when its plugin is disabled and enabled again or reloaded.
        """
        if dict(positions) != self._positions:
            self._positions = dict(positions)
            self._changed()

    # -- hooks ---------------------------------------------------------------------------

    def _added(self, key: str, entry: Entry[D]) -> None:
        """Called as ``key`` is added (before the change event)."""

    def _removing(self, key: str) -> None:
        """Called as ``key`` is about to be removed (before the change event)."""

    def _changed(self) -> None:
        """Called on every change: drop what was computed from the old state."""
        self._order = None

    def _ordered(self) -> builtins.list[str]:
        if self._order is None:
            entries = self._entries
            self._order = sorted(
                entries, key=lambda key: self._rank(entries[key].context, entries[key].seq)
            )
        return self._order

    def _rank(self, context: Context, seq: int) -> tuple[int, int]:
        """Where something ``context``'s plugin registered goes: the config position of its
        top-level plugin (unplaced ones last), then ``seq``, its registration order."""
        fiber, top = context.fiber, None
        while fiber is not None:
            top, fiber = fiber, fiber.parent.fiber
        last = len(self._positions)
        return (last if top is None else self._positions.get(top.name, last)), seq
