"""execute(): every error code, the three stages, approval, timeouts and cancellation."""

from __future__ import annotations

import threading
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from harness import (
    Ask,
    ConfigError,
    Context,
    Deny,
    Service,
    ToolArgsError,
    ToolCall,
    ToolResult,
    ToolsService,
    define_tool,
)
from harness.store import StoreConfig, StoreService
from harness.store.journal import digest_of
from harness.store.sqlite import SqliteDatabase
from harness.tools import ERROR_CODES
from harness.tools.approval_contract import Pending

from .conftest import tool_plugin

pytestmark = pytest.mark.anyio


async def _sleepy(args: dict[str, Any]) -> str:
    await anyio.sleep(args.get("seconds", 10))
    return "woke"


def _raise(args: dict[str, Any]) -> None:
    raise ValueError("disk is full")


async def _wrong_args(args: dict[str, Any]) -> None:
    raise ToolArgsError("path: must be inside the workspace")


ECHO = define_tool(
    name="echo",
    description="Echo the text",
    parameters={"text": {"type": "string", "required": True}},
    execute=lambda args: args["text"],
)
SLEEPY = define_tool(name="sleepy", description="Sleep", execute=_sleepy, timeout=0.05)
BROKEN = define_tool(name="broken", description="Raise", execute=_raise)
PICKY = define_tool(name="picky", description="Reject args in the body", execute=_wrong_args)
BAD_OUTPUT = define_tool(
    name="bad_output",
    description="Return the wrong shape",
    output={"schema": {"ok": {"type": "boolean", "required": True}}},
    execute=lambda args: {"ok": "yes"},
)
BAD_RENDER = define_tool(
    name="bad_render",
    description="Render nonsense",
    output={"render": lambda value: 42},
    execute=lambda args: 1,
)


@pytest.fixture
async def loaded(root: Context) -> Context:
    await root.plugin(tool_plugin(ECHO, SLEEPY, BROKEN, PICKY, BAD_OUTPUT, BAD_RENDER))
    return root


async def call(ctx: Context, name: str, args: Any = None, call_id: str = "c") -> ToolResult:
    result: ToolResult = await ctx.tools.execute(ToolCall(call_id, name, args or {}))
    return result


class Later:
    async def request(self, c: ToolCall, reason: str) -> Pending:
        return Pending(f"allow {c.name}?")


async def interrupted(ctx: Context, folder: Path) -> ToolResult:
    """A keyed call its process was killed in (left ``started`` in the store), repeated."""
    store = folder / "harness.db"
    gone = await SqliteDatabase.open(store, 1.0)
    await gone.claim("cut-off", "echo", digest_of({"text": "hi"}))
    await gone.close()  # the owner lock goes, as the operating system drops a dead one's
    await ctx.plugin(StoreService, StoreConfig(url=f"sqlite:///{store}"))
    result: ToolResult = await ctx.tools.execute(
        ToolCall("c", "echo", {"text": "hi"}, key="cut-off")
    )
    return result


async def test_every_error_code(loaded: Context, tmp_path: Path) -> None:
    seen: dict[str, str | None] = {}

    async def deny_forbidden(c: ToolCall, next: Any) -> Any:
        return Deny("forbidden here") if c.name == "forbidden" else await next()

    async def crash(c: ToolCall, next: Any) -> Any:
        if c.name == "crash":
            raise RuntimeError("secret internal detail")
        return await next()

    async def ask_later(c: ToolCall, next: Any) -> Any:
        return Ask("needs a person") if c.name == "later" else await next()

    loaded.on("tools/pre-execute", deny_forbidden)
    loaded.on("tools/pre-execute", ask_later)
    loaded.on("tools/execute", crash)
    results = {
        "unknown_tool": await call(loaded, "nope"),
        "invalid_args": await call(loaded, "echo", {"text": 5}),
        "denied": await call(loaded, "forbidden"),
        "approval_pending": await loaded.tools.execute(ToolCall("c", "later"), approval=Later()),
        "timeout": await call(loaded, "sleepy"),
        "tool_error": await call(loaded, "broken"),
        "invalid_output": await call(loaded, "bad_output"),
        "internal": await call(loaded, "crash"),
        "interrupted": await interrupted(loaded, tmp_path),
    }
    with anyio.CancelScope() as scope:
        scope.cancel()
        results["cancelled"] = await call(loaded, "sleepy")
    for code, result in results.items():
        assert result.code == code
        assert not result.ok
        assert result.result is None
        assert result.content == [{"type": "text", "text": result.error}]
        seen[code] = result.error
    assert set(seen) == set(ERROR_CODES)
    assert seen == {
        "unknown_tool": "Tool nope not found",
        "invalid_args": "Invalid arguments for tool echo: text: expected string, got integer",
        "denied": "Tool denied: forbidden here",
        "approval_pending": "Tool later is waiting for approval: needs a person",
        "timeout": "Tool sleepy timed out after 0.05 seconds",
        "tool_error": "disk is full",
        "invalid_output": (
            "Tool bad_output returned invalid output: ok: expected boolean, got string"
        ),
        "internal": "Internal error while running tool crash; see the host log",
        "cancelled": "Tool sleepy was cancelled before it started",
        "interrupted": (
            "interrupted: the host stopped while this call ran; it may or may not have taken effect"
        ),
    }


