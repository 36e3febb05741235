"""The tool registry: which tools exist, who holds them, in which order, and their schemas.

Tools are registered as effects of the calling plugin (unloading it removes them); every
change emits ``tools/change``. The list order and the schemas are computed once per change,
not per call. :class:`~harness.tools.tools_service.ToolsService` adds the execution pipeline.
"""

from __future__ import annotations

import builtins
import contextlib
import itertools
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from ..errors import ToolConflict, ToolDefinitionError
from ..service import caller_aware
from . import formats
from .config import ToolsConfig
from .define import ToolDefinition
from .function import tool as tool_from_function
from .gates import Gates
from .holds import Hold, failed_checkers
from .reserved import Clash, Reservation, clashes

if TYPE_CHECKING:
    from ..context import Context
    from ..fiber import Fiber


@dataclass(frozen=True, slots=True)
class Entry:
    """One registered tool."""

    definition: ToolDefinition
    owner: str
    context: Context
    seq: int
    """Registration sequence number: the order within one plugin."""


class ToolRegistry:
    """The registry half of the ``tools`` service (its state and its look-ups)."""

    ctx: Context
    config: ToolsConfig

    def __init__(self, ctx: Context) -> None:
        self._tools: dict[str, Entry] = {}
        """Name → entry."""
        self._definitions: dict[str, ToolDefinition] = {}
        """Name → definition: what every call looks up, kept beside ``_tools``."""
        self._gates = Gates()
        self._bus = ctx.bus
        self._seq = itertools.count()
        self._positions: Mapping[str, int] = {}
        self._order: builtins.list[str] | None = None
        """Tool names in list order; None until computed after a change."""
        self._snapshots: dict[tuple[str, bool], builtins.list[dict[str, Any]]] = {}
        """Frozen schemas per (format, strict), built once per registry change."""
        self._reserved: builtins.list[Reservation] = []

    # -- registry ------------------------------------------------------------------------

    @caller_aware
    def register(
        self, definition: ToolDefinition | Callable[..., Any], *, caller: Context | None = None
    ) -> Callable[[], None]:
        """Register a tool as an effect of the calling plugin; return its dispose callable.

        A plain function is turned into a tool with ``@tool`` first. A name another plugin
        holds raises :class:`~harness.errors.ToolConflict`.
        """
        owner = caller or self.ctx
        if not isinstance(definition, ToolDefinition):
            if not callable(definition):
                raise ToolDefinitionError(
                    f"{owner.describe()} registered {definition!r}: expected a ToolDefinition "
                    "(define_tool or @tool) or a function"
                )
            definition = tool_from_function(definition)
        name = definition.name
        held = self._tools.get(name)
        if held is not None:
            raise ToolConflict(
                f"tool {name!r} is already registered by {held.owner}; {owner.describe()} "
                "cannot register it too (rename one of them or unload the holder)"
            )
        entry = Entry(definition, owner.describe(), owner, next(self._seq))

        def setup() -> Callable[[], None]:
            self._tools[name] = entry
            self._definitions[name] = definition
            self._changed()
            self._bus.emit("tools/change", "added", name)
            return cleanup

        def cleanup() -> None:
            if self._tools.get(name) is entry:
                for hold in self._gates.holds:  # removed during a reload: its calls wait
                    hold.names.add(name)
                del self._tools[name]
                del self._definitions[name]
                self._changed()
                self._bus.emit("tools/change", "removed", name)

        dispose: Callable[[], None] = owner.effect(setup)
        return dispose

    def get(self, name: str) -> ToolDefinition | None:
        """The tool called ``name``, or None."""
        entry = self._tools.get(name)
        return None if entry is None else entry.definition

    def list(self) -> list[str]:
        """Tool names in order: by the position of the plugin that registered them (see
        :meth:`order_by`), then in registration order."""
        return list(self._ordered())

    def order_by(self, positions: Mapping[str, int]) -> None:
        """Order tools by the position of their top-level plugin (a plugin loaded on the root
        context, by name), then by registration order; unplaced plugins' tools come last.

        The host passes each ``cordis.yml`` entry's position, so a tool keeps its place when
        its plugin is disabled and enabled again or reloaded (model prompt caches stay warm).
        """
        if dict(positions) != self._positions:
            self._positions = dict(positions)
            self._changed()

    def owner(self, name: str) -> str | None:
        """Who registered ``name`` (``plugin 'x'``), or None."""
        entry = self._tools.get(name)
        return None if entry is None else entry.owner

    def tools_of(self, fiber: Fiber) -> builtins.list[str]:
        """The tools registered by ``fiber`` or the plugins below it."""
        names = []
        for name in self._ordered():
            owner = self._tools[name].context.fiber
            while owner is not None and owner is not fiber:
                owner = owner.parent.fiber
            if owner is fiber:
                names.append(name)
        return names

    def schemas(
        self, format: formats.Format = "openai", strict: bool | None = None
    ) -> builtins.list[dict[str, Any]]:
        """Every tool's schema in ``format`` (``openai``, ``anthropic`` or ``mcp``), in
        :meth:`list` order.

        The schemas are read-only snapshots, built once per registry change and shared by
        callers: changing one raises ``TypeError`` (``copy.deepcopy`` gives a plain copy). The
        list itself is the caller's own.
        """
        use_strict = (self.config.strict if strict is None else strict) and format == "openai"
        key = (format, bool(use_strict))
        cached = self._snapshots.get(key)
        if cached is None:
            if format == "openai":
                build: Callable[[ToolDefinition], dict[str, Any]] = partial(
                    formats.openai, strict=bool(use_strict)
                )
            elif format == "anthropic":
                build = formats.anthropic
            elif format == "mcp":
                build = formats.mcp
            else:
                raise ValueError(
                    f"unknown schema format {format!r}; use one of {', '.join(formats.FORMATS)}"
                )
            cached = [
                formats.freeze(build(self._tools[name].definition)) for name in self._ordered()
            ]
            self._snapshots[key] = cached
        return list(cached)

    # -- reserved names ------------------------------------------------------------------

    @caller_aware
    def reserve(
        self, names: Mapping[str, str], *, caller: Context | None = None
    ) -> Callable[[], None]:
        """Keep ``names`` for the calling plugin without registering tools under them (see
        :mod:`.reserved`); each maps to what a tool taking it causes, and what to do.

        Another plugin's tool of such a name still registers; :meth:`clashes` reports it.
        """
        owner = caller or self.ctx
        reservation = Reservation(dict(names), owner, next(self._seq))

        def setup() -> Callable[[], None]:
            self._reserved.append(reservation)
            return lambda: self._reserved.remove(reservation)

        dispose: Callable[[], None] = owner.effect(setup)
        return dispose

    def clashes(self) -> builtins.list[Clash]:
        """Each tool registered under a name another plugin reserves, for the later entry."""
        if not self._reserved:
            return []
        tools = {name: (entry.context, entry.seq) for name, entry in self._tools.items()}
        return clashes(self._reserved, tools, self._rank)

    # -- fail-closed gates ---------------------------------------------------------------

    @caller_aware
    def gate(
        self,
        key: str,
        gated: Callable[[str], str | None],
        *,
        caller: Context | None = None,
    ) -> Callable[[], None]:
        """Keep refusing the tools ``gated`` names while the calling plugin is not loaded.

        ``gated(tool_name)`` returns why the tool is gated (a policy's rule, say), or None.
        While the caller is active the gate does nothing (its listeners decide). When it
        unloads — during its own hot reload, a config change, a failed apply — the gate stays
        behind, closed: every call to a gated tool is denied until a plugin sets the gate of
        the same ``key`` again. Policies fail closed this way; the gate lives as long as
        this service.
        """
        owner = caller or self.ctx
        holder = owner.describe()
        dispose: Callable[[], None] = owner.effect(lambda: self._gates.open(key, gated, holder))
        return dispose

    # -- reload transactions -------------------------------------------------------------

    @contextlib.contextmanager
    def reloading(self, fibers: Collection[Fiber]) -> Iterator[Hold | None]:
        """Hold the calls that replacing ``fibers`` concerns until the block ends.

        The host wraps each transaction that disposes running fibers and applies their new
        versions (or the old ones again) in this; see :mod:`.holds` for who waits and how
        long. Yields the hold (None for no fibers).
        """
        if not fibers:
            yield None
            return
        who = ", ".join(f"plugin {fiber.name!r}" for fiber in fibers)
        hold = Hold(set(fibers), self._tools, self._bus, who)
        self._gates.begin(hold)
        try:
            yield hold
        finally:
            for fiber in failed_checkers(hold) if hold.checkers else ():
                self._gates.refuse_while(
                    f"reload:{fiber.name}:{id(fiber)}",
                    partial(_still_failed, fiber),
                    "every call is checked by a plugin that failed to reload (its previous "
                    "version too)",
                    f"plugin {fiber.name!r}",
                )
            self._gates.end(hold)

    async def _reloaded(self, name: str) -> ToolDefinition | None:
        """The tool ``name`` once the transaction that removed it has ended (None when no
        open hold had it, or past the bound): for a call that passed the holds, then waited
        in a listener while its tool's entry began to reload."""
        for hold in self._gates.holds:
            if name in hold.names:
                with contextlib.suppress(TimeoutError):
                    with anyio.fail_after(self.config.reload_wait):
                        await hold.done.wait()
        return self._definitions.get(name)

    def _changed(self) -> None:
        self._order = None
        self._snapshots.clear()

    def _ordered(self) -> builtins.list[str]:
        if self._order is None:
            tools = self._tools
            self._order = sorted(
                tools, key=lambda name: self._rank(tools[name].context, tools[name].seq)
            )
        return self._order

    def _rank(self, context: Context, seq: int) -> tuple[int, int]:
        """Where a plugin's tool goes: the config position of its top-level plugin (unplaced
        ones last), then ``seq``, its registration order."""
        fiber, top = context.fiber, None
        while fiber is not None:
            top, fiber = fiber, fiber.parent.fiber
        last = len(self._positions)
        return (last if top is None else self._positions.get(top.name, last)), seq


def _still_failed(fiber: Fiber) -> bool:
    """Whether the entry of ``fiber`` (its name under its parent) is still without an
    active version: some fiber of it exists (failed, or loading again) and none is active.
    Disabled or removed, it has none, and its calls are no longer refused."""
    states = {
        other.state.value
        for other in fiber.runtime.fibers
        if other.name == fiber.name and other.parent is fiber.parent
    }
    return bool(states) and "active" not in states
