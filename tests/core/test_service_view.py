"""Services as plugins see them: views that behave as the value, typed access, refusals."""

from __future__ import annotations

from typing import Any

import pytest

from harness import Context, ContextDisposed, ServiceNotInjected, ToolsService
from harness.service import ServiceView, caller_aware, unwrap

pytestmark = pytest.mark.anyio

BIG = 10**30


class Counter:
    def __init__(self) -> None:
        self.calls: list[Any] = []

    def __call__(self, value: Any) -> str:
        self.calls.append(value)
        return f"called {value}"


async def test_a_view_behaves_as_the_value_for_the_usual_protocols() -> None:
    async with Context() as root:
        root.provide("num", BIG)
        root.provide("text", "hello")
        root.provide("table", {"bar": 1})
        root.provide("items", [3, 1, 2])
        root.provide("empty", [])
        root.provide("fn", Counter())
        root.provide("ratio", 2.5)
        assert f"{root.num}" == str(BIG)
        assert f"{root.ratio:.2f}" == "2.50"
        assert str(root.text) == "hello"
        assert repr(root.text) == "'hello'"
        assert root.num == BIG
        assert root.num != BIG + 1
        assert root.num < BIG + 1
        assert root.num >= BIG
        assert hash(root.num) == hash(BIG)
        assert {root.text: 1}["hello"] == 1
        assert root.table["bar"] == 1
        root.table["baz"] = 2
        del root.table["bar"]
        assert unwrap(root.table) == {"baz": 2}
        assert "baz" in root.table
        assert len(root.items) == 3
        assert sorted(root.items) == [1, 2, 3]
        assert list(iter(root.items)) == [3, 1, 2]
        assert bool(root.empty) is False
        assert bool(root.items) is True
        assert root.fn(7) == "called 7"
        assert unwrap(root.fn).calls == [7]
        assert int(root.ratio) == 2
        assert float(root.num) == float(BIG)
        assert [10, 20, 30][root.get("one") or 0] == 10
        root.provide("one", 1)
        assert [10, 20, 30][root.one] == 20  # __index__


class Store:
    """A service class of the test's own (not a Service subclass)."""

    def __init__(self) -> None:
        self.items: list[str] = []


async def test_a_view_passes_isinstance_as_its_service() -> None:
    """DESIGN §2: ctx.<name> and ctx.get(name) answer as the service's class, on the root
    and inside plugins, as wrapt.ObjectProxy does; unwrap gives the object itself."""
    seen: dict[str, Any] = {}

    def reader(ctx: Context) -> None:
        seen["tools"] = ctx.tools
        seen["get"] = ctx.get("tools")
        seen["typed"] = ctx.get(ToolsService)
        seen["store"] = ctx.store
        seen["optional"] = ctx.get("store")

    reader.inject = {"tools": {}, "store": {"required": False}}  # type: ignore[attr-defined]
    async with Context() as root:
        await root.plugin(ToolsService)
        store = Store()
        root.provide("store", store)
        await root.plugin(reader)
        views = {
            "root tools": root.tools,
            "root get": root.get("tools"),
            "root typed": root.get(ToolsService),
            "root service": root.service(ToolsService),
            **{f"plugin {key}": value for key, value in seen.items()},
        }
        for label, view in views.items():
            assert issubclass(type(view), ServiceView), label  # its class's view class
            assert isinstance(view, ServiceView), label
            assert view.__class__ is type(unwrap(view)), label
        tools = unwrap(root.tools)
        for label in ("root tools", "root get", "root typed", "root service", "plugin tools"):
            view = views[label]
            assert isinstance(view, ToolsService), label
            assert isinstance(view, type(tools).__mro__[1]), label  # its bases too
            assert not isinstance(view, Store), label
            assert unwrap(view) is tools, label
            assert view == tools, label
        for label in ("plugin store", "plugin optional"):
            view = views[label]
            assert isinstance(view, Store), label
            assert not isinstance(view, ToolsService), label
            assert unwrap(view) is store, label
            view.items.append(label)  # attribute reads and writes reach the service
            setattr(view, "note", label)  # noqa: B010  (the view's own __setattr__)
        assert store.items == ["plugin store", "plugin optional"]
        assert getattr(store, "note") == "plugin optional"  # noqa: B009


async def test_typed_access_by_class() -> None:
    async with Context() as root:
        assert root.get(ToolsService) is None
        with pytest.raises(AttributeError, match="service 'tools' is not available"):
            root.service(ToolsService)
        await root.plugin(ToolsService)
        tools = root.get(ToolsService)
        assert tools is not None
        assert unwrap(tools) is unwrap(root.tools)
        assert root.service(ToolsService).list() == []

        def hello() -> str:
            """Say hi."""
            return "hi"

        def plugin(ctx: Context) -> None:
            typed: ToolsService = ctx.service(ToolsService)
            typed.register(hello)  # an effect of this plugin, through the view

        plugin.inject = ["tools"]  # type: ignore[attr-defined]
        fiber = await root.plugin(plugin)
        assert root.tools.owner("hello") == "plugin 'plugin'"
        await fiber.dispose()
        assert root.tools.list() == []


