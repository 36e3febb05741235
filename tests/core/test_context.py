"""Plugins, fibers, effects and disposal, from the public API."""

from __future__ import annotations

import logging
import types
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from harness import Context, ContextDisposed, FiberState, PluginError

pytestmark = pytest.mark.anyio


async def test_function_plugin_with_and_without_config() -> None:
    seen: list[Any] = []

    def with_config(ctx: Context, config: Any) -> None:
        seen.append(("with", config))

    def without_config(ctx: Context) -> None:
        seen.append(("without", ctx.fiber.name if ctx.fiber else None))

    async with Context() as root:
        await root.plugin(with_config, {"a": 1})
        await root.plugin(without_config)
    assert seen == [("with", {"a": 1}), ("without", "without_config")]


async def test_plain_dict_config_defaults_to_empty() -> None:
    seen: list[Any] = []
    async with Context() as root:
        fiber = await root.plugin(lambda ctx, config: seen.append(config))
    assert seen == [{}]
    assert fiber.config == {}


async def test_async_apply_and_async_disposer() -> None:
    log: list[str] = []

    async def plugin(ctx: Context) -> Any:
        await anyio.lowlevel.checkpoint()
        log.append("apply")

        async def dispose() -> None:
            await anyio.lowlevel.checkpoint()
            log.append("dispose")

        return dispose

    async with Context() as root:
        fiber = await root.plugin(plugin)
        assert fiber.state is FiberState.ACTIVE
        await fiber.dispose()
        assert fiber.state is FiberState.DISPOSED
    assert log == ["apply", "dispose"]


async def test_class_plugin_with_ctx_only_and_with_config() -> None:
    made: list[Any] = []

    class OnlyCtx:
        def __init__(self, ctx: Context) -> None:
            made.append(("only", type(ctx).__name__))

    class WithConfig:
        def __init__(self, ctx: Context, config: Any) -> None:
            made.append(("config", config))

    async with Context() as root:
        await root.plugin(OnlyCtx)
        await root.plugin(WithConfig, {"x": 2})
    assert made == [("only", "Context"), ("config", {"x": 2})]


async def test_module_plugin_uses_its_name_and_apply() -> None:
    module = types.ModuleType("my_plugin")
    applied: list[str] = []

    def apply(ctx: Context) -> None:
        applied.append(ctx.logger.name)

    module.apply = apply  # type: ignore[attr-defined]
    module.name = "mod"  # type: ignore[attr-defined]
    async with Context() as root:
        fiber = await root.plugin(module)
        assert fiber.name == "mod"
    assert applied == ["harness.plugin.mod"]


async def test_not_a_plugin_raises_plugin_error() -> None:
    async with Context() as root:
        with pytest.raises(PluginError, match="is not a plugin"):
            root.plugin(42)
        with pytest.raises(PluginError, match="apply must accept"):
            root.plugin(lambda: None)


async def test_plugin_returns_fiber_at_once_and_settles_later() -> None:
    started = anyio.Event()
    release = anyio.Event()

    async def slow(ctx: Context) -> None:
        started.set()
        await release.wait()

    async with Context() as root:
        fiber = root.plugin(slow)
        assert fiber.state is FiberState.PENDING
        with anyio.fail_after(5):
            await started.wait()
        assert fiber.state is FiberState.LOADING
        release.set()
        assert await fiber is fiber
        assert fiber.state is FiberState.ACTIVE


async def test_effects_are_disposed_newest_first_subtree_included() -> None:
    order: list[str] = []

    def child(ctx: Context) -> Any:
        ctx.effect(lambda: lambda: order.append("child effect"))
        return lambda: order.append("child disposer")

    async def parent(ctx: Context) -> Any:
        ctx.effect(lambda: lambda: order.append("first effect"))
        await ctx.plugin(child)
        ctx.on("some/event", lambda: None)
        ctx.effect(lambda: lambda: order.append("last effect"))
        return lambda: order.append("parent disposer")

    async with Context() as root:
        fiber = await root.plugin(parent)
        assert root._runtime.bus.count("some/event") == 1
        await fiber.dispose()
        assert root._runtime.bus.count("some/event") == 0
        assert order == [
            "parent disposer",
            "last effect",
            "child disposer",
            "child effect",
            "first effect",
        ]
        await fiber.dispose()  # a second dispose is a no-op
    assert order.count("parent disposer") == 1


