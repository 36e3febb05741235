"""``harness:mcp-client``: mount another MCP server's tools into the registry.

``apply`` connects (starting the server, or reaching it), lists its tools and registers the
selected ones as tools of this entry; the fiber is ``active`` once they are there. When the
server cannot be reached, or when it goes away later, the entry becomes ``failed`` with a
message saying what happened (its tools are removed, running calls end with an error), and
is restarted after ``restart_delay`` seconds, doubling per failure up to
``max_restart_delay``; a connection that stayed up that long resets the delay.
"""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass, field

import anyio

from ..context import Context
from ..errors import HarnessError, PluginError
from ..fiber import Fiber, FiberState
from .config import GatewayConfig
from .mount import Mount
from .names import default_prefix
from .upstream import Connection

name = "mcp-client"
inject = {"tools": {"required": True}, "approval": {"required": False}}
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


_supervision: weakref.WeakKeyDictionary[Fiber, Supervision] = weakref.WeakKeyDictionary()


def supervision(fiber: Fiber) -> Supervision | None:
    """The restart bookkeeping of an ``harness:mcp-client`` fiber (for status and tests)."""
    return _supervision.get(fiber)


async def apply(ctx: Context, config: GatewayConfig) -> None:
    """Connect, mount the tools, and watch the connection."""
    fiber = ctx.fiber
    assert fiber is not None
    state = _supervision.setdefault(fiber, Supervision())
    if state.config != config:
        state.config, state.attempts, state.crashed = config, 0, None
    state.generation += 1
    label = _label(fiber.name, config)
    if state.crashed is not None:
        why, state.crashed = state.crashed, None
        raise PluginError(f"{label}: {why}; {_schedule(fiber, state, config)}")
    connection = Connection(config, label, ctx.base_dir, ctx.logger)
    prefix = config.prefix if config.prefix is not None else default_prefix(fiber.name)
    mount = Mount(ctx, connection, config, prefix)
    connection.elicit = mount.elicit
    ctx.start_soon(connection.run)
    ctx.effect(lambda: connection.stop)
    await connection.ready.wait()
    if connection.failure is not None:
        raise PluginError(f"{label}: {connection.failure}; {_schedule(fiber, state, config)}")
    mount.sync(connection.tools)
    connection.on_tools = mount.sync
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
        fiber.runtime.spawn(lambda: _restart(fiber, generation))

    connection.on_lost = lost


def _schedule(fiber: Fiber, state: Supervision, config: GatewayConfig) -> str:
    delay = min(config.restart_delay * 2**state.attempts, config.max_restart_delay)
    state.attempts += 1
    state.delays.append(delay)
    generation = state.generation

    async def later() -> None:
        await anyio.sleep(delay)
        if fiber.state is FiberState.FAILED:
            await _restart(fiber, generation)

    fiber.runtime.spawn(later)
    return f"restarting in {delay:g} s (attempt {state.attempts})"


async def _restart(fiber: Fiber, generation: int) -> None:
    state = _supervision.get(fiber)
    if state is None or state.generation != generation:
        return  # the entry was edited, reloaded or restarted meanwhile
    if fiber.state not in (FiberState.ACTIVE, FiberState.FAILED):
        return
    # A failed apply leaves its error on the fiber and schedules the next attempt itself.
    with contextlib.suppress(HarnessError):
        await fiber.restart()


def _label(entry: str, config: GatewayConfig) -> str:
    return f"MCP server {entry!r}"
