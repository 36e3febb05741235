"""execute_many: concurrency-safe calls together (bounded), others alone, results in order."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from harness import Context, ToolCall, ToolsService, define_tool

from .conftest import tool_plugin

pytestmark = pytest.mark.anyio


class Meter:
    """Counts calls in flight and remembers the high-water mark and the order of events."""

    def __init__(self) -> None:
        self.running = 0
        self.high = 0
        self.events: list[str] = []

    async def run(self, label: str) -> str:
        self.running += 1
        self.high = max(self.high, self.running)
        self.events.append(f"start {label}")
        await anyio.sleep(0.01)
        self.events.append(f"end {label}")
        self.running -= 1
        return label


def tools(meter: Meter) -> list[Any]:
    async def read(args: dict[str, Any]) -> str:
        return await meter.run(args["id"])

    async def write(args: dict[str, Any]) -> str:
        return await meter.run(args["id"])

    return [
        define_tool(name="read", description="r", execute=read, concurrency_safe=True),
        define_tool(name="write", description="w", execute=write),
        define_tool(
            name="maybe",
            description="m",
            execute=read,
            concurrency_safe=lambda args: args["id"].startswith("safe"),
        ),
    ]


async def test_results_in_call_order_with_bounded_parallelism(root: Context) -> None:
    meter = Meter()
    await root.plugin(tool_plugin(*tools(meter)))
    calls = [ToolCall(str(i), "read", {"id": f"r{i}"}) for i in range(12)]
    results = await root.tools.execute_many(calls, max_parallel=3)
    assert [r.result for r in results] == [f"r{i}" for i in range(12)]
    assert [r.id for r in results] == [str(i) for i in range(12)]
    assert meter.high == 3


async def test_default_bound_comes_from_service_config() -> None:
    meter = Meter()
    async with Context() as root:
        await root.plugin(ToolsService, {"max_parallel": 2})
        await root.plugin(tool_plugin(*tools(meter)))
        await root.tools.execute_many([{"name": "read", "args": {"id": str(i)}} for i in range(6)])
    assert meter.high == 2


async def test_exclusive_calls_are_barriers(root: Context) -> None:
    meter = Meter()
    await root.plugin(tool_plugin(*tools(meter)))
    calls = [
        {"name": "read", "args": {"id": "a"}},
        {"name": "read", "args": {"id": "b"}},
        {"name": "write", "args": {"id": "W"}},
        {"name": "maybe", "args": {"id": "safe-c"}},
        {"name": "maybe", "args": {"id": "d"}},
        {"name": "read", "args": {"id": "e"}},
    ]
    results = await root.tools.execute_many(calls)
    assert [r.result for r in results] == ["a", "b", "W", "safe-c", "d", "e"]
    events = meter.events
    # W starts after a and b ended, and ends before c starts; d runs alone too.
    assert events.index("start W") > max(events.index("end a"), events.index("end b"))
    assert events.index("end W") < events.index("start safe-c")
    assert events.index("start d") > events.index("end safe-c")
    assert events.index("end d") < events.index("start e")


async def test_failures_keep_their_place(root: Context) -> None:
    meter = Meter()
    await root.plugin(tool_plugin(*tools(meter)))
    results = await root.tools.execute_many(
        [{"name": "nope"}, {"name": "read", "args": {"id": "x"}}, {"name": "read", "args": {}}]
    )
    assert [r.code for r in results] == ["unknown_tool", None, "tool_error"]


class Gates:
    """Tool bodies that record their start and wait until the test lets them finish."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.ended: list[str] = []
        self._release: dict[str, anyio.Event] = {}
        self._changed = anyio.Event()

    def gate(self, label: str) -> anyio.Event:
        return self._release.setdefault(label, anyio.Event())

    async def run(self, label: str) -> str:
        self.started.append(label)
        self._poke()
        await self.gate(label).wait()
        self.ended.append(label)
        self._poke()
        return label

    def _poke(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def until(self, condition: Any) -> None:
        with anyio.fail_after(5):
            while not condition():
                await self._changed.wait()


def gated_tools(gates: Gates, predicate_seen: list[Any] | None = None) -> list[Any]:
    async def body(args: dict[str, Any]) -> str:
        return await gates.run(args["id"])

    def predicate(args: Any) -> bool:
        if predicate_seen is not None:
            predicate_seen.append(args)
        return bool(args["id"].startswith("safe"))

    return [
        define_tool(
            name="read",
            description="r",
            execute=body,
            concurrency_safe=True,
            parameters={"id": {"type": "string", "required": True}},
        ),
        define_tool(name="write", description="w", execute=body),
        define_tool(
            name="maybe",
            description="m",
            execute=body,
            concurrency_safe=predicate,
            parameters={"id": {"type": "string", "required": True}},
        ),
    ]


async def test_a_rolling_pool_up_to_the_cap_then_an_exclusive_call_alone(root: Context) -> None:
    gates = Gates()
    await root.plugin(tool_plugin(*gated_tools(gates)))
    calls = [{"name": "read", "args": {"id": label}} for label in ("a", "b", "c")]
    calls += [{"name": "write", "args": {"id": "W"}}, {"name": "read", "args": {"id": "d"}}]
    results: list[Any] = []

    async def run() -> None:
        results.extend(await root.tools.execute_many(calls, max_parallel=2))

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await gates.until(lambda: gates.started == ["a", "b"])
        gates.gate("b").set()  # a slot frees up: c starts while a still runs
        await gates.until(lambda: gates.started == ["a", "b", "c"])
        assert gates.ended == ["b"]
        gates.gate("c").set()
        await gates.until(lambda: gates.ended == ["b", "c"])
        assert gates.started == ["a", "b", "c"]  # W waits for a, the last running call
        gates.gate("a").set()
        await gates.until(lambda: gates.started[-1:] == ["W"])
        assert gates.ended == ["b", "c", "a"]
        gates.gate("W").set()
        await gates.until(lambda: gates.started[-1:] == ["d"])  # then the pool resumes
        assert gates.ended == ["b", "c", "a", "W"]
        gates.gate("d").set()
    assert [r.result for r in results] == ["a", "b", "c", "W", "d"]


async def test_calls_start_in_call_order(root: Context) -> None:
    starts: list[str] = []

    async def body(args: dict[str, Any]) -> str:
        starts.append(args["id"])
        await anyio.lowlevel.checkpoint()
        return str(args["id"])

    await root.plugin(
        tool_plugin(define_tool(name="r", description="r", execute=body, concurrency_safe=True))
    )
    labels = [str(i) for i in range(40)]
    for cap in (1, 3, 40):
        starts.clear()
        results = await root.tools.execute_many(
            [{"name": "r", "args": {"id": label}} for label in labels], max_parallel=cap
        )
        assert starts == labels, cap
        assert [r.result for r in results] == labels


async def test_concurrency_predicate_sees_only_validated_args(root: Context) -> None:
    gates = Gates()
    seen: list[Any] = []
    await root.plugin(tool_plugin(*gated_tools(gates, seen)))
    for label in ("safe-1", "x", "safe-2"):
        gates.gate(label).set()
    results = await root.tools.execute_many(
        [
            {"name": "maybe", "args": '{"id": "safe-1"}'},
            {"name": "maybe", "args": {"id": 7}},
            {"name": "maybe", "args": {}},
            {"name": "maybe", "args": "{not json"},
            {"name": "maybe", "args": {"id": "x"}},
            {"name": "maybe", "args": {"id": "safe-2"}},
        ]
    )
    assert [r.code for r in results] == [
        None,
        "invalid_args",
        "invalid_args",
        "invalid_args",
        None,
        None,
    ]
    assert seen == [{"id": "safe-1"}, {"id": "x"}, {"id": "safe-2"}]
    assert gates.started == ["safe-1", "x", "safe-2"]


async def test_cancelling_execute_many_gives_a_result_for_every_call(root: Context) -> None:
    gates = Gates()
    await root.plugin(tool_plugin(*gated_tools(gates)))
    calls = [{"id": label, "name": "read", "args": {"id": label}} for label in ("a", "b", "c")]
    results: list[Any] = []
    scope = anyio.CancelScope()

    async def run() -> None:
        with scope:
            results.extend(await root.tools.execute_many(calls, max_parallel=1))

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await gates.until(lambda: gates.started == ["a"])
        scope.cancel()
    assert [(r.id, r.code, r.error) for r in results] == [
        ("a", "cancelled", "Tool read was cancelled"),
        ("b", "cancelled", "Tool read was cancelled before it started"),
        ("c", "cancelled", "Tool read was cancelled before it started"),
    ]
    assert gates.started == ["a"]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
async def test_max_parallel_must_be_a_positive_whole_number(root: Context, bad: Any) -> None:
    with pytest.raises(ValueError, match="max_parallel") as caught:
        await root.tools.execute_many([{"name": "read"}], max_parallel=bad)
    assert str(caught.value) == (
        "max_parallel must be a whole number of at least 1 (None for the tools service's "
        f"default, 10), got {bad!r}"
    )


async def test_a_call_with_invalid_args_runs_alone(root: Context) -> None:
    """#22.17: its pre-execute stage still runs, so it is not harmless: it runs alone, as a
    call whose classifier raises does (and so does a call to an unknown tool)."""
    in_flight: list[str] = []
    seen: dict[str, list[str]] = {}

    async def slow(args: dict[str, Any]) -> str:
        for _ in range(20):  # outlives the dispatch of the calls after it, if they start
            await anyio.lowlevel.checkpoint()
        return str(args["id"])

    async def pre(call: ToolCall, next: Any) -> Any:
        seen[call.id] = list(in_flight)
        in_flight.append(call.id)
        return await next()

    def done(call: ToolCall, result: Any) -> None:
        in_flight.remove(call.id)

    root.on("tools/pre-execute", pre)
    root.on("tools/result", done)
    read = define_tool(
        name="read",
        description="r",
        parameters={"id": {"type": "string", "required": True}},
        execute=slow,
        concurrency_safe=True,
    )
    await root.plugin(tool_plugin(read))
    calls = [
        ToolCall("a", "read", {"id": "a"}),
        ToolCall("bad", "read", {"id": 7}),
        ToolCall("b", "read", {"id": "b"}),
        ToolCall("ghost", "no_such_tool", {}),
        ToolCall("c", "read", {"id": "c"}),
    ]
    results = await root.tools.execute_many(calls, max_parallel=5)
    assert [r.code for r in results] == [None, "invalid_args", None, "unknown_tool", None]
    assert seen == {"a": [], "bad": [], "b": [], "ghost": [], "c": []}


async def test_a_call_is_classified_when_its_slot_frees(root: Context) -> None:
    """#22.18: a result listener that replaces the tool with a non-parallel version is obeyed
    by the next call, which then waits for the running one and runs alone."""
    asked: list[str] = []
    release = anyio.Event()
    state = {"slow_done": False, "overlap": None}

    async def slow(args: dict[str, Any]) -> str:
        await release.wait()
        state["slow_done"] = True
        return "slow"

    async def quick(args: dict[str, Any]) -> str:
        await anyio.wait_all_tasks_blocked()  # t1 waits until the dispatch loop waits too
        if args["id"] == "t2":
            state["overlap"] = not state["slow_done"]
        return str(args["id"])

    def version(label: str, safe: bool) -> Any:
        def classify(args: Any) -> bool:
            asked.append(f"{label}:{args['id']}")
            return safe

        return define_tool(
            name="quick",
            description="q",
            parameters={"id": {"type": "string", "required": True}},
            execute=quick,
            concurrency_safe=classify,
        )

    swap: dict[str, Any] = {}

    def on_result(call: ToolCall, result: Any) -> None:
        if call.id == "t1":  # replace quick with a version that must run alone
            swap["dispose"]()
            swap["dispose"] = root.tools.register(version("new", False))
            release.set()

    root.on("tools/result", on_result)
    slow_tool = define_tool(name="slow", description="s", execute=slow, concurrency_safe=True)
    await root.plugin(tool_plugin(slow_tool))
    swap["dispose"] = root.tools.register(version("old", True))
    calls = [
        ToolCall("s", "slow", {}),
        ToolCall("t1", "quick", {"id": "t1"}),
        ToolCall("t2", "quick", {"id": "t2"}),
    ]
    with anyio.fail_after(10):
        results = await root.tools.execute_many(calls, max_parallel=2)
    assert [r.result for r in results] == ["slow", "t1", "t2"]
    assert asked == ["old:t1", "new:t2"]
    assert state["overlap"] is False
