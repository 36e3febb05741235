"""The runtime of one plugin: its state, its config and its current activation.

Each activation gets a fresh child :class:`~harness.context.Context`; everything the plugin
registers through it is an effect of that activation and is undone newest-first when the
plugin unloads, fails or restarts. A late callback holding an old context cannot leak an
effect: the old context is disposed and refuses new ones.

State transitions of one fiber are serialized by a lock; ``fiber/status`` is emitted on
each, with ``(fiber, previous_state)``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Generator, Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from .errors import HarnessError, PluginError
from .plugin import PluginSpec, validate_config

if TYPE_CHECKING:
    from .context import Context
    from .runtime import Runtime

ENTRY_FAILED = "harness_entry_failed"
"""The attribute set (true) on the log record of a plugin that failed."""


class FiberState(StrEnum):
    """Where a plugin is in its life."""

    PENDING = "pending"
    """Waiting for a required service (or not started yet)."""
    LOADING = "loading"
    """Its apply is running."""
    ACTIVE = "active"
    FAILED = "failed"
    """Its config was invalid or its apply raised; see ``error``."""
    UNLOADING = "unloading"
    DISPOSED = "disposed"


class Fiber:
    """A plugin loaded into a context. Await it to wait until it settles."""

    def __init__(
        self, runtime: Runtime, parent: Context, spec: PluginSpec, inject: Mapping[str, bool]
    ) -> None:
        self.runtime = runtime
        self.parent = parent
        self.spec = spec
        self.name = spec.name
        self.inject: Mapping[str, bool] = inject
        self.state = FiberState.PENDING
        self.error: BaseException | None = None
        self.problems: list[str] = []
        """Problems the running plugin reports about its own entry while it stays active
        (a tool it could not register, say): ``harness check`` lists them. Cleared at
        each activation."""
        self.config: Any = None
        self.ctx: Context | None = None
        self.logger = logging.getLogger(f"harness.plugin.{spec.name}")
        self._lock = anyio.Lock(fast_acquire=True)
        """Uncontended, taken without a trip through the event loop: the transitions that
        callers start keep their checkpoint (:meth:`update`, :meth:`restart`), and the
        internal ones their cancellation point."""
        self._settled = anyio.Event()
        self._detach: Callable[[], Any] | None = None

    def __repr__(self) -> str:
        return f"<Fiber {self.name} {self.state.value}>"

    @property
    def plugin(self) -> Any:
        """The plugin object."""
        return self.spec.plugin

    @property
    def is_waiting(self) -> bool:
        """True when pending and not yet scheduled away."""
        return self.state is FiberState.PENDING

    @property
    def is_running(self) -> bool:
        """True while loading or active."""
        return self.state in (FiberState.LOADING, FiberState.ACTIVE)

    # -- awaiting ------------------------------------------------------------------------

    def __await__(self) -> Generator[Any, None, Fiber]:
        return self.wait().__await__()

    async def wait(self) -> Fiber:
        """Wait until the plugin is active, pending or failed; raise its error when failed."""
        await self._settled.wait()
        if self.state is FiberState.FAILED and self.error is not None:
            if isinstance(self.error, HarnessError):
                raise self.error
            raise PluginError(f"plugin {self.name!r} failed to apply: {self.error}") from self.error
        return self

    # -- public transitions --------------------------------------------------------------

    async def dispose(self) -> None:
        """Unload the plugin for good; a second call is a no-op."""
        with anyio.CancelScope(shield=True):
            async with self._lock:
                if self.state is FiberState.DISPOSED:
                    return
                await self._stop(final=True)
            if self._detach is not None:
                detach, self._detach = self._detach, None
                detach()

    async def update(self, config: Any) -> Fiber:
        """Validate ``config`` and restart with it.

        Raises :class:`~harness.errors.ConfigError` (keeping the old config running) when it
        does not validate, and the apply's error when the restart fails.
        """
        value = validate_config(self.spec, config)
        await anyio.lowlevel.checkpoint()
        async with self._lock:
            if self.state is FiberState.DISPOSED:
                raise PluginError(f"plugin {self.name!r} is disposed and cannot be updated")
            await self._stop(final=False, restarting=True)
            self.config = value
            await self._start()
        return await self.wait()

    async def restart(self) -> Fiber:
        """Unload and apply again with the same config."""
        await anyio.lowlevel.checkpoint()
        async with self._lock:
            if self.state is FiberState.DISPOSED:
                raise PluginError(f"plugin {self.name!r} is disposed and cannot be restarted")
            await self._stop(final=False, restarting=True)
            await self._start()
        return await self.wait()

    # -- used by the context and the runtime ---------------------------------------------

    def begin(self, config: Any, detach: Callable[[], Any]) -> None:
        """Validate the initial config and schedule the first apply."""
        self._detach = detach
        self.runtime.fibers[self] = None
        try:
            self.config = validate_config(self.spec, config)
        except HarnessError as exc:
            self._fail(exc)
            return
        self.runtime.spawn(self.start)

    async def start(self) -> None:
        """Apply now if pending and every required service is there."""
        await anyio.lowlevel.checkpoint_if_cancelled()
        async with self._lock:
            if self.state is FiberState.PENDING:
                await self._start()

    async def suspend(self) -> None:
        """Unload because a required service went away; back to pending while it is missing.

        The service may have come back while this fiber was still loading or unloading (its
        return could not apply a fiber that was not pending): then it is applied again at
        once instead of settling ``pending`` beside its services.
        """
        await anyio.lowlevel.checkpoint_if_cancelled()
        async with self._lock:
            if self.is_running:
                await self._stop(final=False, restarting=True)
                await self._start()

    # -- internals (lock held) -----------------------------------------------------------

    async def _start(self) -> None:
        from .context import Context
        from .service import Service, unwrap

        missing = self.runtime.missing(self)
        if missing:
            self.error = None
            self._set_state(FiberState.PENDING)
            self.runtime.find_cycle(self)
            if self.error is None:
                self.logger.debug("waiting for %s", ", ".join(missing))
            self._settle()
            return
        if self._settled.is_set():
            self._settled = anyio.Event()
        self.error = None
        self.problems = []
        ctx = self.ctx = Context._for_fiber(self)
        self._set_state(FiberState.LOADING)
        try:
            result = self.spec.apply(ctx, self.config)
            if inspect.isawaitable(result):
                result = await result
            if isinstance(result, Service) and unwrap(result) is result:
                await result.start()  # a new service (a view of one started already passes)
                ctx.effect(lambda: result.stop)
            elif callable(result) and not self.spec.is_class:
                ctx.effect(lambda: result)
        except Exception as exc:
            self.ctx = None
            await ctx._close()
            self._fail(exc)
            return
        except BaseException as exc:
            self.ctx = None
            await ctx._close()
            if not _is_cancellation(exc):  # SystemExit, KeyboardInterrupt: the plugin's failure
                self._fail(exc)
                return
            self._set_state(FiberState.FAILED)
            self._settle()
            raise
        self._set_state(FiberState.ACTIVE)
        # Dependents are applied before this fiber settles, so awaiting a provider also
        # waits for the plugins that were waiting on it.
        await self.runtime.publish(ctx)
        self._settle()

    async def _stop(self, final: bool, restarting: bool = False) -> None:
        """Unload; ``restarting`` leaves the state to the ``_start`` that follows at once
        (``unloading -> loading``, as in Cordis: ``pending`` means waiting for a service)."""
        ctx, self.ctx = self.ctx, None
        if final or ctx is not None:
            self._set_state(FiberState.UNLOADING)
        if ctx is not None:
            await ctx._close()
        self.error = None
        if restarting:
            return
        if final:
            self._set_state(FiberState.DISPOSED)
            self.runtime.fibers.pop(self, None)
        else:
            self._set_state(FiberState.PENDING)
        self._settle()

    def _fail(self, exc: BaseException) -> None:
        self.error = exc
        self._set_state(FiberState.FAILED)
        # marked, so that a caller which reports entry problems itself (the command line,
        # with file and line) can leave this record out
        self.logger.error(
            "plugin %r failed: %s", self.name, exc, exc_info=exc, extra={ENTRY_FAILED: True}
        )
        self._settle()

    def _settle(self) -> None:
        self._settled.set()

    def _set_state(self, state: FiberState) -> None:
        previous, self.state = self.state, state
        if previous is not state:
            self.runtime.bus.emit("fiber/status", self, previous)


def _is_cancellation(exc: BaseException) -> bool:
    """True for the running backend's cancellation (alone or inside an exception group)."""
    cancelled = anyio.get_cancelled_exc_class()
    if isinstance(exc, BaseExceptionGroup):
        return exc.subgroup(lambda inner: isinstance(inner, cancelled)) is not None
    return isinstance(exc, cancelled)
