"""``harness:mcp-client``: mount another MCP server's tools into the registry.

``apply`` connects (starting the server, or reaching it), lists its tools and registers the
selected ones as tools of this entry; the fiber is ``active`` once they are there. When the
server cannot be reached, or when it goes away later, the entry becomes ``failed`` with a
message saying what happened (its tools are removed, running calls end with an error), and
is restarted after ``restart_delay`` seconds, doubling per failure up to
``max_restart_delay``; a connection that stayed up that long resets the delay. A restart
attempt connects on the side, so the entry shows ``failed`` (and why) until one succeeds;
each failed attempt updates the entry's error and emits ``mcp-client/retry (id, message)``.

A config that cannot work whatever happens (a ``cwd`` that is not a folder, a command that is
not installed; a malformed URL is refused with the config) fails the entry with what to do
and is not retried (:mod:`.preflight`).
"""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass, field

import anyio

from ..context import Context
from ..errors import HarnessError, PluginError
from ..fiber import Fiber, FiberState
from ..service import unwrap
from .config import GatewayConfig
from .mount import Mount
from .names import default_prefix
from .preflight import static_problem
from .primitives import Listed, Primitives
from .tokens import StoreTokens, TokenRecord
from .upstream import Connection

name = "mcp-client"
inject = {
    "tools": {"required": True},
    "approval": {"required": False},
    "resources": {"required": False},
    "prompts": {"required": False},
    "store": {"required": False},  # where OAuth tokens are kept, when loaded
}
Config = GatewayConfig


@dataclass
class Supervision:
    """Restart bookkeeping of one entry, kept across its activations."""

    config: GatewayConfig | None = None
    attempts: int = 0
    delays: list[float] = field(default_factory=list)
    """Every restart delay scheduled so far (also in the failure messages)."""
    crashed: str | None = None
    """Why the last live connection ended: the next activation fails with it, visibly."""
    generation: int = 0
    connected_at: float | None = None
    connection: Connection | None = None
    mount: Mount | None = None
    adopt: Connection | None = None
    """A connection a restart attempt made, for the next activation to take over."""
    tokens: TokenRecord | None = None
    """Where the entry's OAuth tokens are kept: the store's, when it is loaded."""


_supervision: weakref.WeakKeyDictionary[Fiber, Supervision] = weakref.WeakKeyDictionary()


def supervision(fiber: Fiber) -> Supervision | None:
    """The restart bookkeeping of an ``harness:mcp-client`` fiber (for status and tests)."""
    return _supervision.get(fiber)


async def apply(ctx: Context, config: GatewayConfig) -> None:
    """Connect (or adopt the connection a restart made), mount the tools, watch them."""
    fiber = ctx.fiber
    assert fiber is not None
    state = _supervision.setdefault(fiber, Supervision())
    if state.config != config:
        state.config, state.attempts, state.crashed = config, 0, None
    state.generation += 1
    label = _label(fiber.name, config)
    static = static_problem(config, ctx.base_dir)
    if static is not None:  # no restart: only a fix (saved, so hot reload applies it) helps
        state.attempts, state.crashed, state.adopt = 0, None, None
        raise PluginError(f"{label}: {static}")
    if state.crashed is not None:
        why, state.crashed = state.crashed, None
        raise PluginError(f"{label}: {why}; {_schedule(fiber, state, config)}")
    connection, state.adopt = state.adopt, None
    if connection is None or connection.config != config:
        connection = Connection(
            config, label, ctx.base_dir, ctx.logger, fiber.name, _tokens(ctx, fiber.name)
        )
        ctx.start_soon(connection.run)
    ctx.effect(lambda: connection.stop)
    await connection.ready.wait()
    if connection.failure is not None or connection.closed.is_set():
        why = connection.failure or "the server closed the connection"
        raise PluginError(f"{label}: {why}; {_schedule(fiber, state, config)}")
    prefix = config.prefix if config.prefix is not None else default_prefix(fiber.name)
    mount = Mount(ctx, connection, config, prefix)
    connection.callers = mount.callers
    mount.sync(connection.tools)
    connection.on_tools = mount.sync
    primitives = Primitives(ctx, connection, config, prefix)

    def listed(found: Listed) -> None:
        primitives.sync(found)
        mount.also = primitives.problems
        mount.report()

    listed(connection.listed)
    connection.on_listed = listed
    connection.on_updated = primitives.updated
    state.connected_at = anyio.current_time()
    state.connection, state.mount = connection, mount
    generation = state.generation

    def lost(why: str) -> None:
        if state.generation != generation:
            return
        up = anyio.current_time() - (state.connected_at or 0.0)
        if up >= config.max_restart_delay:
            state.attempts = 0
        state.crashed = why
        ctx.logger.warning("%s: %s", label, why)
        fiber.runtime.spawn(lambda: _fail_visibly(fiber, generation))

    connection.on_lost = lost