async def test_render_returning_nonsense_is_invalid_output(loaded: Context) -> None:
    result = await call(loaded, "bad_render")
    assert result.code == "invalid_output"
    assert result.error == (
        "Tool bad_render returned invalid output: render returned int; expected a content "
        "block such as {'type': 'text', 'text': ...} or a list of blocks"
    )


async def test_body_raising_tool_args_error_is_invalid_args(loaded: Context) -> None:
    result = await call(loaded, "picky")
    assert result.code == "invalid_args"
    assert result.error == "Invalid arguments for tool picky: path: must be inside the workspace"


async def test_internal_error_is_masked_and_logged(
    loaded: Context, caplog: pytest.LogCaptureFixture
) -> None:
    async def crash(c: ToolCall, next: Any) -> Any:
        raise RuntimeError("secret internal detail")

    loaded.on("tools/pre-execute", crash)
    result = await call(loaded, "echo", {"text": "x"})
    assert result.code == "internal"
    assert "secret" not in (result.error or "")
    assert any("secret internal detail" in (r.exc_text or "") for r in caplog.records)


@pytest.mark.parametrize("stage", ["tools/pre-execute", "tools/execute", "tools/post-execute"])
async def test_raising_listener_in_each_stage_becomes_internal(loaded: Context, stage: str) -> None:
    async def broken(*args: Any) -> Any:
        raise KeyError("oops")

    loaded.on(stage, broken)
    result = await call(loaded, "echo", {"text": "x"})
    assert result.code == "internal"


async def test_listener_returning_garbage_becomes_internal(loaded: Context) -> None:
    async def forgetful(c: ToolCall, next: Any) -> None:
        await next()  # forgot to return it

    loaded.on("tools/execute", forgetful)
    result = await call(loaded, "echo", {"text": "x"})
    assert result.code == "internal"


async def test_post_execute_sees_failures_and_can_replace_results(loaded: Context) -> None:
    seen: list[str | None] = []

    async def audit(c: ToolCall, result: ToolResult, next: Any) -> ToolResult:
        seen.append(result.code)
        final: ToolResult = await next()
        if final.code == "tool_error":
            return ToolResult(c.id, c.name, result={"recovered": True})
        return final

    loaded.on("tools/post-execute", audit)
    await call(loaded, "nope")
    await call(loaded, "echo", {"text": 1})
    await call(loaded, "sleepy")
    replaced = await call(loaded, "broken")
    assert seen == ["unknown_tool", "invalid_args", "timeout", "tool_error"]
    assert replaced.ok
    assert replaced.result == {"recovered": True}


async def test_tools_result_event_sees_every_result_including_denials(loaded: Context) -> None:
    seen: list[tuple[str, str | None]] = []
    loaded.on("tools/result", lambda c, r: seen.append((c.name, r.code)))
    loaded.on("tools/pre-execute", lambda c, next: "deny" if c.name == "broken" else next())
    await call(loaded, "echo", {"text": "x"})
    await call(loaded, "broken")
    assert seen == [("echo", None), ("broken", "denied")]


async def test_execute_wrapper_can_retry(loaded: Context) -> None:
    attempts: list[int] = []

    async def retry(c: ToolCall, next: Any) -> ToolResult:
        result: ToolResult = await next()
        attempts.append(1)
        if result.code == "tool_error" and len(attempts) < 3:
            return await retry(c, next)
        return result

    loaded.on("tools/execute", retry)
    result = await call(loaded, "broken")
    assert result.code == "tool_error"
    assert len(attempts) == 3


class Approval(Service):
    def __init__(self, ctx: Context, config: Any = None) -> None:
        super().__init__(ctx, "approval")
        self.answer = bool((config or {}).get("answer"))
        self.asked: list[tuple[str, str]] = []

    async def request(self, c: ToolCall, reason: str) -> bool:
        self.asked.append((c.name, reason))
        return self.answer


async def test_ask_without_approval_service_fails_closed(loaded: Context) -> None:
    loaded.on("tools/pre-execute", lambda c, next: "ask")
    result = await call(loaded, "echo", {"text": "x"})
    assert result.code == "denied"
    assert result.error == (
        "Tool denied: this call needs approval (nobody can answer its approval: the caller "
        "cannot ask a person and no console page is open; approve it from an MCP client with "
        "elicitation, with `harness call echo --yes`, in the web console (open it first: it "
        "asks there), or with a rule `echo: allow` in the policy)"
    )


async def test_ask_with_approval_service_that_approves_or_refuses(loaded: Context) -> None:
    loaded.on("tools/pre-execute", lambda c, next: Ask("writes files"))
    approval = await loaded.plugin(Approval, {"answer": True})
    ok = await call(loaded, "echo", {"text": "x"})
    assert ok.ok
    assert loaded.approval.asked == [("echo", "writes files")]
    await approval.update({"answer": False})
    refused = await call(loaded, "echo", {"text": "x"})
    assert refused.code == "denied"
    assert refused.error == "Tool denied: writes files (approval was refused)"


