"""The call context (DESIGN §16) through ``ctx.tools.execute``: how a tool gets it, what it
can do with it, who answers, input rounds, and timeouts that know about progress."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from harness import (
    Answer,
    CallContext,
    Client,
    Context,
    InputUnavailable,
    Root,
    Sampled,
    ToolCall,
    define_tool,
    tool,
)
from harness.tools.inputs import Input, InputRequired

pytestmark = pytest.mark.anyio


class Person(Client):
    """A client that answers every input at once and records what it saw."""

    def __init__(self, delay: float = 0.0) -> None:
        super().__init__("person-1")
        self.delay = delay
        self.asked: list[dict[str, Any]] = []
        self.shown: list[tuple[str, Any]] = []

    async def answer(self, ctx: CallContext, requests: Mapping[str, Input]) -> dict[str, Any]:
        self.asked.append({key: request.to_wire() for key, request in requests.items()})
        await anyio.sleep(self.delay)
        answers: dict[str, Any] = {}
        for key, request in requests.items():
            if request.kind == "ask":
                answers[key] = Answer("accept", {"region": "eu"})
            elif request.kind == "sample":
                answers[key] = Sampled("shipped", [{"type": "text", "text": "shipped"}], "m1")
            else:
                answers[key] = [Root("file:///work", "work")]
        return answers

    async def progress(
        self, ctx: CallContext, done: float, total: float | None, message: str | None
    ) -> None:
        self.shown.append(("progress", (done, total, message)))

    async def log(self, ctx: CallContext, level: str, message: str, data: dict[str, Any]) -> None:
        self.shown.append(("log", (level, message, data)))


class Later(Client):
    """A client that answers in its next request (MCP 2026-07-28)."""

    async def answer(self, ctx: CallContext, requests: Mapping[str, Input]) -> dict[str, Any]:
        raise InputRequired({})


@tool
async def deploy(service: str, ctx: CallContext) -> dict[str, Any]:
    """Deploy a service, asking for the region."""
    answer = await ctx.ask(
        "Which region?", {"region": {"type": "string", "enum": ["eu", "us"], "required": True}}
    )
    if not answer.accepted:
        return {"deployed": False, "action": answer.action, "reason": answer.reason}
    for step, name in enumerate(["build", "push", "roll out"]):
        await ctx.progress(step, 3, name)
        await ctx.log("info", f"{name} {service}", step=step)
    summary = await ctx.sample(f"One line: deployed {service}", max_tokens=60)
    roots = await ctx.roots()
    return {
        "deployed": True,
        "region": (answer.content or {})["region"],
        "note": summary.text,
        "roots": [root.uri for root in roots],
    }


async def run(root: Context, call: ToolCall) -> Any:
    return await root.tools.execute(call)


async def test_a_tool_parameter_annotated_callcontext_gets_it_and_is_not_in_the_schema(
    root: Context,
) -> None:
    assert set(deploy.parameters["properties"]) == {"service"}
    root.tools.register(deploy)
    person = Person()
    call = ToolCall("c1", "deploy", {"service": "api"})
    CallContext(call, "mcp", person)
    result = await run(root, call)
    assert result.ok, result
    assert result.result == {
        "deployed": True,
        "region": "eu",
        "note": "shipped",
        "roots": ["file:///work"],
    }
    ask = person.asked[0]["ask"]
    assert ask["method"] == "elicitation/create"
    assert ask["params"]["requestedSchema"] == {
        "type": "object",
        "properties": {"region": {"type": "string", "enum": ["eu", "us"]}},
        "required": ["region"],
    }
    assert person.asked[1]["sample"]["params"]["maxTokens"] == 60
    assert ("progress", (2, 3, "roll out")) in person.shown
    assert ("log", ("info", "push api", {"step": 1})) in person.shown


async def test_define_tool_execute_with_two_parameters_gets_the_context(root: Context) -> None:
    seen: list[Any] = []

    async def execute(args: dict[str, Any], ctx: CallContext) -> str:
        seen.append((ctx.call.id, ctx.call.name, ctx.surface, ctx.call.args))
        return "ok"

    root.tools.register(
        define_tool(name="two", description="takes ctx", execute=execute, parameters={})
    )
    # a default second parameter is not a context
    root.tools.register(
        define_tool(name="one", description="args only", execute=lambda args, i=7: i)
    )
    assert (await run(root, ToolCall("a", "two", {}))).result == "ok"
    assert seen == [("a", "two", "python", {})]
    assert (await run(root, ToolCall("b", "one", {}))).result == 7


async def test_nobody_to_ask_cancels_with_a_reason_and_sampling_fails_naming_it(
    root: Context,
) -> None:
    root.tools.register(deploy)
    result = await run(root, ToolCall("c1", "deploy", {"service": "api"}))
    assert result.result["deployed"] is False
    assert result.result["action"] == "cancel"
    assert "nobody can answer" in result.result["reason"]

    @tool
    async def summarise(ctx: CallContext) -> str:
        """Summarise with the caller's model."""
        return (await ctx.sample("hi", max_tokens=5)).text

    root.tools.register(summarise)
    failed = await run(root, ToolCall("c2", "summarise", {}))
    assert failed.code == "tool_error"
    assert "sampling" in (failed.error or "")
    assert "cannot give it" in (failed.error or "")


