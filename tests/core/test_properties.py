"""Property test: random load / unload / reload sequences keep the runtime's invariants.

- no effect (listener, token, service) survives its plugin's activation;
- every active plugin has its required services, and every pending one misses one;
- a service is visible exactly while its provider is active.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import Context, Fiber, FiberState

SERVICES = ("s0", "s1", "s2")


@dataclass(frozen=True)
class Spec:
    name: str
    inject: tuple[str, ...]
    provides: str | None


def plugin_specs() -> st.SearchStrategy[list[Spec]]:
    def build(injects: list[list[str]]) -> list[Spec]:
        specs = []
        for index, inject in enumerate(injects):
            provides = SERVICES[index] if index < len(SERVICES) else None
            deps = tuple(name for name in inject if name != provides)
            specs.append(Spec(f"p{index}", deps, provides))
        return specs

    return st.lists(
        st.lists(st.sampled_from(SERVICES), max_size=2, unique=True), min_size=3, max_size=6
    ).map(build)


operations = st.lists(
    st.tuples(st.sampled_from(["load", "unload", "reload"]), st.integers(0, 5)),
    min_size=1,
    max_size=25,
)


class World:
    def __init__(self) -> None:
        self.tokens: dict[str, int] = {}

    def make(self, spec: Spec) -> Any:
        world = self

        def apply(ctx: Context, config: Any) -> Any:
            for name in spec.inject:
                assert ctx.get(name) is not None
            world.tokens[spec.name] = world.tokens.get(spec.name, 0) + 1
            ctx.on("probe", lambda: spec.name)
            if spec.provides:
                ctx.provide(spec.provides, object())

            def cleanup() -> None:
                world.tokens[spec.name] -= 1

            return cleanup

        apply.inject = list(spec.inject)  # type: ignore[attr-defined]
        apply.provides = (spec.provides,) if spec.provides else ()  # type: ignore[attr-defined]
        apply.name = spec.name  # type: ignore[attr-defined]
        return apply


def check(root: Context, world: World, fibers: dict[str, Fiber], specs: list[Spec]) -> None:
    runtime = root._runtime
    active = {name for name, fiber in fibers.items() if fiber.state is FiberState.ACTIVE}
    for spec in specs:
        fiber = fibers.get(spec.name)
        alive = world.tokens.get(spec.name, 0)
        assert alive == (1 if spec.name in active else 0), (spec, fiber, alive)
        if fiber is None:
            continue
        assert fiber.state in (FiberState.ACTIVE, FiberState.PENDING), fiber
        missing = [name for name in spec.inject if runtime.available(name) is None]
        if fiber.state is FiberState.ACTIVE:
            assert missing == [], (spec, missing)
        else:
            assert missing, (spec, "pending with every service present")
        if spec.provides:
            visible = runtime.available(spec.provides) is not None
            assert visible == (fiber.state is FiberState.ACTIVE)
    assert runtime.bus.count("probe") == len(active)


@settings(max_examples=120, deadline=None)
@given(specs=plugin_specs(), ops=operations)
def test_random_lifecycles_keep_invariants(specs: list[Spec], ops: list[tuple[str, int]]) -> None:
    async def scenario() -> None:
        world = World()
        fibers: dict[str, Fiber] = {}
        async with Context() as root:
            for op, index in ops:
                spec = specs[index % len(specs)]
                fiber = fibers.get(spec.name)
                if op == "load" and fiber is None:
                    fibers[spec.name] = await root.plugin(world.make(spec))
                elif op == "unload" and fiber is not None:
                    await fiber.dispose()
                    del fibers[spec.name]
                elif op == "reload" and fiber is not None:
                    await fiber.restart()
                check(root, world, fibers, specs)
        assert all(count == 0 for count in world.tokens.values())

    anyio.run(scenario)
