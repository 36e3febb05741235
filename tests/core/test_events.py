"""The five dispatch modes, prepend, once, and listener lifetime."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from harness import Context

pytestmark = pytest.mark.anyio


async def test_emit_calls_in_order_and_survives_a_raising_listener(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[str] = []

    def broken(value: str) -> None:
        raise RuntimeError("listener failed")

    async with Context() as root:
        root.on("evt", lambda value: seen.append(f"1{value}"))
        root.on("evt", broken)
        root.on("evt", lambda value: seen.append(f"3{value}"))
        root.emit("evt", "!")
    assert seen == ["1!", "3!"]
    assert any("listener of 'evt' raised" in r.getMessage() for r in caplog.records)


async def test_emit_runs_async_listeners_in_background() -> None:
    done = anyio.Event()

    async def listener() -> None:
        await anyio.lowlevel.checkpoint()
        done.set()

    async with Context() as root:
        root.on("evt", listener)
        root.emit("evt")
        with anyio.fail_after(1):
            await done.wait()


async def test_prepend_puts_listener_first() -> None:
    seen: list[int] = []
    async with Context() as root:
        root.on("evt", lambda: seen.append(1))
        root.on("evt", lambda: seen.append(0), prepend=True)
        root.emit("evt")
    assert seen == [0, 1]


async def test_once_fires_a_single_time() -> None:
    seen: list[int] = []
    async with Context() as root:
        root.once("evt", lambda n: seen.append(n))
        root.emit("evt", 1)
        root.emit("evt", 2)
    assert seen == [1]


async def test_on_returns_dispose() -> None:
    seen: list[int] = []
    async with Context() as root:
        dispose = root.on("evt", lambda: seen.append(1))
        dispose()
        dispose()
        root.emit("evt")
    assert seen == []


async def test_parallel_runs_listeners_concurrently_and_logs_errors(
    caplog: pytest.LogCaptureFixture,
) -> None:
    both = anyio.Event()
    arrived: list[str] = []

    async def waiter(name: str) -> None:
        arrived.append(name)
        if len(arrived) == 2:
            both.set()
        with anyio.fail_after(1):
            await both.wait()

    async def broken() -> None:
        raise ValueError("parallel boom")

    async with Context() as root:
        root.on("evt", lambda: waiter("a"))
        root.on("evt", lambda: waiter("b"))
        root.on("evt", broken)
        await root.parallel("evt")
    assert sorted(arrived) == ["a", "b"]
    assert any(r.levelno == logging.ERROR for r in caplog.records)


async def test_serial_returns_first_non_none_and_stops() -> None:
    called: list[str] = []

    async def first() -> None:
        called.append("first")

    async def second() -> bool:
        called.append("second")
        return False

    def third() -> str:
        called.append("third")
        return "never"

    async with Context() as root:
        assert await root.serial("none") is None
        root.on("evt", first)
        root.on("evt", second)
        root.on("evt", third)
        assert await root.serial("evt") is False
    assert called == ["first", "second"]


async def test_bail_is_sync_serial() -> None:
    called: list[str] = []
    async with Context() as root:
        root.on("evt", lambda x: called.append("a"))
        root.on("evt", lambda x: x * 2)
        root.on("evt", lambda x: called.append("c"))
        assert root.bail("evt", 21) == 42
        assert root.bail("other", 1) is None
    assert called == ["a"]


async def test_waterfall_without_listeners_calls_inner_once() -> None:
    calls: list[int] = []

    async def inner() -> str:
        calls.append(1)
        return "inner"

    async with Context() as root:
        assert await root.waterfall("wf", "arg", inner) == "inner"
        assert await root.waterfall("wf", "arg", inner=inner) == "inner"
    assert calls == [1, 1]


async def test_waterfall_is_an_onion_in_registration_order() -> None:
    trace: list[str] = []

    def layer(name: str) -> Any:
        async def listener(value: int, next: Any) -> Any:
            trace.append(f"{name} before {value}")
            result = await next()
            trace.append(f"{name} after")
            return f"{name}({result})"

        return listener

    async def inner() -> str:
        trace.append("inner")
        return "core"

    async with Context() as root:
        root.on("wf", layer("outer"))
        root.on("wf", layer("middle"))
        root.on("wf", layer("first"), prepend=True)
        assert await root.waterfall("wf", 7, inner) == "first(outer(middle(core)))"
    assert trace == [
        "first before 7",
        "outer before 7",
        "middle before 7",
        "inner",
        "middle after",
        "outer after",
        "first after",
    ]


async def test_waterfall_short_circuit_skips_inner_and_later_layers() -> None:
    trace: list[str] = []

    async def gate(next: Any) -> str:
        return "denied"

    async def later(next: Any) -> Any:
        trace.append("later")
        return await next()

    async def inner() -> str:
        trace.append("inner")
        return "ran"

    async with Context() as root:
        root.on("wf", gate)
        root.on("wf", later)
        assert await root.waterfall("wf", inner) == "denied"
    assert trace == []


async def test_waterfall_listener_error_propagates_to_caller() -> None:
    async def broken(next: Any) -> Any:
        raise KeyError("layer")

    async def inner() -> None:
        return None

    async with Context() as root:
        root.on("wf", broken)
        with pytest.raises(KeyError):
            await root.waterfall("wf", inner)


async def test_listeners_are_removed_with_their_plugin() -> None:
    seen: list[str] = []

    def plugin(ctx: Context) -> None:
        ctx.on("evt", lambda: seen.append("emit"))

        async def layer(next: Any) -> Any:
            seen.append("layer")
            return await next()

        ctx.on("wf", layer)

    async def inner() -> None:
        return None

    async with Context() as root:
        fiber = await root.plugin(plugin)
        root.emit("evt")
        await root.waterfall("wf", inner)
        await fiber.dispose()
        root.emit("evt")
        await root.waterfall("wf", inner)
    assert seen == ["emit", "layer"]


async def test_listener_added_during_dispatch_applies_from_next_dispatch() -> None:
    seen: list[str] = []
    async with Context() as root:

        def adder() -> None:
            seen.append("adder")
            root.on("evt", lambda: seen.append("late"))

        root.once("evt", adder)
        root.emit("evt")
        root.emit("evt")
    assert seen == ["adder", "late"]
