"""The tool registry: which tools exist, who holds them, in which order, and their schemas.

Tools are registered as effects of the calling plugin (unloading it removes them); every
change emits ``tools/change`` (the shape every registry shares, :mod:`harness.registry`).
The list order and the schemas are computed once per change, not per call.
:class:`~harness.tools.service.ToolsService` adds the execution pipeline.
"""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import Callable, Collection, Iterator, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from ..errors import ToolConflict, ToolDefinitionError
from ..registry import Entry, Registry
from ..service import caller_aware
from . import formats
from .config import ToolsConfig
from .definition import ToolDefinition
from .finding import Finder, Hidden
from .from_function import tool as tool_from_function
from .policy_gates import Gates
from .reload_holds import Hold, failed_checkers
from .reserved import Clash, Reservation, clashes

if TYPE_CHECKING:
    from ..context import Context
    from ..fiber import Fiber


class ToolRegistry(Registry[ToolDefinition]):
    """The registry half of the ``tools`` service (its state and its look-ups)."""

    kind = "tool"
    changes = "tools/change"
    conflict = ToolConflict
    config: ToolsConfig

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self._tools = self._entries
        """Name → entry (the registry's own map, under the name the call path reads)."""
        self._definitions: dict[str, ToolDefinition] = {}
        """Name → definition: what every call looks up, kept beside ``_tools``."""
        self._gates = Gates()
        self._snapshots: dict[tuple[str, bool], builtins.list[dict[str, Any]]] = {}
        """Frozen schemas per (format, strict), built once per registry change."""
        self._reserved: builtins.list[Reservation] = []
        self.finder = Finder(
            lambda: self.config.search, self._gates, ctx.base_dir / ".harness" / "search"
        )
        """The search index, following the registry (``search``, :mod:`.finding`)."""

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
        return self._register(definition.name, definition, owner)

    def _added(self, key: str, entry: Entry[ToolDefinition]) -> None:
        self._definitions[key] = entry.definition
        self.finder.put(entry.definition)

    def _removing(self, key: str) -> None:
        for hold in self._gates.holds:  # removed during a reload: its calls wait
            hold.names.add(key)
        del self._definitions[key]
        self.finder.remove(key)

    def tools_of(self, fiber: Fiber) -> builtins.list[str]:
        """The tools registered by ``fiber`` or the plugins below it."""
        return self.of(fiber)

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

    @caller_aware
    def hide(self, hidden: Hidden, *, caller: Context | None = None) -> Callable[[], None]:
        """Leave the tools ``hidden(name)`` is true for out of every search, while the
        calling plugin is loaded (the bundled policy hides the tools it denies)."""
        owner = caller or self.ctx
        dispose: Callable[[], None] = owner.effect(lambda: self.finder.hide(hidden))
        return dispose

    # -- reload transactions -------------------------------------------------------------

    @contextlib.contextmanager
    def reloading(self, fibers: Collection[Fiber]) -> Iterator[Hold | None]:
        """Hold the calls that replacing ``fibers`` concerns until the block ends.

        The host wraps each transaction that disposes running fibers and applies their new
        versions (or the old ones again) in this; see :mod:`.reload_holds` for who waits and how
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

    async def settled(self) -> bool:
        """Wait for the reload transactions under way to end (each at most ``reload_wait``
        seconds); False at once when there are none.

        For the other registries: a resource or prompt looked up while its entry reloads is
        looked up again afterwards, so a reload is atomic to their readers too.
        """
        holds = list(self._gates.holds)
        for hold in holds:
            with contextlib.suppress(TimeoutError):
                with anyio.fail_after(self.config.reload_wait):
                    await hold.done.wait()
        return bool(holds)

    def _changed(self) -> None:
        super()._changed()
        self._snapshots.clear()


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
