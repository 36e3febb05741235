"""Host: a root context running the plugins of a ``cordis.yml``.

``async with Host("cordis.yml") as host`` reads the config, loads the tools service (an
entry ``name: harness:tools`` configures it; otherwise it is loaded with defaults) and every
enabled entry, each applied once its injected services exist. ``host.status()`` lists every
entry; ``host.problems()`` every located problem; ``await host.reload()`` re-reads the config
and reconciles by id, transactionally: a change that fails leaves the previous version
serving and the error reported. Reloads are serialized.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
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
from .loader.problems import Problem
from .loader.resolve import (
    Resolved,
    ResolveError,
    Resolver,
    forget_modules,
    is_path,
    local_modules_in,
    restore_modules,
    source_location,
)
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
            await self.reload()
            if self.watch:
                from .reload import Reloader

                await self._root.plugin(Reloader, self)
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
        """The tools service."""
        service: ToolsService = self._root.tools
        return service

    # -- reading -------------------------------------------------------------------------

    def status(self) -> list[EntryStatus]:
        """Every entry in config order, disabled ones and groups included."""
        tools = self._root.get("tools")
        out = []
        for slot in self._slots.values():
            plan = slot.plan
            if plan.entry.is_group:
                state = "active" if plan.enabled else "disabled"
                out.append(EntryStatus(plan.id, None, state, None, plan.group))
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
            if not self.lenient or self.loaded is not None:
                raise
            self._fatal = list(getattr(exc, "problems", ())) or [
                Problem.at(self.config_path, None, None, str(exc))
            ]
            return
        self._fatal = []
        self.loaded = loaded
        await self._reconcile(loaded.plans)

    # -- hot reload ----------------------------------------------------------------------

    def watched_files(self) -> set[Path]:
        """The config, its patches and .env, and every local source file of path plugins."""
        files = self._config_files()
        for slot in self._slots.values():
            files.update(self._sources_of(slot))
        return files

    def _config_files(self) -> set[Path]:
        """The config, its patches and the .env beside it (whether it exists or not)."""
        files = {self.config_path.absolute(), self.config_path.absolute().parent / ".env"}
        files.update(path.absolute() for path in self.patches)
        if self.loaded is not None:
            files.update(self.loaded.files)
        return files

    def _sources_of(self, slot: _Slot) -> set[Path]:
        if slot.resolved is not None and slot.resolved.source is not None:
            return local_closure(slot.resolved.source)
        name = slot.plan.name
        if name and is_path(name) and not slot.plan.entry.is_group:
            path = (slot.plan.base / Path(name).expanduser()).resolve()
            return local_closure(path) if path.exists() else {path}
        return set()

    async def reload_files(self, changed: set[Path]) -> ReloadReport:
        """React to changed files: reconcile on config changes, reload plugins on source ones.

        Plugins whose sources changed reload as one transaction: re-import, dispose the old
        fibers, apply the new modules with the same config; on an import or apply error the
        previous modules and fibers keep serving and the error is reported.
        """
        async with self._lock:
            report = ReloadReport(files=sorted(changed))
            before = self._tool_snapshot()
            own = {path for path in changed if _inside(path, _HARNESS_DIR)}
            if own:
                report.ignored = sorted(own)
            config_files = self._config_files()
            if changed & config_files:
                try:
                    await self._reload_config()
                except HarnessError as exc:
                    report.errors.extend(
                        getattr(exc, "problems", ())
                        or [Problem.at(self.config_path, None, None, str(exc))]
                    )
                report.config = True
            sources = changed - config_files - own
            if sources:
                closures = {
                    slot.plan.id: self._sources_of(slot)
                    for slot in self._slots.values()
                    if not slot.plan.entry.is_group
                }
                affected = [self._slots[key] for key, files in closures.items() if files & sources]
                if affected:
                    files = set().union(*(closures[slot.plan.id] for slot in affected))
                    await self._reload_sources(affected, files, report)
            report.added, report.removed, report.changed = _tool_diff(before, self._tool_snapshot())
            return report

    async def _reload_sources(
        self, slots: list[_Slot], files: set[Path], report: ReloadReport
    ) -> None:
        report.entries = [slot.plan.id for slot in slots]
        purge = local_modules_in(files)
        forget_modules(purge)
        fresh: dict[str, Resolved] = {}
        for slot in slots:
            if not slot.plan.enabled or slot.plan.errors:
                continue
            try:
                fresh[slot.plan.id] = self._resolver.resolve_plugin(
                    slot.plan.name or "", slot.plan.base
                )
            except ResolveError as exc:
                restore_modules(purge)
                where = slot.plan.entry.where_of("name")
                problem = Problem.at(where.file, where.line, slot.plan.id, str(exc))
                report.errors.append(problem)
                if slot.fiber is not None:
                    slot.error = problem
                return
        old = {slot.plan.id: (slot.fiber, slot.resolved, slot.good) for slot in slots}
        for slot in reversed(slots):
            if slot.plan.id in fresh and slot.fiber is not None:
                await slot.fiber.dispose()
        loaded: list[tuple[_Slot, Fiber]] = []
        failure: Problem | None = None
        for slot in slots:
            if slot.plan.id not in fresh:
                continue
            plan = slot.plan
            fiber = await self._load(fresh[plan.id], plan)
            loaded.append((slot, fiber))
            if fiber.state is FiberState.FAILED:
                failure = self._failure_problem(plan, fiber, fresh[plan.id])
                break
        if failure is not None:
            for _, fiber in reversed(loaded):
                await fiber.dispose()
            forget_modules({name: sys.modules[name] for name in purge if name in sys.modules})
            restore_modules(purge)
            self._resolver.invalidate(purge)
            for slot in slots:
                fiber_before, resolved, good = old[slot.plan.id]
                if slot.plan.id in fresh and fiber_before is not None and resolved and good:
                    slot.fiber = await self._load(resolved, good)
            report.errors.append(failure)
            return
        for slot, fiber in loaded:
            slot.fiber, slot.resolved = fiber, fresh[slot.plan.id]
            slot.good, slot.error = slot.plan, None

    def _tool_snapshot(self) -> dict[str, Any]:
        tools = self._root.get("tools")
        if tools is None:
            return {}
        return {name: tools.get(name) for name in tools.list()}

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
            return
        running = slot.fiber is not None and slot.fiber.state is not FiberState.FAILED
        if plan.errors:
            slot.error = plan.errors[0]
            slot.extra = plan.errors[1:]
            if slot.fiber is not None and not running:
                await slot.fiber.dispose()
                slot.fiber = None
            return  # a running old version keeps serving
        if not plan.enabled:
            slot.error = None
            if slot.fiber is not None:
                await slot.fiber.dispose()
                slot.fiber = None
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
            where = plan.entry.where_of("name")
            slot.error = Problem.at(where.file, where.line, plan.id, str(exc))
            if slot.fiber is not None and not running:
                await slot.fiber.dispose()
                slot.fiber = None
            return
        old_fiber, old_resolved = slot.fiber, slot.resolved
        if old_fiber is not None:
            await old_fiber.dispose()
        fiber = await self._load(resolved, plan)
        if fiber.state is FiberState.FAILED and good is not None and old_resolved is not None:
            failure = self._failure_problem(plan, fiber, resolved)
            await fiber.dispose()
            slot.fiber = await self._load(old_resolved, good)
            slot.error = failure
            return
        slot.fiber, slot.resolved, slot.error = fiber, resolved, None
        slot.good = plan if fiber.state is not FiberState.FAILED else None

    async def _restart(self, slot: _Slot, plan: Plan, good: Plan) -> None:
        """Same code, new config or inject: restart only this plugin, rolling back on failure."""
        fiber = slot.fiber
        assert fiber is not None
        assert slot.resolved is not None
        if _same_inject(good, plan):
            try:
                await fiber.update(plan.config)
            except ConfigError as exc:  # refused: the old config keeps running
                at = plan.entry.where_of("config")
                slot.error = Problem.at(at.file, at.line, plan.id, str(exc))
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
            return
        await fiber.dispose()
        new = await self._load(slot.resolved, plan)
        if new.state is FiberState.FAILED:
            failure = self._failure_problem(plan, new, slot.resolved)
            await new.dispose()
            slot.fiber = await self._load(slot.resolved, good)
            slot.error = failure
            return
        slot.fiber, slot.good, slot.error = new, plan, None

    async def _load(self, resolved: Resolved, plan: Plan) -> Fiber:
        fiber = self._root.plugin(
            resolved.plugin, plan.config, name=plan.id, inject=plan.entry.inject
        )
        with contextlib.suppress(Exception):  # the fiber holds the error; status() reports it
            await fiber
        return fiber

    # -- messages ------------------------------------------------------------------------

    def _failure_problem(self, plan: Plan, fiber: Fiber, resolved: Resolved | None) -> Problem:
        key = "config" if _is_config_error(fiber.error) else "name"
        at = plan.entry.where_of(key)
        message = _failure_text(fiber.error, resolved)
        return Problem.at(at.file, at.line, plan.id, message)

    def _describe_failure(self, slot: _Slot) -> str:
        assert slot.fiber is not None
        return _failure_text(slot.fiber.error, slot.resolved)


@dataclass
class ReloadReport:
    """What one hot reload did, as ``reload/done`` and ``reload/failed`` carry it."""

    files: list[Path]
    config: bool = False
    """The config (or a patch, or .env) changed and was reconciled."""
    entries: list[str] = field(default_factory=list)
    """Entries whose sources changed and were reloaded."""
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    """Tools whose definition was replaced."""
    errors: list[Problem] = field(default_factory=list)
    ignored: list[Path] = field(default_factory=list)
    """Changed files of harness itself (a restart is needed to use them)."""

    @property
    def ok(self) -> bool:
        """True when nothing failed."""
        return not self.errors

    def summary(self) -> str:
        """One line for the log."""
        parts = []
        if self.config:
            parts.append("config reconciled")
        if self.entries:
            parts.append("reloaded " + ", ".join(self.entries))
        for label, names in (
            ("added", self.added),
            ("removed", self.removed),
            ("changed", self.changed),
        ):
            if names:
                parts.append(f"tools {label}: {', '.join(names)}")
        return "; ".join(parts) or "nothing to do"


def _tool_diff(
    before: dict[str, Any], after: dict[str, Any]
) -> tuple[list[str], list[str], list[str]]:
    added = [name for name in after if name not in before]
    removed = [name for name in before if name not in after]
    changed = [name for name in after if name in before and after[name] is not before[name]]
    return added, removed, changed


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder)
    except ValueError:
        return False
    return True


_HARNESS_DIR = Path(__file__).resolve().parent


def _failure_text(error: BaseException | None, resolved: Resolved | None) -> str:
    if error is None:
        return "failed"
    if isinstance(error, HarnessError):
        return str(error)
    location = source_location(error, resolved.source if resolved else None)
    text = f"apply raised {type(error).__name__}: {error}"
    return f"{text} ({location[0]}:{location[1]})" if location else text


def _is_config_error(error: BaseException | None) -> bool:
    return isinstance(error, ConfigError)


def _same_inject(a: Plan, b: Plan) -> bool:
    return bool(a.entry.inject == b.entry.inject)
