"""Named events with Cordis' five dispatch modes.

``emit`` (sync, results ignored, errors logged), ``parallel`` (concurrent, errors logged),
``serial`` and ``bail`` (in order; the first result that is not None wins), and
``waterfall`` — the onion: each listener is ``async (*args, next)`` and decides whether and
when to call ``next``; the innermost ``next`` is the caller's ``inner``.

The bus keeps, per event, a tuple of callbacks rebuilt on every change: registration is
rare and dispatch is hot, so dispatch never copies and a listener added during a dispatch
takes effect from the next one.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from functools import partial
from typing import Any

import anyio

from .errors import PluginError

Callback = Callable[..., Any]
Spawner = Callable[[Callable[[], Coroutine[Any, Any, Any]]], None]

_log = logging.getLogger("harness.events")

EVENTS: dict[str, tuple[str, ...]] = {
    "ready": (),
    "fiber/status": ("fiber", "previous"),
    "service/change": ("names",),
    "tools/pre-execute": ("call", "next"),
    "tools/execute": ("call", "next"),
    "tools/post-execute": ("call", "result", "next"),
    "tools/result": ("call", "result"),
    "tools/change": ("kind", "name"),
    "reload/start": ("files",),
    "reload/done": ("report",),
    "reload/failed": ("report",),
    "reload/problems": ("problems",),
    "agent/event": ("event",),
}
"""The events harness emits, with the arguments their listeners are called with."""

CHECKED_NAMESPACES = ("tools/", "reload/", "agent/")
"""Prefixes whose unknown names are reported (a typo such as ``tools/preexecute``)."""


def declare_event(name: str, *params: str) -> None:
    """Make ``name`` a known event whose listeners are called with ``params``."""
    EVENTS[name] = params


def check_listener(name: str, callback: Callback, owner: str) -> str | None:
    """Check a listener as it registers, as pluggy checks hook implementations.

    Raises :class:`~harness.errors.PluginError` when ``callback`` cannot be called with a
    known event's arguments; returns a warning for an unknown name in a checked namespace.
    """
    params = EVENTS.get(name)
    if params is None:
        if not name.startswith(CHECKED_NAMESPACES):
            return None
        import difflib  # only for a misspelt name: not loaded at start-up

        close = difflib.get_close_matches(name, list(EVENTS), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        known = ", ".join(sorted(item for item in EVENTS if item.startswith(name.split("/")[0])))
        return (
            f"{owner} listens to {name!r}, which harness never emits{hint}; "
            f"known events there: {known}"
        )
    if not callable(callback):
        raise PluginError(f"{owner} listens to {name!r} with {callback!r}, which is not callable")
    try:
        signature = inspect.signature(callback)
    except (TypeError, ValueError):  # builtins without a signature: trust them
        return None
    try:
        signature.bind(*params)
    except TypeError:
        label = getattr(callback, "__qualname__", None) or repr(callback)
        signature = signature.replace(
            parameters=[
                item.replace(annotation=inspect.Parameter.empty)
                for item in signature.parameters.values()
            ],
            return_annotation=inspect.Signature.empty,
        )
        expected = f"({', '.join(params)})"
        raise PluginError(
            f"{owner} listens to {name!r} with {label}{signature}, but {name!r} listeners are "
            f"called as {expected}; give it that signature"
            + (" (await next() to run the rest of the pipeline)" if "next" in params else "")
        ) from None
    return None


class Listener:
    """One registration: the callback, and the logger and context of the plugin that owns it."""

    __slots__ = ("callback", "logger", "owner")

    def __init__(self, callback: Callback, logger: logging.Logger, owner: Any = None) -> None:
        self.callback = callback
        self.logger = logger
        self.owner = owner
        """The registering :class:`~harness.context.Context` (None when added on the bus)."""


class EventBus:
    """Listeners by event name, and the dispatch modes over them."""

    def __init__(self) -> None:
        self._listeners: dict[str, list[Listener]] = {}
        self._callbacks: dict[str, tuple[Callback, ...]] = {}
        self._layers: dict[str, tuple[Callback, ...]] = {}
        self.spawn: Spawner | None = None

    def add(
        self,
        name: str,
        callback: Callback,
        logger: logging.Logger = _log,
        prepend: bool = False,
        owner: Any = None,
    ) -> Listener:
        """Register ``callback`` for ``name``; return the registration for :meth:`remove`."""
        listener = Listener(callback, logger, owner)
        listeners = self._listeners.setdefault(name, [])
        if prepend:
            listeners.insert(0, listener)
        else:
            listeners.append(listener)
        self._rebuild(name, listeners)
        return listener

    def remove(self, name: str, listener: Listener) -> None:
        """Unregister ``listener``; removing one that is gone is a no-op."""
        listeners = self._listeners.get(name)
        if listeners is None or listener not in listeners:
            return
        listeners.remove(listener)
        if listeners:
            self._rebuild(name, listeners)
        else:
            del self._listeners[name]
            del self._callbacks[name]
            del self._layers[name]

    def _rebuild(self, name: str, listeners: list[Listener]) -> None:
        callbacks = tuple(item.callback for item in listeners)
        self._callbacks[name] = callbacks
        self._layers[name] = tuple(
            callback if inspect.iscoroutinefunction(callback) else _as_layer(callback)
            for callback in callbacks
        )

    @property
    def layers(self) -> Mapping[str, tuple[Callback, ...]]:
        """Event names that have listeners (a read-only view, for fast checks)."""
        return self._layers

    def listeners(self, name: str) -> tuple[Listener, ...]:
        """The registrations of ``name``, in dispatch order."""
        return tuple(self._listeners.get(name, ()))

    def count(self, name: str) -> int:
        """How many listeners ``name`` has."""
        return len(self._callbacks.get(name, ()))

    def emit(self, name: str, *args: Any) -> None:
        """Call every listener; log (and skip past) a listener that raises.

        A listener that returns an awaitable is run in the background on the root's task
        group, its errors logged the same way.
        """
        for listener in tuple(self._listeners.get(name, ())):
            try:
                result = listener.callback(*args)
            except Exception:
                listener.logger.exception("listener of %r raised", name)
                continue
            if inspect.isawaitable(result):
                self._run_detached(name, listener, result)

    async def parallel(self, name: str, *args: Any) -> None:
        """Run every listener concurrently and wait for all; errors are logged."""
        listeners = tuple(self._listeners.get(name, ()))
        if not listeners:
            return
        async with anyio.create_task_group() as group:
            for listener in listeners:
                group.start_soon(_guarded, name, listener, args)

    async def serial(self, name: str, *args: Any) -> Any:
        """Await listeners in order; return the first result that is not None."""
        for callback in self._callbacks.get(name, ()):
            result = callback(*args)
            if inspect.isawaitable(result):
                result = await result
            if result is not None:
                return result
        return None

    def bail(self, name: str, *args: Any) -> Any:
        """Call listeners in order; return the first result that is not None."""
        for callback in self._callbacks.get(name, ()):
            result = callback(*args)
            if result is not None:
                return result
        return None

    def waterfall(
        self, name: str, args: tuple[Any, ...], inner: Callable[[], Awaitable[Any]]
    ) -> Awaitable[Any]:
        """Return the onion of ``name`` around ``inner``, ready to await.

        No coroutine wraps the dispatch: with no listeners this is ``inner()`` itself, else
        the outermost listener's call, its ``next`` a chain of partials. A sync listener
        (one returning ``next()`` or a value) is adapted once, when it registers.
        """
        callbacks = self._layers.get(name)
        if not callbacks:
            return inner()
        step: Callable[[], Awaitable[Any]] = inner
        for callback in reversed(callbacks):
            step = partial(callback, *args, step)
        return step()

    def _run_detached(self, name: str, listener: Listener, awaitable: Awaitable[Any]) -> None:
        async def run() -> None:
            try:
                await awaitable
            except Exception:
                listener.logger.exception("listener of %r raised", name)

        if self.spawn is None:
            if inspect.iscoroutine(awaitable):
                awaitable.close()
            listener.logger.warning("async listener of %r dropped: no running root", name)
            return
        self.spawn(run)


def _as_layer(callback: Callback) -> Callback:
    async def layer(*args: Any) -> Any:
        result = callback(*args)
        if inspect.isawaitable(result):
            result = await result
        return result

    return layer


async def _guarded(name: str, listener: Listener, args: tuple[Any, ...]) -> None:
    try:
        result = listener.callback(*args)
        if inspect.isawaitable(result):
            await result
    except Exception:
        listener.logger.exception("listener of %r raised", name)