async def test_sync_body_runs_in_a_worker_thread(root: Context) -> None:
    threads: list[int] = []
    ticked = threading.Event()

    def blocking(args: dict[str, Any]) -> str:
        threads.append(threading.get_ident())
        # only the event loop sets this: it runs only if the loop is not blocked by this body
        return "done" if ticked.wait(5) else "the loop was blocked"

    await root.plugin(tool_plugin(define_tool(name="block", description="b", execute=blocking)))

    async def ticker() -> None:
        for _ in range(5):
            await anyio.lowlevel.checkpoint()
        ticked.set()

    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        result = await call(root, "block")
    assert result.result == "done"
    assert threads[0] != threading.get_ident()


async def test_sync_body_timeout_returns_at_once(root: Context) -> None:
    release = threading.Event()

    def stuck(args: dict[str, Any]) -> str:
        release.wait(5)
        return "late"

    await root.plugin(
        tool_plugin(define_tool(name="stuck", description="s", execute=stuck, timeout=0.05))
    )
    result = await call(root, "stuck")
    release.set()
    assert result.code == "timeout"


async def test_service_default_timeout_and_null() -> None:
    async with Context() as root:
        slow = define_tool(name="slow", description="s", execute=_sleepy)
        await root.plugin(ToolsService, {"timeout": 0.05})
        await root.plugin(tool_plugin(slow))
        result = await call(root, "slow", {"seconds": 5})
        assert result.error == "Tool slow timed out after 0.05 seconds"
    async with Context() as root:
        await root.plugin(ToolsService, {"timeout": None})
        await root.plugin(tool_plugin(slow))
        assert (await call(root, "slow", {"seconds": 0.01})).result == "woke"


async def test_cancelling_a_running_call_waits_for_the_body(root: Context) -> None:
    started = anyio.Event()
    cleaned: list[str] = []

    async def long_running(args: dict[str, Any]) -> str:
        started.set()
        try:
            await anyio.sleep(10)
        finally:
            cleaned.append("cleanup ran")
        return "never"

    await root.plugin(
        tool_plugin(define_tool(name="long", description="l", execute=long_running, timeout=None))
    )
    results: list[ToolResult] = []

    async def caller(scope: anyio.CancelScope) -> None:
        with scope:
            results.append(await call(root, "long"))

    scope = anyio.CancelScope()
    async with anyio.create_task_group() as group:
        group.start_soon(caller, scope)
        await started.wait()
        scope.cancel()
    assert cleaned == ["cleanup ran"]
    assert [r.code for r in results] == ["cancelled"]


async def test_tools_service_config_is_validated() -> None:
    async with Context() as root:
        with pytest.raises(ConfigError) as caught:
            await root.plugin(ToolsService, {"timeout": -1, "max_parallel": 0, "colour": 1})
    assert caught.value.issues == (
        "timeout: Input should be greater than 0",
        "max_parallel: Input should be greater than or equal to 1",
        "colour: Extra inputs are not permitted",
    )


async def test_call_given_as_mapping_or_malformed(loaded: Context) -> None:
    result = await loaded.tools.execute({"name": "echo", "arguments": '{"text": "hi"}'})
    assert result.result == "hi"
    assert result.id.startswith("call-")
    bad = await loaded.tools.execute("echo")
    assert bad.code == "invalid_args"


async def test_a_call_from_a_cancelled_scope_enters_no_stage(root: Context) -> None:
    seen: list[str] = []

    def body(args: dict[str, Any]) -> str:
        seen.append("body")
        return "ran"

    async def stage(name: str, *args: Any) -> Any:
        seen.append(name)
        return await args[-1]()

    await root.plugin(tool_plugin(define_tool(name="quick", description="q", execute=body)))
    for name in ("tools/pre-execute", "tools/execute", "tools/post-execute"):
        root.on(name, partial(stage, name))
    root.on("tools/result", lambda call, result: seen.append(f"result {result.code}"))
    with anyio.CancelScope() as scope:
        scope.cancel()
        result = await call(root, "quick")
    assert (result.code, result.error) == (
        "cancelled",
        "Tool quick was cancelled before it started",
    )
    assert seen == ["result cancelled"]
    # outside the cancelled scope the same call runs through every stage
    seen.clear()
    assert (await call(root, "quick")).result == "ran"
    assert seen == [
        "tools/pre-execute",
        "tools/execute",
        "body",
        "tools/post-execute",
        "result None",
    ]


async def test_tools_service_timeout_must_be_finite() -> None:
    async with Context() as root:
        for bad in (float("nan"), float("inf")):
            with pytest.raises(ConfigError) as caught:
                await root.plugin(ToolsService, {"timeout": bad})
            assert caught.value.issues == ("timeout: Input should be a finite number",)
