"""Host: a root context running the plugins of a ``cordis.yml``.

``async with Host("cordis.yml") as host`` reads the config, loads the tools service (an
entry ``name: harness:tools`` configures it; otherwise it is loaded with defaults), the
``resources`` and ``prompts`` services, and every enabled entry, each applied once its
injected services exist. ``host.status()`` lists every
entry; ``host.problems()`` every located problem; ``await host.reload()`` re-reads the config
and reconciles by id, transactionally: a change that fails leaves the previous version
serving and the error reported; ``await host.reload_entries(ids)`` re-imports the code of
some entries and swaps them in as one transaction (what hot reload does). Reloads are
serialized. The host is the ``host`` service of its root context, so a plugin can inject it
(the ``reload`` service does); ``Host(watch=True)`` loads that service.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio

from .context import Context
from .errors import ConfigError, HarnessError
from .fiber import FiberState
from .loader.config import LoadedConfig, Plan, read_config
from .loader.config_problems import Problem
from .loader.imports import local_closure
from .loader.modules import Stash
from .loader.resolve import Resolved, ResolveError, Resolver, is_path
from .loader.slots import Slot, Slots
from .prompts.service import PromptsService
from .resources.service import ResourcesService
from .service import unwrap
from .tools import traces
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
        self._entries = Slots(self._root, self._resolver)
        self._lock = anyio.Lock()
        self._fatal: list[Problem] = []

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> Host:
        traces.refresh()  # spans only while a tracer provider is installed
        await self._root.__aenter__()
        try:
            self._root.provide("host", self)
            await self._root.plugin(ResourcesService)
            await self._root.plugin(PromptsService)
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
        for slot in self._entries.by_id.values():
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
                error = self._entries.describe_failure(slot)
            names = tuple(tools.tools_of(fiber)) if tools is not None else ()
            out.append(EntryStatus(plan.id, plan.name, fiber.state.value, error, plan.group, names))
        return out

    def problems(self) -> list[Problem]:
        """Every problem: the config's, and each entry's (pending ones included)."""
        found: list[Problem] = list(self._fatal)
        if self.loaded is not None:
            found.extend(self.loaded.problems)
        for slot in self._entries.by_id.values():
            if slot.error is not None:
                found.append(slot.error)
            found.extend(slot.extra)
            fiber = slot.fiber
            if fiber is None or slot.error is not None:
                continue
            where = slot.plan.entry.where_of("name")
            if fiber.state is FiberState.ACTIVE:
                found.extend(
                    Problem.at(where.file, where.line, slot.plan.id, message)
                    for message in fiber.problems
                )
            elif fiber.state is FiberState.FAILED:
                found.append(self._entries.failure_problem(slot.plan, fiber, slot.resolved))
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
        found.extend(self._clashes())
        return found

    def _clashes(self) -> list[Problem]:
        """Tools under names another entry reserves (code mode's builtins, say), each a
        problem of the later entry."""
        tools = self._root.get("tools")
        clashes = unwrap(tools).clashes() if tools is not None else []
        if not clashes:
            return []
        slots = {slot.fiber: slot for slot in self._entries.by_id.values() if slot.fiber}
        found = []
        for clash in clashes:
            fiber = clash.later.fiber
            while fiber is not None and fiber not in slots:
                fiber = fiber.parent.fiber
            slot = slots.get(fiber) if fiber is not None else None
            if slot is None:  # a plugin loaded outside the config
                found.append(Problem.at(self.config_path, None, None, clash.message))
                continue
            where = slot.plan.entry.where_of("name")
            found.append(Problem.at(where.file, where.line, slot.plan.id, clash.message))
        return found

    # -- reconciling ---------------------------------------------------------------------

    async def reload(self, *, keep_if_emptied: bool = False) -> None:
        """Re-read the config and reconcile by id.

        Raises :class:`~harness.errors.ConfigError` (keeping the previous state) when the
        config cannot be read at all; entry failures show in :meth:`status`. With
        ``keep_if_emptied`` (hot reload: a save caught half-way), an empty config file
        while entries run is such a failure too, not a config of no plugins.
        """
        async with self._lock:
            await self._reload_config(keep_if_emptied)

    async def _reload_config(self, keep_if_emptied: bool = False) -> None:
        try:
            if keep_if_emptied and self.loaded is not None and self.loaded.entries:
                _refuse_emptied(self.config_path)
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
        await self._entries.reconcile(loaded.plans)

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
            for entry_id, slot in self._entries.by_id.items()
            if not slot.plan.entry.is_group
        }

    def source_roots(self) -> dict[str, Path | None]:
        """Each plugin entry's source, the file or package folder it loads by path (None
        for other plugins): cheap, no file is read (hot reload walks the imports itself)."""
        return {
            entry_id: self._root_of(slot)
            for entry_id, slot in self._entries.by_id.items()
            if not slot.plan.entry.is_group
        }

    def _root_of(self, slot: Slot) -> Path | None:
        if slot.resolved is not None and slot.resolved.source is not None:
            return slot.resolved.source
        name = slot.plan.name
        if name and is_path(name) and not slot.plan.entry.is_group:
            return (slot.plan.base / Path(name).expanduser()).resolve()
        return None

    def _sources_of(self, slot: Slot) -> set[Path]:
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
            slots = [self._entries.by_id[i] for i in ids if i in self._entries.by_id]
            slots = [slot for slot in slots if not slot.plan.entry.is_group]
            stash = Stash(set(changed).union(*(self._sources_of(slot) for slot in slots)))

            def undo() -> None:
                stash.restore()
                self._resolver.invalidate(stash.names)

            changes: list[tuple[Slot, Resolved, Plan]] = []
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
                    problem = self._entries.problem(plan, "name", str(exc))
                    if slot.fiber is not None:
                        slot.error = problem
                    return [problem]
            failure = await self._entries.replace(changes, undo)
            return [failure] if failure is not None else []


RELOAD_SERVICE = "harness.reload:Reloader"
"""What ``Host(watch=True)`` loads."""


def _refuse_emptied(config: Path) -> None:
    """Raise ConfigError when ``config`` holds nothing but whitespace (a save in progress?)."""
    try:
        text = config.read_bytes()
    except OSError:
        return  # read_config says what is wrong with it
    if not text.strip():
        keeping = "keeping the running config until it holds entries again"
        raise ConfigError(
            f"{config} is empty (a save in progress?); {keeping}",
            problems=[
                Problem.at(
                    config, None, None, f"the config file is empty (a save in progress?); {keeping}"
                )
            ],
        )
