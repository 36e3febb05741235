"""Services and inject: pending, late services, loss, return, replacement and cycles."""

from __future__ import annotations

from typing import Any

import pytest

from harness import Context, FiberState, PluginError, Service, ServiceNotInjected
from harness.errors import DependencyCycle, ServiceConflict
from harness.service import ServiceView, unwrap

pytestmark = pytest.mark.anyio


class Store(Service):
    provides = ("store",)

    def __init__(self, ctx: Context, config: Any = None) -> None:
        super().__init__(ctx, "store")
        self.items: list[str] = []
        self.version = (config or {}).get("version", 1)


def make_consumer(log: list[str], name: str = "consumer") -> Any:
    def consumer(ctx: Context) -> Any:
        log.append(f"apply {ctx.store.version}")
        return lambda: log.append("dispose")

    consumer.inject = ["store"]  # type: ignore[attr-defined]
    consumer.__name__ = name
    return consumer


async def test_service_visible_once_provider_is_active() -> None:
    async with Context() as root:
        assert root.get("store") is None
        with pytest.raises(AttributeError, match="service 'store' is not available"):
            _ = root.store
        await root.plugin(Store)
        assert isinstance(unwrap(root.store), Store)
        assert isinstance(root.get(Store), ServiceView)  # a view, not a disguised Store
        assert root.get("store") == root.store


async def test_missing_service_leaves_plugin_pending_then_applies_it() -> None:
    log: list[str] = []
    async with Context() as root:
        consumer = await root.plugin(make_consumer(log))
        assert consumer.state is FiberState.PENDING
        assert consumer.error is None
        assert log == []
        await root.plugin(Store)
        assert consumer.state is FiberState.ACTIVE
        assert log == ["apply 1"]


async def test_service_loss_unloads_dependents_and_return_reapplies_them() -> None:
    log: list[str] = []
    async with Context() as root:
        store = await root.plugin(Store)
        consumer = await root.plugin(make_consumer(log))
        await store.dispose()
        assert consumer.state is FiberState.PENDING
        assert log == ["apply 1", "dispose"]
        await root.plugin(Store, {"version": 2})
        assert consumer.state is FiberState.ACTIVE
        assert log == ["apply 1", "dispose", "apply 2"]


async def test_provider_replacement_restarts_dependents() -> None:
    log: list[str] = []
    async with Context() as root:
        store = await root.plugin(Store)
        await root.plugin(make_consumer(log))
        await store.update({"version": 3})
        assert log == ["apply 1", "dispose", "apply 3"]


async def test_duplicate_provider_raises_naming_the_holder() -> None:
    async with Context() as root:
        await root.plugin(Store, name="first")
        second = root.plugin(Store, name="second")
        with pytest.raises(ServiceConflict) as caught:
            await second
        assert str(caught.value) == (
            "service 'store' is already provided by plugin 'first'; plugin 'second' cannot "
            "provide it too (unload the holder first)"
        )
        assert second.state is FiberState.FAILED


async def test_dependency_cycle_is_reported_not_deadlocked() -> None:
    class A(Service):
        provides = ("a",)
        inject = ("b",)

        def __init__(self, ctx: Context) -> None:
            super().__init__(ctx, "a")

    class B(Service):
        provides = ("b",)
        inject = ("a",)

        def __init__(self, ctx: Context) -> None:
            super().__init__(ctx, "b")

    async with Context() as root:
        a = await root.plugin(A)
        b = await root.plugin(B)
        assert a.state is b.state is FiberState.PENDING
        assert isinstance(b.error, DependencyCycle)
        assert a.error is b.error
        assert str(b.error) == (
            "dependency cycle: B (needs 'a') -> A (needs 'b') -> B; "
            "break it by making one inject optional"
        )


async def test_undeclared_service_access_raises_with_hint() -> None:
    errors: list[BaseException] = []

    def nosy(ctx: Context) -> None:
        try:
            _ = ctx.store
        except ServiceNotInjected as exc:
            errors.append(exc)
        try:
            ctx.get("store")
        except ServiceNotInjected as exc:
            errors.append(exc)

    async with Context() as root:
        await root.plugin(Store)
        await root.plugin(nosy)
    assert [str(e) for e in errors] == [
        "plugin 'nosy' reads service 'store' without injecting it; "
        "did you forget inject = ['store']?"
    ] * 2


async def test_unknown_attribute_on_plugin_context_is_attribute_error() -> None:
    def typo(ctx: Context) -> None:
        assert not hasattr(ctx, "emti")

    async with Context() as root:
        await root.plugin(typo)


async def test_optional_inject_never_holds_plugin_pending() -> None:
    seen: list[Any] = []

    def plugin(ctx: Context) -> None:
        seen.append(ctx.get("store"))

    plugin.inject = {"store": {"required": False}}  # type: ignore[attr-defined]
    async with Context() as root:
        fiber = await root.plugin(plugin)
        assert fiber.state is FiberState.ACTIVE
        await root.plugin(Store)
        await fiber.restart()
    assert seen[0] is None
    assert isinstance(unwrap(seen[1]), Store)


async def test_service_registered_through_plugin_context_is_an_effect() -> None:
    async with Context() as root:
        provider = await root.plugin(Store)
        assert root.get("store") is not None
        await provider.dispose()
        assert root.get("store") is None


async def test_service_start_and_stop_hooks() -> None:
    log: list[str] = []

    class Hooked(Service):
        def __init__(self, ctx: Context) -> None:
            super().__init__(ctx, "hooked")

        async def start(self) -> None:
            log.append("start")

        async def stop(self) -> None:
            log.append("stop")

    async with Context() as root:
        fiber = await root.plugin(Hooked)
        await fiber.dispose()
    assert log == ["start", "stop"]


async def test_reserved_service_name_is_rejected() -> None:
    class Bad(Service):
        def __init__(self, ctx: Context) -> None:
            super().__init__(ctx, "plugin")

    async with Context() as root:
        with pytest.raises(PluginError, match="'plugin' cannot be a service name"):
            await root.plugin(Bad)


async def test_extra_inject_given_at_load_time() -> None:
    async with Context() as root:
        fiber = await root.plugin(lambda ctx: None, name="needy", inject=["store"])
        assert fiber.state is FiberState.PENDING
        await root.plugin(Store)
        assert fiber.state is FiberState.ACTIVE


async def test_caller_aware_method_creates_effect_on_calling_plugin() -> None:
    from harness.service import caller_aware

    class Registry(Service):
        def __init__(self, ctx: Context) -> None:
            super().__init__(ctx, "registry")
            self.names: list[str] = []

        @caller_aware
        def add(self, name: str, *, caller: Context | None = None) -> Any:
            owner = caller or self.ctx
            return owner.effect(
                lambda: (self.names.append(name), lambda: self.names.remove(name))[1]
            )

    def user(ctx: Context) -> None:
        ctx.registry.add("x")

    user.inject = ["registry"]  # type: ignore[attr-defined]
    async with Context() as root:
        await root.plugin(Registry)
        fiber = await root.plugin(user)
        assert root.registry.names == ["x"]
        await fiber.dispose()
        assert root.registry.names == []