async def test_progress_and_logs_are_events_and_go_to_the_python_logger(
    root: Context, caplog: pytest.LogCaptureFixture
) -> None:
    root.tools.register(deploy)
    events: list[tuple[str, dict[str, Any]]] = []
    root.on("tool/progress", lambda fields, ctx: events.append(("progress", fields)))
    root.on("tool/log", lambda fields, ctx: events.append(("log", fields)))
    call = ToolCall("c9", "deploy", {"service": "db"})
    CallContext(call, "agent", Person())
    with caplog.at_level(logging.INFO, logger="harness.tools.deploy"):
        assert (await run(root, call)).ok
    assert ("progress", {"id": "c9", "done": 0, "total": 3, "message": "build"}) in events
    assert (
        "log",
        {"id": "c9", "level": "info", "message": "roll out db", "data": {"step": 2}},
    ) in events
    assert "push db" in caplog.text


async def test_several_inputs_in_one_round(root: Context) -> None:
    @tool
    async def survey(ctx: CallContext) -> dict[str, Any]:
        """Ask two things at once."""
        got = await ctx.inputs(
            region=ctx.Ask("Region?", {"region": {"type": "string"}}),
            roots=ctx.Roots(),
        )
        return {"region": got["region"].content, "roots": len(got["roots"])}

    root.tools.register(survey)
    person = Person()
    call = ToolCall("s", "survey", {})
    CallContext(call, "mcp", person)
    result = await run(root, call)
    assert result.result == {"region": {"region": "eu"}, "roots": 1}
    assert len(person.asked) == 1
    assert set(person.asked[0]) == {"region", "roots"}


async def test_a_later_round_runs_the_body_again_with_recorded_answers(root: Context) -> None:
    runs: list[int] = []

    @tool
    async def twice(ctx: CallContext) -> list[Any]:
        """Ask twice, in two rounds."""
        runs.append(ctx.round)
        first = await ctx.ask("First?", {"x": {"type": "string"}})
        second = await ctx.ask("Second?", {"y": {"type": "string"}})
        return [first.content, second.content]

    root.tools.register(twice)
    call = ToolCall("r", "twice", {})
    ctx = CallContext(call, "mcp", Later())
    paused = await run(root, call)
    assert paused.code == "approval_pending"
    assert paused.pending is not None
    assert paused.pending.data["ask"]["params"]["message"] == "First?"
    # round 2: the client answered the first question (the wire's JSON)
    recorded = [{"ask": {"action": "accept", "content": {"x": "1"}}}]
    call2 = ToolCall("r", "twice", {})
    CallContext(call2, "mcp", Later(), recorded=recorded)
    paused = await run(root, call2)
    assert paused.pending is not None
    assert paused.pending.data["ask"]["params"]["message"] == "Second?"
    recorded.append({"ask": {"action": "accept", "content": {"y": "2"}}})
    call3 = ToolCall("r", "twice", {})
    CallContext(call3, "mcp", Later(), recorded=recorded)
    done = await run(root, call3)
    assert done.result == [{"x": "1"}, {"y": "2"}]
    assert runs == [0, 1, 2]
    assert ctx.round == 0