async def test_a_service_read_without_inject_is_an_attribute_error() -> None:
    seen: dict[str, Any] = {}

    def nosy(ctx: Context) -> None:
        seen["hasattr"] = hasattr(ctx, "tools")
        seen["getattr"] = getattr(ctx, "tools", "fallback")
        try:
            ctx.tools  # noqa: B018
        except ServiceNotInjected as exc:
            seen["error"] = str(exc)
            seen["is attribute error"] = isinstance(exc, AttributeError)

    async with Context() as root:
        await root.plugin(ToolsService)
        await root.plugin(nosy)
    assert seen == {
        "hasattr": False,
        "getattr": "fallback",
        "error": (
            "plugin 'nosy' reads service 'tools' without injecting it; "
            "did you forget inject = ['tools']?"
        ),
        "is attribute error": True,
    }


async def test_a_disposed_context_hands_out_no_services() -> None:
    kept: list[Context] = []

    def plugin(ctx: Context) -> None:
        kept.append(ctx)

    plugin.inject = ["tools"]  # type: ignore[attr-defined]
    async with Context() as root:
        await root.plugin(ToolsService)
        fiber = await root.plugin(plugin)
        [stale] = kept
        assert stale.tools.list() == []
        await fiber.restart()
        assert len(kept) == 2
        for read in (lambda: stale.tools, lambda: stale.get("tools")):
            with pytest.raises(ContextDisposed, match="plugin 'plugin' is disposed"):
                read()
        assert kept[1].tools.list() == []  # the current activation's context still works


async def test_cleanups_may_still_read_services() -> None:
    seen: list[Any] = []

    def plugin(ctx: Context) -> Any:
        return lambda: seen.append(ctx.tools.list())

    plugin.inject = ["tools"]  # type: ignore[attr-defined]
    async with Context() as root:
        await root.plugin(ToolsService)
        fiber = await root.plugin(plugin)
        await fiber.dispose()
    assert seen == [[]]


async def test_a_service_provided_anew_is_what_the_next_read_sees() -> None:
    async with Context() as root:
        withdraw = root.provide("answer", [1])
        first = root.answer
        assert unwrap(first) == [1]
        assert unwrap(root.answer) is unwrap(first)
        await withdraw()
        assert root.get("answer") is None
        root.provide("answer", [2])
        assert unwrap(root.answer) == [2]
        assert unwrap(first) == [1]  # a view read earlier keeps the value it was read for


class Greeter:
    """A service whose methods a test replaces while views of it are held."""

    def hello(self) -> str:
        return "hello"

    @caller_aware
    def who(self, *, caller: Context | None = None) -> str:
        return "service" if caller is None else caller.describe()


async def test_a_views_methods_are_the_services_current_ones() -> None:
    """A view's fast method read (its class's view class) is live: it sees a method replaced
    on the instance or on the class, and caller-aware methods still receive the caller."""
    seen: dict[str, Any] = {}

    def plugin(ctx: Context) -> None:
        seen["ctx"] = ctx

    plugin.inject = ["greeter"]  # type: ignore[attr-defined]
    async with Context() as root:
        greeter = Greeter()
        withdraw = root.provide("greeter", greeter)
        await root.plugin(plugin)
        ctx = seen["ctx"]
        assert ctx.greeter is ctx.greeter  # one view, kept as the context's attribute
        assert ctx.greeter.hello() == "hello"
        assert ctx.greeter.who() == ctx.describe()
        greeter.hello = lambda: "replaced on the instance"  # type: ignore[method-assign]
        assert ctx.greeter.hello() == "replaced on the instance"
        del greeter.hello
        original = Greeter.hello
        try:
            Greeter.hello = lambda self: "replaced on the class"  # type: ignore[method-assign]
            assert ctx.greeter.hello() == "replaced on the class"
        finally:
            Greeter.hello = original  # type: ignore[method-assign]
        assert ctx.greeter.hello() == "hello"
        assert root.greeter.hello() == "hello"
        await withdraw()  # the kept attributes go with the service
        with pytest.raises(AttributeError, match="service 'greeter' is not available"):
            root.greeter  # noqa: B018
        assert root.get("greeter") is None
        with pytest.raises(ContextDisposed):  # its plugin unloaded with what it required
            ctx.greeter  # noqa: B018