async def test_effect_dispose_callable_runs_cleanup_once() -> None:
    runs: list[str] = []
    async with Context() as root:
        dispose = root.effect(lambda: lambda: runs.append("x"))
        dispose()
        dispose()
    assert runs == ["x"]


async def test_async_cleanup_is_awaited_through_dispose() -> None:
    runs: list[str] = []

    async def cleanup() -> None:
        runs.append("async")

    async with Context() as root:
        dispose = root.effect(lambda: cleanup)
        await dispose()
        assert dispose() is None
    assert runs == ["async"]


async def test_effect_on_disposed_context_raises() -> None:
    kept: list[Context] = []

    def plugin(ctx: Context) -> None:
        kept.append(ctx)

    async with Context() as root:
        fiber = await root.plugin(plugin)
        await fiber.dispose()
        with pytest.raises(ContextDisposed, match="plugin 'plugin' is disposed"):
            kept[0].effect(lambda: None)
        with pytest.raises(ContextDisposed):
            kept[0].on("x", lambda: None)
        with pytest.raises(ContextDisposed):
            kept[0].plugin(plugin)


async def test_root_exit_disposes_everything() -> None:
    order: list[str] = []
    async with Context() as root:
        for name in ("a", "b", "c"):

            def plugin(ctx: Context) -> Any:
                label = ctx.fiber.name if ctx.fiber else ""
                return lambda: order.append(label)

            await root.plugin(plugin, name=name)
    assert order == ["c", "b", "a"]


async def test_apply_failure_is_isolated_and_partial_effects_undone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    undone: list[str] = []

    def broken(ctx: Context) -> None:
        ctx.effect(lambda: lambda: undone.append("effect"))
        ctx.on("evt", lambda: None)
        raise RuntimeError("boom")

    def healthy(ctx: Context) -> None:
        ctx.on("evt", lambda: None)

    async with Context() as root:
        good = await root.plugin(healthy)
        bad = root.plugin(broken)
        with pytest.raises(PluginError, match="plugin 'broken' failed to apply: boom"):
            await bad
        assert bad.state is FiberState.FAILED
        assert isinstance(bad.error, RuntimeError)
        assert undone == ["effect"]
        assert root._runtime.bus.count("evt") == 1
        assert good.state is FiberState.ACTIVE
    assert any(
        record.name == "harness.plugin.broken" and record.levelno == logging.ERROR
        for record in caplog.records
    )


async def test_background_task_is_cancelled_on_unload() -> None:
    cancelled = anyio.Event()
    started = anyio.Event()

    async def ticker() -> None:
        try:
            started.set()
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    def plugin(ctx: Context) -> None:
        ctx.start_soon(ticker)

    async with Context() as root:
        fiber = await root.plugin(plugin)
        await started.wait()
        await fiber.dispose()
        with anyio.fail_after(1):
            await cancelled.wait()


async def test_status_event_reports_each_transition() -> None:
    seen: list[tuple[str, str]] = []
    async with Context() as root:
        root.on("fiber/status", lambda fiber, previous: seen.append((previous, fiber.state)))
        fiber = await root.plugin(lambda ctx: None, name="p")
        await fiber.dispose()
    assert seen == [
        ("pending", "loading"),
        ("loading", "active"),
        ("active", "unloading"),
        ("unloading", "disposed"),
    ]


async def test_plugin_on_a_root_that_is_not_running_raises() -> None:
    root = Context()
    with pytest.raises(Exception, match="not running"):
        root.plugin(lambda ctx: None)


async def test_restart_reapplies_with_same_config() -> None:
    applies: list[Any] = []
    async with Context() as root:
        fiber = await root.plugin(lambda ctx, config: applies.append(config), {"k": 1})
        await fiber.restart()
        assert fiber.state is FiberState.ACTIVE
    assert applies == [{"k": 1}, {"k": 1}]