async def test_idle_timeout_stops_silent_work_but_not_work_that_reports(root: Context) -> None:
    @tool(timeout={"total": 20, "idle": 0.3})
    async def steady(ctx: CallContext) -> str:
        """Report every 0.1 s for a second."""
        for step in range(10):
            await anyio.sleep(0.1)
            await ctx.progress(step, 10)
        return "done"

    @tool(timeout={"idle": 0.3})
    async def silent(ctx: CallContext) -> str:
        """Go quiet."""
        await ctx.progress(0)
        await anyio.sleep(5)
        return "never"

    root.tools.register(steady)
    root.tools.register(silent)
    assert (await run(root, ToolCall("1", "steady", {}))).result == "done"
    with anyio.fail_after(4):
        stopped = await run(root, ToolCall("2", "silent", {}))
    assert stopped.code == "timeout"
    assert "reported no progress for 0.3 seconds" in (stopped.error or "")


async def test_waiting_for_an_answer_counts_against_neither_limit(root: Context) -> None:
    @tool(timeout={"total": 0.4, "idle": 0.3})
    async def patient(ctx: CallContext) -> Any:
        """Ask, then finish."""
        left = ctx.time_left()
        answer = await ctx.ask("Go?")
        return [answer.action, left is not None and left <= 0.4]

    root.tools.register(patient)
    call = ToolCall("p", "patient", {})
    CallContext(call, "mcp", Person(delay=0.8))
    result = await run(root, call)
    assert result.result == ["accept", True], result
    assert result.ok


async def test_a_listener_elsewhere_on_the_context_keeps_calls_on_the_fast_branch(
    root: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.tools import kernel

    general: list[str] = []
    real = kernel.current

    async def counted(tools: Any, call: ToolCall) -> Any:
        general.append(call.id)
        return await real(tools, call)

    monkeypatch.setattr(kernel, "current", counted)
    root.tools.register(define_tool(name="add", description="adds", execute=lambda a: 1))
    root.on("tools/change", lambda *args: None)  # what an MCP server or the console listens to
    root.on("resources/change", lambda *args: None)
    await run(root, ToolCall("f", "add", {}))
    assert general == []

    async def allow(call: ToolCall, next: Any) -> str:
        return "allow"

    root.on("tools/pre-execute", allow)
    await run(root, ToolCall("g", "add", {}))
    assert general == ["g"]


async def test_listeners_read_call_context(root: Context) -> None:
    seen: list[Any] = []
    root.tools.register(define_tool(name="add", description="adds", execute=lambda a: 1))

    async def check(call: ToolCall, next: Any) -> str:
        seen.append((call.context.surface, call.context.client.id))
        return "allow"

    root.on("tools/pre-execute", check)
    call = ToolCall("l", "add", {})
    CallContext(call, "console", Person())
    await run(root, call)
    await run(root, ToolCall("m", "add", {}))
    assert seen == [("console", "person-1"), ("python", None)]


async def test_sample_and_roots_raise_input_unavailable_to_a_tool_that_catches(
    root: Context,
) -> None:
    @tool
    async def careful(ctx: CallContext) -> str:
        """Roots if there are any."""
        try:
            await ctx.roots()
        except InputUnavailable as exc:
            return f"none: {exc}"
        return "some"

    root.tools.register(careful)
    result = await run(root, ToolCall("c", "careful", {}))
    assert result.result.startswith("none: tool careful asked the caller for its roots")