def _schedule(fiber: Fiber, state: Supervision, config: GatewayConfig) -> str:
    """Plan the next attempt; return the words for the failure message.

    The attempt connects on the side while the entry stays ``failed`` (so ``check`` and
    ``status`` keep showing why); only a connection that works is handed to a fresh
    activation of the entry.
    """
    delay = min(config.restart_delay * 2**state.attempts, config.max_restart_delay)
    state.attempts += 1
    state.delays.append(delay)
    generation = state.generation
    label = _label(fiber.name, config)

    def current() -> bool:
        return state.generation == generation and fiber.state is FiberState.FAILED

    async def later() -> None:
        await anyio.sleep(delay)
        if not current():
            return
        static = static_problem(config, fiber.runtime.base_dir)
        if static is not None:  # e.g. its folder was deleted meanwhile: stop retrying
            fiber.error = PluginError(f"{label}: {static}")
            fiber.logger.warning("%s", fiber.error)
            return
        probe = Connection(
            config, label, fiber.runtime.base_dir, fiber.logger, fiber.name, state.tokens
        )
        fiber.runtime.spawn(probe.run)
        await probe.ready.wait()
        if not current():
            await probe.stop()
            return
        if probe.failure is not None:
            message = f"{label}: {probe.failure}; {_schedule(fiber, state, config)}"
            fiber.error = PluginError(message)
            fiber.logger.warning("%s", message)
            fiber.runtime.bus.emit("mcp-client/retry", fiber.name, message)
            return
        state.adopt = probe
        # A failed apply leaves its error on the fiber and schedules the next attempt.
        with contextlib.suppress(HarnessError):
            await fiber.restart()
        if state.adopt is probe:  # not taken (the entry changed meanwhile)
            state.adopt = None
            await probe.stop()

    fiber.runtime.spawn(later)
    return f"restarting in {delay:g} s (attempt {state.attempts})"


async def _fail_visibly(fiber: Fiber, generation: int) -> None:
    """A live connection ended: restart the entry, whose apply then fails saying why."""
    state = _supervision.get(fiber)
    if state is None or state.generation != generation or fiber.state is not FiberState.ACTIVE:
        return  # the entry was edited, reloaded or restarted meanwhile
    with contextlib.suppress(HarnessError):
        await fiber.restart()


def _tokens(ctx: Context, entry: str) -> TokenRecord | None:
    """The store's record of the entry's OAuth tokens, when ``harness:store`` is loaded
    (None: the token file)."""
    store = ctx.get("store")
    database = getattr(unwrap(store), "database", None) if store is not None else None
    tokens = None if database is None else StoreTokens(database, entry)
    state = _supervision.get(ctx.fiber) if ctx.fiber is not None else None
    if state is not None:
        state.tokens = tokens
    return tokens


def _label(entry: str, config: GatewayConfig) -> str:
    return f"MCP server {entry!r}"
