"""An upstream's progress, logs and requests reach the caller's context (DESIGN §12, §16).

The upstream is the official SDK's ``MCPServer`` (tests/gateway/forwarding_server.py) over
stdio, mounted by ``harness:mcp-client``. Its tools report progress, log, and ask for a
form, a completion and the client's roots while they run; each goes to the context of the
call that runs: here a caller written as a :class:`harness.Client`, as every surface's is.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client as SdkClient

from harness import Answer, CallContext, Client, Host, Root, Sampled, ToolCall, ToolResult
from harness.mcp import McpSurface
from harness.tools.inputs import Input, InputUnavailable

from ..helpers import PLUGINS
from .conftest import write_config

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).with_name("forwarding_server.py")
UP = "MCP server 'up'"


def entry(**config: Any) -> dict[str, Any]:
    body = {"command": sys.executable, "args": [str(SERVER), "stdio"], **config}
    return {"id": "up", "name": "harness:mcp-client", "config": body}


class Caller(Client):
    """The person and the model behind a call: answers forms with ``ok``, completions with
    its model, roots with one folder; keeps what it was shown and asked."""

    def __init__(self, action: str = "accept", model: bool = True) -> None:
        super().__init__("client-caller")
        self.action = action
        self.model = model
        self.asked: list[dict[str, Any]] = []
        self.shown: list[tuple[str, Any]] = []

    async def answer(self, ctx: CallContext, requests: Mapping[str, Input]) -> dict[str, Any]:
        answers: dict[str, Any] = {}
        for key, request in requests.items():
            self.asked.append(request.to_wire())
            if request.kind == "ask":
                content = {"ok": True} if self.action == "accept" else None
                answers[key] = Answer(self.action, content)  # type: ignore[arg-type]
            elif not self.model:
                raise InputUnavailable("this caller has no model and no roots")
            elif request.kind == "sample":
                answers[key] = Sampled("Yes", [{"type": "text", "text": "Yes"}], "caller-model")
            else:
                answers[key] = [Root("file:///work/project", "project")]
        return answers

    async def progress(
        self, ctx: CallContext, done: float, total: float | None, message: str | None
    ) -> None:
        self.shown.append(("progress", (ctx.call.id, done, total, message)))

    async def log(self, ctx: CallContext, level: str, message: str, data: dict[str, Any]) -> None:
        self.shown.append(("log", (ctx.call.id, level, message, data.get("upstream"))))


async def call(host: Host, caller: Client, tool: str, args: dict[str, Any]) -> ToolResult:
    request = ToolCall("c1", tool, args)
    CallContext(request, "mcp", caller)
    with anyio.fail_after(30):
        result: ToolResult = await host.ctx.tools.execute(request)
    return result


def said(result: ToolResult) -> Any:
    assert result.ok, result.error
    return result.result["result"]


async def test_progress_and_logs_reach_the_caller_of_the_call(tmp_path: Path) -> None:
    events: list[tuple[str, dict[str, Any]]] = []
    async with Host(write_config(tmp_path, [entry()])) as host:
        host.ctx.on("tool/progress", lambda fields, ctx: events.append(("progress", fields)))
        host.ctx.on("tool/log", lambda fields, ctx: events.append(("log", fields)))
        caller = Caller()
        result = await call(host, caller, "up_work", {"steps": 3})
    assert said(result) == "worked"
    progress = [shown for kind, shown in caller.shown if kind == "progress"]
    assert progress == [("c1", float(n), 3.0, f"step {n}") for n in (1, 2, 3)]
    logs = [shown for kind, shown in caller.shown if kind == "log"]
    assert logs == [
        *[("c1", "info", f"worked step {n}", UP) for n in (1, 2, 3)],
        ("c1", "warning", '{"done": 3}', UP),
    ]
    # the events every surface shows (the console's card, the agent's session)
    assert [fields["done"] for kind, fields in events if kind == "progress"] == [1, 2, 3]
    assert [fields["message"] for kind, fields in events if kind == "log"][-1] == '{"done": 3}'


@pytest.mark.parametrize(
    ("action", "upstream"),
    [("accept", "accept:True"), ("decline", "decline:None"), ("cancel", "cancel:None")],
)
async def test_the_server_s_form_is_answered_by_the_caller(
    tmp_path: Path, action: str, upstream: str
) -> None:
    async with Host(write_config(tmp_path, [entry()])) as host:
        caller = Caller(action)
        result = await call(host, caller, "up_confirm", {})
    assert said(result) == upstream
    (asked,) = caller.asked
    assert asked["method"] == "elicitation/create"
    assert asked["params"]["message"] == "Really do it?"
    assert asked["params"]["requestedSchema"]["properties"]["ok"]["type"] == "boolean"


async def test_sampling_and_roots_are_the_caller_s(tmp_path: Path) -> None:
    async with Host(write_config(tmp_path, [entry()])) as host:
        caller = Caller()
        sampled = await call(host, caller, "up_ask_model", {"prompt": "Ready?"})
        roots = await call(host, caller, "up_roots", {})
    assert said(sampled) == "caller-model: Yes"
    assert said(roots) == "project=file:///work/project"
    sample, listed = caller.asked
    assert sample == {
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Ready?"}}],
            "maxTokens": 50,
            "systemPrompt": "Answer in one word.",
            "temperature": 0.5,
        },
    }
    assert listed == {"method": "roots/list", "params": {}}


async def test_a_caller_without_a_model_or_roots_gets_the_server_an_error(
    tmp_path: Path,
) -> None:
    async with Host(write_config(tmp_path, [entry()])) as host:
        caller = Caller(model=False)
        sampled = await call(host, caller, "up_ask_model", {"prompt": "Ready?"})
        roots = await call(host, caller, "up_roots", {})
    assert said(sampled) == (
        "error: the caller cannot sample: this caller has no model and no roots"
    )
    assert said(roots) == (
        "error: the caller cannot list roots: this caller has no model and no roots"
    )


async def test_nobody_to_answer_declines_and_refuses(tmp_path: Path) -> None:
    # Python's base client: no page open, no session; nobody to ask, no model, no roots
    async with Host(write_config(tmp_path, [entry()])) as host:
        confirmed = await call(host, Client(), "up_confirm", {})
        sampled = await call(host, Client(), "up_ask_model", {"prompt": "Ready?"})
        roots = await call(host, Client(), "up_roots", {})
    assert said(confirmed) == "decline:None"
    assert said(sampled).startswith("error: the caller cannot sample: tool up_ask_model asked")
    assert said(roots).startswith("error: the caller cannot list roots: tool up_roots asked")


def policy(rule: str) -> dict[str, Any]:
    return {"id": "policy", "name": str(PLUGINS / "policy.py"), "config": {"rules": {"up_*": rule}}}


@pytest.mark.parametrize("rule", ["allow", "ask"])
async def test_an_mcp_client_without_elicitation_gets_the_server_a_decline(
    tmp_path: Path, rule: str
) -> None:
    # an allow rule, or an ask remembered with allow_always: the policy's answer never
    # answers the server's own question, and this client cannot be asked it
    async with Host(write_config(tmp_path, [policy(rule), entry()])) as host:
        approvals = host.ctx.tools.approvals
        requests: list[dict[str, Any]] = []
        asked = anyio.Event()

        def seen(fields: dict[str, Any]) -> None:
            requests.append(fields)
            asked.set()

        host.ctx.on("approval/request", seen)
        surface = McpSurface(host.ctx)
        surface.attach()
        results: list[Any] = []
        async with SdkClient(surface.server, mode="legacy") as client:  # no elicitation
            if rule == "ask":  # a console page answers the policy's ask with allow_always
                detach = approvals.attach()
                async with anyio.create_task_group() as group:

                    async def first() -> None:
                        results.append(await client.call_tool("up_confirm", {}))

                    group.start_soon(first)
                    with anyio.fail_after(30):
                        await asked.wait()
                        asked = anyio.Event()
                        approvals.answer(requests[0]["id"], "allow_always")
                        await asked.wait()  # the server's question, at the open page
                    assert requests[1]["question"] is True
                    approvals.answer(requests[1]["id"], "deny")  # the person declines it
                detach()  # the page closes: nobody is left who can answer a question
            with anyio.fail_after(30):
                results.append(await client.call_tool("up_confirm", {}))
    for result in results:
        assert result.is_error is False, result.content
        assert (result.structured_content or {}).get("result") == "decline:None"
    assert [r["name"] for r in requests] == (["up_confirm"] * 2 if rule == "ask" else [])


class Downstream:
    """The person and model behind a real SDK client that calls harness: answers the form,
    samples, lists roots; records the progress and logs it is sent."""

    def __init__(self) -> None:
        self.progress: list[tuple[float, float | None, str | None]] = []
        self.logs: list[tuple[str, Any]] = []
        self.sampled: list[types.CreateMessageRequestParams] = []

    async def elicit(self, context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"ok": False})

    async def sample(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.sampled.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="Certainly"),
            model="downstream-model",
        )

    async def roots(self, context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///home/ada", name="home")])

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        if params.logger == "harness.tools.up_work":
            self.logs.append((params.level, params.data))

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total, message))


async def test_an_sdk_client_downstream_gets_the_upstream_s_progress_logs_and_requests(
    tmp_path: Path,
) -> None:
    person = Downstream()
    async with Host(write_config(tmp_path, [entry()])) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        async with SdkClient(
            surface.server,
            mode="legacy",
            elicitation_callback=person.elicit,
            sampling_callback=person.sample,
            list_roots_callback=person.roots,
            logging_callback=person.log,
        ) as client:
            with anyio.fail_after(30):
                worked = await client.call_tool(
                    "up_work", {"steps": 2}, progress_callback=person.on_progress
                )
                confirmed = await client.call_tool("up_confirm", {})
                sampled = await client.call_tool("up_ask_model", {"prompt": "Ready?"})
                roots = await client.call_tool("up_roots", {})

    def said(result: types.CallToolResult) -> Any:
        assert result.is_error is False, result.content
        return (result.structured_content or {}).get("result")

    assert said(worked) == "worked"
    assert person.progress == [(1.0, 2.0, "step 1"), (2.0, 2.0, "step 2")]
    assert [level for level, _ in person.logs] == ["info", "info", "warning"]
    assert said(confirmed) == "accept:False"
    assert said(sampled) == "downstream-model: Certainly"
    (request,) = person.sampled
    assert request.system_prompt == "Answer in one word."
    assert request.max_tokens == 50
    assert said(roots) == "home=file:///home/ada"
