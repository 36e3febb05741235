"""Host: a root context running the plugins of a ``cordis.yml``.

``async with Host("cordis.yml") as host`` reads the config, loads the tools service (an
entry ``name: harness:tools`` configures it; otherwise it is loaded with defaults) and every
enabled entry, each applied once its injected services exist. ``host.status()`` lists every
entry; ``host.problems()`` every located problem; ``await host.reload()`` re-reads the config
and reconciles by id, transactionally: a change that fails leaves the previous version
serving and the error reported; ``await host.reload_entries(ids)`` re-imports the code of
some entries and swaps them in as one transaction (what hot reload does). Reloads are
serialized. The host is the ``host`` service of its root context, so a plugin can inject it
(the ``reload`` service does); ``Host(watch=True)`` loads that service.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio

from .context import Context
from .errors import ConfigError, HarnessError
from .fiber import Fiber, FiberState
from .loader.config import LoadedConfig, Plan, read_config
from .loader.imports import local_closure
from .loader.modules import Stash
from .loader.problems import Problem
from .loader.resolve import Resolved, ResolveError, Resolver, is_path, source_location
from .service import unwrap
from .tools.service import ToolsService


@dataclass(frozen=True, slots=True)
class EntryStatus:
    """One entry as the host sees it."""

    id: str
    name: str | None
    """As written in the config (None for a group)."""
    state: str
    """A fiber state, or ``disabled``; groups are ``active`` or ``disabled``."""
    error: str | None = None
    group: str | None = None
    """The enclosing group's id."""
    tools: tuple[str, ...] = ()
    """The tools the entry registered."""

    def to_dict(self) -> dict[str, Any]:
        """``{"id", "name", "state", "error"}`` as ``harness plugins --json`` prints it."""
        return {"id": self.id, "name": self.name, "state": self.state, "error": self.error}


@dataclass
class _Slot:
    plan: Plan
    fiber: Fiber | None = None
    resolved: Resolved | None = None
    good: Plan | None = None
    """The plan the running fiber was applied with."""
    error: Problem | None = None
    """Why the last change failed, or why the entry cannot load."""
    extra: list[Problem] = field(default_factory=list)


