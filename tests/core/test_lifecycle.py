"""Fiber lifecycles as Cordis runs them: inertia, restarts, cycles of services, ``ready``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from harness import Context, Fiber, FiberState, Host, Service
from harness.errors import DependencyCycle, PluginError

from ..helpers import HARNESS

pytestmark = pytest.mark.anyio


class Gated:
    """A plugin injecting ``foo`` whose apply and cleanup wait for the test to release them."""

    def __init__(self) -> None:
        self.loading = anyio.Event()
        self.release_load = anyio.Event()
        self.unloading = anyio.Event()
        self.release_unload = anyio.Event()
        self.applied = 0

    def plugin(self) -> Any:
        async def apply(ctx: Context) -> Any:
            self.applied += 1
            self.loading.set()
            await self.release_load.wait()

            async def cleanup() -> None:
                self.unloading.set()
                await self.release_unload.wait()

            return cleanup

        apply.inject = ["foo"]  # type: ignore[attr-defined]
        return apply


def record(root: Context, fiber_of: list[Fiber]) -> list[tuple[str, str]]:
    moves: list[tuple[str, str]] = []

    def seen(fiber: Fiber, previous: FiberState) -> None:
        if fiber_of and fiber is fiber_of[0]:
            moves.append((previous.value, fiber.state.value))

    root.on("fiber/status", seen)
    return moves


async def test_service_back_while_the_dependent_unloads_applies_it_again() -> None:
    """cordis fiber.spec "inertia lock 1"."""
    gated = Gated()
    async with Context() as root, anyio.create_task_group() as group:
        dispose = root.provide("foo", 1)
        fiber = root.plugin(gated.plugin())
        with anyio.fail_after(5):
            await gated.loading.wait()
        group.start_soon(dispose)  # the service goes away while the dependent loads
        gated.loading = anyio.Event()
        gated.release_load.set()
        with anyio.fail_after(5):
            await gated.unloading.wait()
        assert fiber.state is FiberState.UNLOADING
        root.provide("foo", 2)  # ... and comes back while it unloads
        gated.release_unload.set()
        with anyio.fail_after(5):
            await gated.loading.wait()
            while fiber.state is not FiberState.ACTIVE:
                await fiber
        assert fiber.state is FiberState.ACTIVE
        assert gated.applied == 2
        assert fiber.ctx is not None
        assert fiber.ctx.foo == 2


async def test_service_back_while_the_dependent_still_loads_ends_active() -> None:
    """cordis fiber.spec "inertia lock 2": the fiber never settles pending beside foo."""
    gated = Gated()
    gated.release_unload.set()
    async with Context() as root, anyio.create_task_group() as group:
        dispose = root.provide("foo", 1)
        fiber = root.plugin(gated.plugin())
        with anyio.fail_after(5):
            await gated.loading.wait()
        group.start_soon(dispose)
        with anyio.fail_after(5):
            while "foo" in root._runtime.services:
                await anyio.lowlevel.checkpoint()
        root.provide("foo", 2)
        assert fiber.state is FiberState.LOADING
        gated.release_load.set()
        with anyio.fail_after(5):
            while fiber.state is not FiberState.ACTIVE or gated.applied < 2:
                await anyio.lowlevel.checkpoint()
        await fiber
        assert fiber.state is FiberState.ACTIVE
        assert fiber.ctx is not None
        assert fiber.ctx.foo == 2


async def test_a_provider_disposed_leaves_its_dependent_pending() -> None:
    """cordis fiber.spec "inertia lock 3"."""

    class Foo(Service):
        def __init__(self, ctx: Context) -> None:
            super().__init__(ctx, "foo")

    gated = Gated()
    gated.release_load.set()
    gated.release_unload.set()
    async with Context() as root:
        provider = await root.plugin(Foo)
        fiber = await root.plugin(gated.plugin())
        assert fiber.state is FiberState.ACTIVE
        await provider.dispose()
        await fiber
        assert fiber.state is FiberState.PENDING


@pytest.mark.parametrize("how", ["restart", "update"])
async def test_restart_and_update_go_from_unloading_straight_to_loading(how: str) -> None:
    async with Context() as root:
        fibers: list[Fiber] = []
        moves = record(root, fibers)
        fiber = root.plugin(lambda ctx, config: None)
        fibers.append(fiber)
        await fiber
        moves.clear()
        await (fiber.restart() if how == "restart" else fiber.update({"x": 1}))
        assert moves == [("active", "unloading"), ("unloading", "loading"), ("loading", "active")]


async def test_restart_waits_pending_only_when_a_service_is_missing() -> None:
    async with Context() as root, anyio.create_task_group() as group:
        fibers: list[Fiber] = []
        moves = record(root, fibers)
        dispose = root.provide("foo", 1)
        fiber = root.plugin(lambda ctx: None, inject=["foo"])
        fibers.append(fiber)
        await fiber
        group.start_soon(dispose)
        with anyio.fail_after(5):
            while fiber.state is not FiberState.PENDING:
                await anyio.lowlevel.checkpoint()
        assert moves[-2:] == [("active", "unloading"), ("unloading", "pending")]


# -- cycles among Service subclasses -----------------------------------------------------------


class Alpha(Service):
    inject: ClassVar[list[str]] = ["beta"]

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx, "alpha")


class Beta(Service):
    inject: ClassVar[list[str]] = ["alpha"]

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx, "beta")


async def test_services_injecting_each_other_report_the_cycle() -> None:
    async with Context() as root:
        alpha = await root.plugin(Alpha)
        beta = await root.plugin(Beta)
        for fiber in (alpha, beta):
            assert fiber.state is FiberState.PENDING
            assert isinstance(fiber.error, DependencyCycle)
        assert str(beta.error) == (
            "dependency cycle: Beta (needs 'alpha') -> Alpha (needs 'beta') -> Beta; "
            "break it by making one inject optional"
        )


async def test_a_plugin_providing_by_ctx_provide_closes_a_cycle_too() -> None:
    def gamma(ctx: Context) -> None:
        ctx.provide("gamma", object())

    gamma.inject = ["delta"]  # type: ignore[attr-defined]

    def delta(ctx: Context) -> None:
        ctx.provide("delta", object())

    delta.inject = ["gamma"]  # type: ignore[attr-defined]
    async with Context() as root:
        first = await root.plugin(gamma)
        second = await root.plugin(delta)
        assert isinstance(first.error, DependencyCycle)
        assert str(first.error) == (
            "dependency cycle: delta (needs 'gamma') -> gamma (needs 'delta') -> delta; "
            "break it by making one inject optional"
        )
        assert isinstance(second.error, DependencyCycle)


def test_check_shows_a_cycle_of_services(tmp_path: Path) -> None:
    for name, other in (("alpha", "beta"), ("beta", "alpha")):
        (tmp_path / f"{name}.py").write_text(
            textwrap.dedent(
                f"""
                from harness import Service

                inject = ["{other}"]


                class {name.title()}(Service):
                    def __init__(self, ctx):
                        super().__init__(ctx, "{name}")


                apply = {name.title()}
                """
            )
        )
    (tmp_path / "cordis.yml").write_text(
        "- { id: alpha, name: ./alpha.py }\n- { id: beta, name: ./beta.py }\n"
    )
    done = subprocess.run(
        [HARNESS, "check", "--json", "-c", str(tmp_path / "cordis.yml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    messages = {problem["entry"]: problem["message"] for problem in report["problems"]}
    assert set(messages) == {"alpha", "beta"}
    for message in messages.values():
        assert message.startswith("dependency cycle: ")
        assert "(needs 'alpha')" in message
        assert "(needs 'beta')" in message


# -- ready -------------------------------------------------------------------------------------


async def test_ready_is_emitted_once_the_initial_load_settled(tmp_path: Path) -> None:
    (tmp_path / "seed.py").write_text(
        textwrap.dedent(
            """
            seen = []

            def apply(ctx):
                ctx.on("ready", lambda: seen.append(sorted(ctx.get("host").ctx.tools.list())))
            """
        )
    )
    (tmp_path / "late.py").write_text(
        textwrap.dedent(
            """
            from harness import define_tool

            inject = ["tools"]

            def apply(ctx):
                ctx.tools.register(define_tool(name="late", description="d", execute=dict))
            """
        )
    )
    (tmp_path / "cordis.yml").write_text(
        "- { id: seed, name: ./seed.py, inject: [host] }\n- { id: late, name: ./late.py }\n"
    )
    async with Host(tmp_path / "cordis.yml") as host:
        seed = next(
            item
            for item in list(sys.modules.values())
            if getattr(item, "__file__", None) == str(tmp_path / "seed.py")
        )
        assert seed.seen == [["late"]]  # once, after every entry loaded
        ran = anyio.Event()
        host.ctx.on("ready", ran.set)  # a listener added afterwards runs at once
        with anyio.fail_after(5):
            await ran.wait()
        host.ctx.mark_ready()
        assert seed.seen == [["late"]]


async def test_a_plugin_scheduled_as_the_root_exits_is_never_applied() -> None:
    applied: list[str] = []

    def plugin(ctx: Context) -> None:
        applied.append("applied")

    async with Context() as root:
        fiber = root.plugin(plugin)  # its first apply is scheduled, not run yet
    assert applied == []
    assert fiber.state is FiberState.DISPOSED


async def test_update_and_restart_in_a_cancelled_scope_change_nothing() -> None:
    applied: list[Any] = []

    def plugin(ctx: Context, config: Any) -> None:
        applied.append(config)

    async with Context() as root:
        fiber = await root.plugin(plugin, {"n": 1})
        for call in (lambda: fiber.update({"n": 2}), fiber.restart):
            with anyio.CancelScope() as scope:
                scope.cancel()
                await call()
            assert scope.cancelled_caught
        assert applied == [{"n": 1}]
        assert fiber.state is FiberState.ACTIVE


async def test_the_root_says_when_the_host_stops_and_plugins_read_it() -> None:
    seen: list[tuple[str, bool]] = []

    async def plugin(ctx: Context) -> Any:
        def cleanup() -> None:
            seen.append(("cleanup", ctx.is_stopping))

        seen.append(("apply", ctx.is_stopping))
        with pytest.raises(PluginError) as raised:
            ctx.mark_stopping()
        assert str(raised.value) == "plugin 'plugin' cannot stop the host; only the root can"
        return cleanup

    async with Context() as root:
        await root.plugin(plugin)
        fiber = await root.plugin(plugin)
        await fiber.dispose()  # unloaded while the host runs: not a stop
    assert seen == [("apply", False), ("apply", False), ("cleanup", False), ("cleanup", True)]
    async with Context() as root:
        root.mark_stopping()  # a signal to harness run, before anything is cancelled
        root.mark_stopping()
        assert root.is_stopping
