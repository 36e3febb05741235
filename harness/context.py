"""Context: what a plugin sees — services, plugins, effects and events.

The root ``Context()`` is an async context manager owning a task group; leaving it disposes
everything. Each plugin activation gets a child context: what it registers through it is an
effect of that plugin, undone newest-first when the plugin unloads.
"""

from __future__ import annotations

import inspect
import itertools
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, overload

import anyio

from .errors import ContextDisposed, HarnessError, PluginError, ServiceNotInjected
from .events import EventBus, check_listener
from .fiber import Fiber, FiberState
from .plugin import spec_of
from .runtime import Runtime, ServiceSlot
from .service import ServiceView, view_of

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

Disposer = Callable[[], Any]
S = TypeVar("S")
_ids = itertools.count()


class Context:
    """The root context (``Context()``) or a plugin's view of it."""

    _runtime: Runtime
    _fiber: Fiber | None
    _effects: dict[int, Disposer]
    _disposed: bool
    _gone: bool
    _group: TaskGroup | None
    _views: dict[str, ServiceView[Any]]
    """The views of services read from here, reused while the same instance is provided."""
    logger: logging.Logger

    def __init__(self, base_dir: Path | None = None) -> None:
        self._runtime = Runtime()
        self._runtime.base_dir = (base_dir or Path.cwd()).absolute()
        self._fiber = None
        self._effects = {}
        self._disposed = False
        self._gone = False
        self._group = None
        self._views = {}
        self.logger = logging.getLogger("harness")

    @classmethod
    def _for_fiber(cls, fiber: Fiber) -> Context:
        ctx = cls.__new__(cls)
        ctx._runtime = fiber.runtime
        ctx._fiber = fiber
        ctx._effects = {}
        ctx._disposed = False
        ctx._gone = False
        ctx._group = None
        ctx._views = {}
        ctx.logger = fiber.logger
        return ctx

    # -- the root ------------------------------------------------------------------------

    async def __aenter__(self) -> Context:
        if self._fiber is not None or self._group is not None:
            raise HarnessError("only a new root Context can be entered, and only once")
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        self._runtime.group = group
        self._runtime.bus.spawn = self._runtime.spawn
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        group = self._group
        assert group is not None
        self._runtime.stopping = True  # what is cancelled now was cut off by the stop
        group.cancel_scope.cancel()
        await self._close()
        self._runtime.group = None
        self._runtime.bus.spawn = None
        return await group.__aexit__(exc_type, exc, tb)

    # -- identity ------------------------------------------------------------------------

    @property
    def fiber(self) -> Fiber | None:
        """The fiber of the plugin this context belongs to (None on the root)."""
        return self._fiber

    @property
    def base_dir(self) -> Path:
        """The folder relative paths in plugin configs resolve against (cordis.yml's folder)."""
        return self._runtime.base_dir

    @property
    def config(self) -> Any:
        """The validated config of this context's plugin (None on the root)."""
        return None if self._fiber is None else self._fiber.config

    @property
    def is_disposed(self) -> bool:
        """True once the activation this context belongs to has ended."""
        return self._disposed

    @property
    def is_stopping(self) -> bool:
        """True once the host began to stop (SIGINT or SIGTERM to ``harness run``, or the
        root's exit): work cancelled from then on was cut off by the stop, as by ``kill -9``,
        not stopped by anyone's decision, so what the store keeps of it is left for the next
        process (docs/store.md)."""
        return self._runtime.stopping

    @property
    def bus(self) -> EventBus:
        """The event bus shared by every context of this root (for services that dispatch
        on the hot path; plugins use :meth:`on`, :meth:`emit` and the other modes)."""
        return self._runtime.bus

    def describe(self) -> str:
        """``plugin 'name'`` or ``the root context``, for messages."""
        return "the root context" if self._fiber is None else f"plugin {self._fiber.name!r}"

    # -- plugins and effects -------------------------------------------------------------

    def plugin(
        self,
        plugin: Any,
        config: Any = None,
        *,
        name: str | None = None,
        inject: Mapping[str, Any] | list[str] | None = None,
    ) -> Fiber:
        """Load ``plugin`` as a child of this context; return its fiber at once.

        ``name`` overrides the plugin's name; ``inject`` adds required services.
        """
        self._check_alive()
        spec = spec_of(plugin, name, inject)
        fiber = Fiber(self._runtime, self, spec, spec.inject)
        key = self._register(fiber.dispose)
        fiber.begin(config, partial(self._effects.pop, key, None))
        return fiber

    def effect(self, setup: Callable[[], Disposer | None]) -> Disposer:
        """Run ``setup`` now; its returned cleanup runs when this plugin unloads.

        Returns a dispose callable that runs the cleanup early (await its result when the
        cleanup is async); a second call is a no-op.
        """
        self._check_alive()
        cleanup = setup()
        if cleanup is None:
            return _noop
        if not callable(cleanup):
            raise PluginError(
                f"{self.describe()}: an effect's setup must return a cleanup callable or None, "
                f"got {type(cleanup).__name__}"
            )
        return self._add(cleanup)

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> Disposer:
        """Run ``func(*args)`` in the background until it ends or this plugin unloads."""
        self._check_alive()
        scope = anyio.CancelScope()
        logger = self.logger

        async def run() -> None:
            with scope:
                try:
                    await func(*args)
                except Exception:
                    logger.exception("background task %r raised", func)
            dispose()

        dispose = self._add(scope.cancel)
        self._runtime.spawn(run)
        return dispose

    def provide(self, name: str, instance: Any) -> Disposer:
        """Provide ``instance`` as service ``name`` (visible once this plugin is active)."""
        self._check_alive()
        if not name.isidentifier() or name.startswith("_") or hasattr(Context, name):
            raise PluginError(
                f"{self.describe()}: {name!r} cannot be a service name: it must be an "
                "identifier that is not a Context attribute"
            )
        runtime = self._runtime
        slot = runtime.reserve(name, instance, self)
        fiber = self._fiber
        if fiber is None or fiber.state is FiberState.ACTIVE:
            # Visible at once; plugins waiting for it are applied in the background.
            slot.published = True
            runtime.bus.emit("service/change", [name])

            async def wake() -> None:
                await runtime.wake([name])

            runtime.spawn(wake)
        return self._add(partial(runtime.withdraw, slot))

    # -- services ------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        view = self._read(name, required=True)
        # Kept in the instance's dict, so the next ``ctx.<name>`` is a plain attribute read;
        # the runtime drops it when the service is withdrawn, and _close when this context
        # is gone (only a name no attribute of the context has reaches here).
        self.__dict__[name] = view
        self._runtime.services[name].readers.add(self)
        return view

    @overload
    def get(self, name: str) -> Any: ...
    @overload
    def get(self, name: type[S]) -> S | None: ...
    def get(self, name: str | type[Any]) -> Any:
        """The service ``name`` (or of class ``name``) as seen from here, or None when absent.

        ``ctx.get(ToolsService)`` is typed: it returns the service (a view behaving as it,
        see :class:`~harness.service.ServiceView`) under its declared name.
        """
        return self._read(self._name_of(name), required=False)

    @overload
    def service(self, name: str) -> Any: ...
    @overload
    def service(self, name: type[S]) -> S: ...
    def service(self, name: str | type[Any]) -> Any:
        """The service ``name`` (or of class ``name``), typed; raises like ``ctx.<name>``."""
        return self._read(self._name_of(name), required=True)

    def _name_of(self, name: str | type[Any]) -> str:
        if isinstance(name, str):
            return name
        declared = [item for item in getattr(name, "provides", ()) if isinstance(item, str)]
        label = getattr(name, "name", None)
        if isinstance(label, str):
            declared.append(label)
        for item in declared:
            if item in self._runtime.services:
                return item
        found = [
            slot.name for slot in self._runtime.services.values() if isinstance(slot.instance, name)
        ]
        if len(found) > 1:
            raise PluginError(
                f"{self.describe()} asked for the service of class {name.__name__}, but "
                f"{', '.join(map(repr, found))} all are; ask for one by name"
            )
        if found:
            return found[0]
        return declared[0] if declared else name.__name__

    def _read(self, name: str, required: bool) -> Any:
        if self._gone:
            raise ContextDisposed(
                f"the context of {self.describe()} is disposed: it cannot read service "
                f"{name!r} any more (use the context of the plugin's current activation)"
            )
        slot = self._runtime.services.get(name)
        refused = self._refuse(name, slot)
        if refused is not None:
            if slot is None and required:
                raise AttributeError(
                    f"{type(self).__name__!r} object has no attribute {name!r}, and no service "
                    f"{name!r} is loaded"
                )
            raise refused
        if slot is None or not slot.published:
            if not required:
                return None
            raise AttributeError(
                f"service {name!r} is not available: its provider is not loaded or not active "
                f"(use ctx.get({name!r}) to read an optional service)"
            )
        instance = slot.instance
        view = self._views.get(name)
        if view is None or view._service is not instance:
            view = self._views[name] = view_of(instance, self)
        return view

    def _refuse(self, name: str, slot: ServiceSlot | None) -> ServiceNotInjected | None:
        """The error for a plugin reading a service it neither injects nor provides."""
        fiber = self._fiber
        if fiber is None or name in fiber.inject or (slot is not None and slot.owner is self):
            return None
        return ServiceNotInjected(
            f"plugin {fiber.name!r} reads service {name!r} without injecting it; "
            f"did you forget inject = [{name!r}]?"
        )

    # -- events --------------------------------------------------------------------------

    def on(self, name: str, listener: Callable[..., Any], prepend: bool = False) -> Disposer:
        """Listen to ``name`` until this plugin unloads; return a dispose callable.

        A known event's listener is checked now: one that cannot take the event's arguments
        raises :class:`~harness.errors.PluginError` naming the plugin, the event and the
        expected signature; an unknown name under ``tools/``, ``reload/`` or ``agent/`` is
        logged as a warning. A ``ready`` listener added once the host is ready runs at once
        (in the background).
        """
        return self._listen(name, listener, listener, prepend)

    def once(self, name: str, listener: Callable[..., Any], prepend: bool = False) -> Disposer:
        """Listen to ``name`` for one dispatch only."""

        def wrapper(*args: Any) -> Any:
            dispose()
            return listener(*args)

        dispose = self._listen(name, wrapper, listener, prepend)
        return dispose

    def _listen(
        self, name: str, callback: Callable[..., Any], checked: Callable[..., Any], prepend: bool
    ) -> Disposer:
        self._check_alive()
        warning = check_listener(name, checked, self.describe())
        if warning is not None:
            self.logger.warning("%s", warning)
        runtime = self._runtime
        if name == "ready" and runtime.ready:

            async def late() -> None:
                result = callback()
                if inspect.isawaitable(result):
                    await result

            return self.start_soon(late)
        bus = runtime.bus
        registration = bus.add(name, callback, self.logger, prepend, self)
        return self._add(partial(bus.remove, name, registration))

    def mark_ready(self) -> None:
        """Emit ``ready`` once: the initial load has settled (the Host calls this).

        Only the root can; later calls do nothing. ``ready`` listeners registered afterwards
        run at once.
        """
        if self._fiber is not None:
            raise PluginError(f"{self.describe()} cannot mark the host ready; only the root can")
        if not self._runtime.ready:
            self._runtime.ready = True
            self._runtime.bus.emit("ready")

    def mark_stopping(self) -> None:
        """Say that the host is stopping, before what runs is cancelled (``harness run``
        calls this on SIGINT or SIGTERM; the root's exit does it too): :attr:`is_stopping`.

        Only the root can; later calls do nothing.
        """
        if self._fiber is not None:
            raise PluginError(f"{self.describe()} cannot stop the host; only the root can")
        self._runtime.stopping = True

    def emit(self, name: str, *args: Any) -> None:
        """Call every listener; a raising one is logged and the rest still run."""
        self._runtime.bus.emit(name, *args)

    async def parallel(self, name: str, *args: Any) -> None:
        """Run every listener concurrently; errors are logged."""
        await self._runtime.bus.parallel(name, *args)

    async def serial(self, name: str, *args: Any) -> Any:
        """Await listeners in order; the first result that is not None wins."""
        return await self._runtime.bus.serial(name, *args)

    def bail(self, name: str, *args: Any) -> Any:
        """Call listeners in order; the first result that is not None wins."""
        return self._runtime.bus.bail(name, *args)

    def waterfall(
        self, name: str, *args: Any, inner: Callable[[], Awaitable[Any]] | None = None
    ) -> Awaitable[Any]:
        """Run the onion of ``name``: ``await ctx.waterfall(name, *args, inner)``.

        Each listener is ``async (*args, next)``; ``inner`` (the last positional argument, or
        the keyword) is the innermost ``next``.
        """
        if inner is None:
            if not args:
                raise TypeError("waterfall() needs an inner callable")
            inner = args[-1]
            args = args[:-1]
        return self._runtime.bus.waterfall(name, args, inner)

    # -- internals -----------------------------------------------------------------------

    def _check_alive(self) -> None:
        if self._disposed:
            raise ContextDisposed(
                f"the context of {self.describe()} is disposed: effects, listeners, services "
                "and child plugins cannot be added after the plugin unloaded"
            )

    def _register(self, cleanup: Disposer) -> int:
        key = next(_ids)
        self._effects[key] = cleanup
        return key

    def _add(self, cleanup: Disposer) -> Disposer:
        key = self._register(cleanup)
        effects = self._effects

        def dispose() -> Any:
            found = effects.pop(key, None)
            return None if found is None else found()

        return dispose

    async def _close(self) -> None:
        """Undo every effect, newest first; errors are logged and the rest still run."""
        self._disposed = True
        effects = self._effects
        with anyio.CancelScope(shield=True):
            while effects:
                key = next(reversed(effects))
                cleanup = effects.pop(key)
                try:
                    result = cleanup()
                    if inspect.isawaitable(result):
                        await result
                except Exception:
                    self.logger.exception("cleanup of %s raised", self.describe())
        self._gone = True  # cleanups could still read services; from now on nothing can
        cached = self.__dict__
        for name, view in self._views.items():
            if cached.get(name) is view:
                del cached[name]


def _noop() -> None:
    return None