class Host:
    """The plugins of a config file, running in one root context."""

    def __init__(
        self,
        config: str | Path = "cordis.yml",
        *,
        patches: Sequence[str | Path] = (),
        overrides: Sequence[str] = (),
        watch: bool = False,
        lenient: bool = False,
    ) -> None:
        self.config_path = Path(config)
        self.patches = [Path(patch) for patch in patches]
        self.overrides = list(overrides)
        self.watch = watch
        self.lenient = lenient
        self.loaded: LoadedConfig | None = None
        self._root = Context(base_dir=self.config_path.absolute().parent)
        self._resolver = Resolver()
        self._slots: dict[str, _Slot] = {}
        self._implicit_tools: Fiber | None = None
        self._lock = anyio.Lock()
        self._fatal: list[Problem] = []

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> Host:
        await self._root.__aenter__()
        try:
            self._root.provide("host", self)
            await self.reload()
            if self.watch:  # by name: the reload service stands above the host
                reload = self._resolver.resolve(RELOAD_SERVICE, self._root.base_dir)
                await self._root.plugin(reload.plugin)
            self._root.mark_ready()  # the initial load has settled: emit ``ready``
        except BaseException as exc:
            await self._root.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._root.__aexit__(exc_type, exc, tb)

    @property
    def ctx(self) -> Context:
        """The root context."""
        return self._root

    @property
    def tools(self) -> ToolsService:
        """The tools service itself (raises AttributeError while none is loaded)."""
        return unwrap(self._root.service(ToolsService))

    # -- reading -------------------------------------------------------------------------

    def status(self) -> list[EntryStatus]:
        """Every entry in config order, disabled ones and groups included."""
        tools = self._root.get("tools")
        out = []
        for slot in self._slots.values():
            plan = slot.plan
            if plan.entry.is_group:
                state = "active" if plan.enabled else "disabled"
                error = slot.error.message if slot.error else None
                out.append(EntryStatus(plan.id, None, state, error, plan.group))
                continue
            error = slot.error.message if slot.error else None
            if slot.fiber is None:
                state = "disabled" if not plan.enabled and slot.error is None else "failed"
                out.append(EntryStatus(plan.id, plan.name, state, error, plan.group))
                continue
            fiber = slot.fiber
            if error is None and fiber.error is not None:
                error = self._describe_failure(slot)
            names = tuple(tools.tools_of(fiber)) if tools is not None else ()
            out.append(EntryStatus(plan.id, plan.name, fiber.state.value, error, plan.group, names))
        return out

    def problems(self) -> list[Problem]:
        """Every problem: the config's, and each entry's (pending ones included)."""
        found: list[Problem] = list(self._fatal)
        if self.loaded is not None:
            found.extend(self.loaded.problems)
        for slot in self._slots.values():
            if slot.error is not None:
                found.append(slot.error)
            found.extend(slot.extra)
            fiber = slot.fiber
            if fiber is None or slot.error is not None:
                continue
            where = slot.plan.entry.where_of("name")
            if fiber.state is FiberState.FAILED:
                found.append(self._failure_problem(slot.plan, fiber, slot.resolved))
            elif fiber.state is FiberState.PENDING:
                missing = fiber.runtime.missing(fiber)
                message = (
                    str(fiber.error)
                    if fiber.error is not None
                    else "waiting for service(s) "
                    + ", ".join(repr(name) for name in missing)
                    + ": no loaded plugin provides them (pending)"
                )
                found.append(Problem.at(where.file, where.line, slot.plan.id, message))
        return found

    # -- reconciling ---------------------------------------------------------------------

    async def reload(self) -> None:
        """Re-read the config and reconcile by id.

        Raises :class:`~harness.errors.ConfigError` (keeping the previous state) when the
        config cannot be read at all; entry failures show in :meth:`status`.
        """
        async with self._lock:
            await self._reload_config()

    async def _reload_config(self) -> None:
        try:
            loaded = read_config(self.config_path, self.patches, self.overrides, self.lenient)
        except HarnessError as exc:
            problems = list(getattr(exc, "problems", ())) or [
                Problem.at(self.config_path, None, None, str(exc))
            ]
            if self.loaded is not None:  # the running config is kept: problems() says why
                self._fatal = problems
                raise
            if not self.lenient:
                raise
            self._fatal = problems
            return
        self._fatal = []
        self.loaded = loaded
        await self._reconcile(loaded.plans)

    # -- hot reload ----------------------------------------------------------------------

    def config_files(self) -> set[Path]:
        """The config, its patches and the .env beside it (whether it exists or not)."""
        files = {self.config_path.absolute(), self.config_path.absolute().parent / ".env"}
        files.update(path.absolute() for path in self.patches)
        if self.loaded is not None:
            files.update(self.loaded.files)
        return files

    def sources(self) -> dict[str, set[Path]]:
        """Each plugin entry's local source files: its own and those it imports."""
        return {
            entry_id: self._sources_of(slot)
            for entry_id, slot in self._slots.items()
            if not slot.plan.entry.is_group
        }

    def source_roots(self) -> dict[str, Path | None]:
        """Each plugin entry's source, the file or package folder it loads by path (None
        for other plugins): cheap, no file is read (hot reload walks the imports itself)."""
        return {
            entry_id: self._root_of(slot)
            for entry_id, slot in self._slots.items()
            if not slot.plan.entry.is_group
        }

    def _root_of(self, slot: _Slot) -> Path | None:
        if slot.resolved is not None and slot.resolved.source is not None:
            return slot.resolved.source
        name = slot.plan.name
        if name and is_path(name) and not slot.plan.entry.is_group:
            return (slot.plan.base / Path(name).expanduser()).resolve()
        return None

    def _sources_of(self, slot: _Slot) -> set[Path]:
        root = self._root_of(slot)
        if root is None:
            return set()
        return local_closure(root) if root.exists() else {root}

    async def reload_entries(
        self, ids: Sequence[str], changed: Iterable[Path] = ()
    ) -> list[Problem]:
        """Re-import the code of these entries and swap them in as one transaction.

        The modules of their source files (and of the ``changed`` files, such as a helper
        just deleted) are imported anew, the old fibers disposed and the new code applied
        with the same config; on an import or apply error the previous modules and fibers
        are back and the error is returned (and shown by ``problems()``).
        """
        async with self._lock:
            slots = [self._slots[i] for i in ids if i in self._slots]
            slots = [slot for slot in slots if not slot.plan.entry.is_group]
            stash = Stash(set(changed).union(*(self._sources_of(slot) for slot in slots)))

            def undo() -> None:
                stash.restore()
                self._resolver.invalidate(stash.names)

            changes: list[tuple[_Slot, Resolved, Plan]] = []
            for slot in slots:
                plan = slot.plan
                if not plan.enabled or plan.errors:
                    continue
                try:
                    changes.append(
                        (slot, self._resolver.resolve_plugin(plan.name or "", plan.base), plan)
                    )
                except ResolveError as exc:
                    undo()
                    problem = self._problem(plan, "name", str(exc))
                    if slot.fiber is not None:
                        slot.error = problem
                    return [problem]
            failure = await self._replace(changes, undo)
            return [failure] if failure is not None else []

    async def _reconcile(self, plans: list[Plan]) -> None:
        wanted = {plan.id for plan in plans}
        for entry_id in reversed(list(self._slots)):
            if entry_id not in wanted:
                slot = self._slots.pop(entry_id)
                if slot.fiber is not None:
                    await slot.fiber.dispose()
        await self._ensure_tools(plans)
        slots: dict[str, _Slot] = {}
        for plan in plans:
            slot = self._slots.get(plan.id) or _Slot(plan)
            slots[plan.id] = slot
            await self._apply(slot, plan)
        self._slots = slots
        tools = self._root.get("tools")
        if tools is not None:  # tools keep their entry's place in cordis.yml, whatever reloads
            tools.order_by({plan.id: index for index, plan in enumerate(plans)})

    async def _ensure_tools(self, plans: list[Plan]) -> None:
        configured = any(p.name == "harness:tools" and p.enabled and not p.errors for p in plans)
        if configured and self._implicit_tools is not None:
            await self._implicit_tools.dispose()
            self._implicit_tools = None
        elif not configured and self._implicit_tools is None:
            self._implicit_tools = await self._root.plugin(ToolsService)

    async def _apply(self, slot: _Slot, plan: Plan) -> None:
        slot.plan = plan
        slot.extra = []
        if plan.entry.is_group:
            # a group loads nothing itself, but its problems (a 'name', a 'config', an
            # unknown key) are reported like any entry's
            slot.error = plan.errors[0] if plan.errors else None
            slot.extra = list(plan.errors[1:])
            return
        running = _serving(slot)
        if plan.errors:
            slot.error = plan.errors[0]
            slot.extra = plan.errors[1:]
            if not running:
                await self._drop(slot)
            return  # a running old version keeps serving
        if not plan.enabled:
            slot.error = None
            await self._drop(slot)
            return
        good = slot.good if running else None
        if good is not None and good.key == plan.key and slot.resolved is not None:
            if good.config == plan.config and _same_inject(good, plan):
                slot.error = None
                return
            await self._restart(slot, plan, good)
            return
        try:
            resolved = self._resolver.resolve_plugin(plan.name or "", plan.base)
        except ResolveError as exc:
            slot.error = self._problem(plan, "name", str(exc))
            if not running:
                await self._drop(slot)
            return
        await self._replace([(slot, resolved, plan)])

    async def _restart(self, slot: _Slot, plan: Plan, good: Plan) -> None:
        """Same code, new config or inject: restart only this plugin, rolling back on failure."""
        fiber = slot.fiber
        assert fiber is not None
        assert slot.resolved is not None
        if not _same_inject(good, plan):
            await self._replace([(slot, slot.resolved, plan)])
            return
        try:
            await fiber.update(plan.config)
        except ConfigError as exc:  # refused: the old config keeps running
            slot.error = self._problem(plan, "config", str(exc))
            return
        except Exception:  # the apply failed; the fiber holds the error
            pass
        if fiber.state is not FiberState.FAILED:
            slot.good, slot.error = plan, None
            return
        failure = self._failure_problem(plan, fiber, slot.resolved)
        with contextlib.suppress(Exception):
            await fiber.update(good.config)
        slot.error = failure

    async def _replace(
        self,
        changes: list[tuple[_Slot, Resolved, Plan]],
        undo: Callable[[], None] | None = None,
    ) -> Problem | None:
        """Swap each slot's fiber for ``resolved`` applied with ``plan``, all or nothing.

        The old fibers are disposed (last first) and the new ones loaded in order. When one
        fails, the new ones are disposed, ``undo`` runs, every slot that was serving gets
        its previous version back and the failure is returned (and kept on its slot); a slot
        with no previous version keeps its new fiber, failed or not.
        """
        before = [(slot.resolved, slot.good if _serving(slot) else None) for slot, _, _ in changes]
        for slot, _, _ in reversed(changes):
            await self._drop(slot)
        loaded: list[Fiber] = []
        failure: Problem | None = None
        for _, resolved, plan in changes:
            fiber = await self._load(resolved, plan)
            loaded.append(fiber)
            if fiber.state is FiberState.FAILED:
                failure = self._failure_problem(plan, fiber, resolved)
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
                slot.fiber = await self._load(old, good)
            elif index < len(loaded):  # nothing to go back to: the new fiber stays
                fiber = loaded[index]
                slot.fiber, slot.resolved, slot.error = fiber, resolved, None
                slot.good = None if fiber.state is FiberState.FAILED else plan
        if before[len(loaded) - 1][1] is not None:
            changes[len(loaded) - 1][0].error = failure
        return failure

    async def _drop(self, slot: _Slot) -> None:
        if slot.fiber is not None:
            await slot.fiber.dispose()
            slot.fiber = None

    async def _load(self, resolved: Resolved, plan: Plan) -> Fiber:
        fiber = self._root.plugin(
            resolved.plugin, plan.config, name=plan.id, inject=plan.entry.inject
        )
        with contextlib.suppress(Exception):  # the fiber holds the error; status() reports it
            await fiber
        return fiber

    # -- messages ------------------------------------------------------------------------

    def _problem(self, plan: Plan, key: str, message: str) -> Problem:
        where = plan.entry.where_of(key)
        return Problem.at(where.file, where.line, plan.id, message)

    def _failure_problem(self, plan: Plan, fiber: Fiber, resolved: Resolved | None) -> Problem:
        key = "config" if isinstance(fiber.error, ConfigError) else "name"
        return self._problem(plan, key, _failure_text(fiber.error, resolved))

    def _describe_failure(self, slot: _Slot) -> str:
        assert slot.fiber is not None
        return _failure_text(slot.fiber.error, slot.resolved)


RELOAD_SERVICE = "harness.reload:Reloader"
"""What ``Host(watch=True)`` loads."""


def _serving(slot: _Slot) -> bool:
    """True when the slot's fiber runs a version that could be restored."""
    return slot.fiber is not None and slot.fiber.state is not FiberState.FAILED


def _failure_text(error: BaseException | None, resolved: Resolved | None) -> str:
    if error is None:
        return "failed"
    if isinstance(error, HarnessError):
        return str(error)
    location = source_location(error, resolved.source if resolved else None)
    text = f"apply raised {type(error).__name__}: {error}"
    return f"{text} ({location[0]}:{location[1]})" if location else text


def _same_inject(a: Plan, b: Plan) -> bool:
    return bool(a.entry.inject == b.entry.inject)
