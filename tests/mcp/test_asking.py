"""A tool that asks, samples, reads roots, reports progress and logs, end to end through the
official MCP SDK client: over stdio (``harness mcp``) and streamable HTTP (``harness run``),
in both protocol eras (2025-11-25 requests on the client's stream; 2026-07-28
``InputRequiredResult`` rounds the SDK client answers and retries). Also: accept, decline and
cancel; a client without the capabilities; and an inner call's question in a ``run_code``
program reaching only the client that runs the program."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import MISSING_REQUIRED_CLIENT_CAPABILITY

from ..helpers import HARNESS, ROOT, Elicitor, write
from ..processes import start_harness_run, stop

pytestmark = pytest.mark.anyio
ERAS = ["legacy", "2026-07-28"]
TRANSPORTS = ["stdio", "http"]

PLUGIN = '''
from harness import CallContext, define_resource, prompt, tool

inject = ["tools", "prompts", "resources"]


@tool
async def deploy(service: str, ctx: CallContext) -> dict:
    """Deploy a service, asking for the region."""
    answer = await ctx.ask(
        "Which region?", {"region": {"type": "string", "enum": ["eu", "us"], "required": True}}
    )
    if not answer.accepted:
        return {"deployed": False, "action": answer.action}
    await ctx.log("debug", "below the level the client takes")
    for step, name in enumerate(["build", "push", "roll out"], 1):
        await ctx.progress(step, 3, name)
        await ctx.log("info", f"{name} {service}", step=step)
    note = await ctx.sample(f"One line: deployed {service}", max_tokens=60)
    roots = await ctx.roots()
    return {
        "deployed": True,
        "region": answer.content["region"],
        "note": note.text,
        "roots": [root.uri for root in roots],
    }


@tool
async def whoami(ctx: CallContext) -> str:
    """Ask the person behind the call for their name."""
    answer = await ctx.ask("Who are you?", {"name": {"type": "string", "required": True}})
    return (answer.content or {}).get("name") or answer.action


@tool
async def summarize(text: str, ctx: CallContext) -> str:
    """Summarize a text with the client's model."""
    return (await ctx.sample(f"Summarize: {text}", max_tokens=40)).text


@prompt
async def briefing(topic: str, ctx: CallContext) -> str:
    """A briefing on a topic, for the reader's role."""
    answer = await ctx.ask("Your role?", {"role": {"type": "string", "required": True}})
    return f"Brief a {(answer.content or {}).get('role')} on {topic}"


async def motd(params: dict, ctx: CallContext) -> str:
    answer = await ctx.ask("Your name?", {"name": {"type": "string", "required": True}})
    return f"Good morning, {(answer.content or {}).get('name')}"


message_of_the_day = define_resource(
    uri="motd://today", name="motd", description="Today's greeting, for you.", read=motd
)


def apply(ctx):
    ctx.prompts.register(briefing)
    ctx.resources.register(message_of_the_day)
    ctx.tools.register(deploy)
    ctx.tools.register(whoami)
    ctx.tools.register(summarize)
'''

CONFIG = f"""
insert:
  - id: tools
    name: harness:tools
  - id: policy
    name: {ROOT / "plugins" / "policy.py"}
    config:
      rules: {{ deploy: ask }}
  - id: asking
    name: ./asking.py
  - id: code
    name: harness:code
    config: {{timeout: 60}}
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the MCP SDK's stdio and HTTP clients run on asyncio


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("asking")
    write(folder / "asking.py", PLUGIN)
    write(folder / "cordis.yml", CONFIG)
    return folder


@pytest.fixture(scope="module")
def served(project: Path) -> Iterator[str]:
    """One ``harness run`` serving the project over HTTP (both eras), its MCP URL."""
    process, port = start_harness_run(project, dict(os.environ))
    yield f"http://127.0.0.1:{port}/mcp"
    stop(process)


class Person:
    """The client's person and model: answers forms, samples, lists roots; records all."""

    def __init__(self, action: str = "accept", name: str = "ada") -> None:
        self.elicitor = Elicitor(
            "accept", form={"region": "eu", "name": name} if action == "accept" else None
        )
        self.action = action
        self.progress: list[tuple[float, float | None, str | None]] = []
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.sampled: list[types.CreateMessageRequestParams] = []

    async def elicit(self, context: Any, params: Any) -> types.ElicitResult:
        answer = await self.elicitor(context, params)
        if self.action != "accept" and not params.message.startswith("Allow the tool call"):
            return types.ElicitResult.model_validate({"action": self.action})
        return answer

    async def sample(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.sampled.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="deployed, all green"),
            model="test-model",
            stop_reason="endTurn",
        )

    async def roots(self, context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///work", name="work")])

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        if params.logger == "harness.tools.deploy":
            self.logs.append(params)

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total, message))


@asynccontextmanager
async def connect(
    transport: str, era: str, project: Path, url: str, person: Person | None
) -> AsyncIterator[Client]:
    """An SDK client over ``transport`` at ``era``, with ``person``'s callbacks (None: a
    client that declares no capabilities)."""
    target: Any = url
    if transport == "stdio":
        target = StdioServerParameters(
            command=HARNESS,
            args=["mcp", "-c", str(project / "cordis.yml")],
            cwd=str(project),
            env=dict(os.environ),
        )
    options: dict[str, Any] = {}
    if person is not None:
        options = {
            "elicitation_callback": person.elicit,
            "sampling_callback": person.sample,
            "list_roots_callback": person.roots,
            "logging_callback": person.log,
            "log_level": "info",  # 2026-07-28: the request's own level (no effect before)
        }
    async with Client(target, mode=era, **options) as client:
        yield client


def url_of(transport: str, request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue("served")) if transport == "http" else ""


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_tool_asks_samples_reads_roots_reports_progress_and_logs(
    transport: str, era: str, project: Path, request: pytest.FixtureRequest
) -> None:
    person = Person()
    async with connect(transport, era, project, url_of(transport, request), person) as client:
        with anyio.fail_after(60):
            result = await client.call_tool(
                "deploy", {"service": "api"}, progress_callback=person.on_progress
            )
    assert result.is_error is False, result.content
    assert result.structured_content == {
        "deployed": True,
        "region": "eu",
        "note": "deployed, all green",
        "roots": ["file:///work"],
    }
    # the policy's ask came first, then the tool's own question, on the same path
    assert person.elicitor.asked[0].startswith("Allow the tool call deploy(")
    assert person.elicitor.asked[1:] == ["Which region?"]
    assert person.sampled[-1].max_tokens == 60
    # a round runs the body again from its start: its last run reported all three steps
    assert person.progress[-3:] == [(1, 3, "build"), (2, 3, "push"), (3, 3, "roll out")]
    levels = {entry.level for entry in person.logs}
    assert levels == {"info"}  # info and above: the debug entry is not sent
    assert {"message": "roll out api", "data": {"step": 3}} in [e.data for e in person.logs]


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
@pytest.mark.parametrize("level", ["debug", "warning"])
async def test_a_handshake_era_client_chooses_its_log_level(
    level: str, project: Path, served: str
) -> None:
    person = Person()
    async with connect("http", "legacy", project, served, person) as client:
        await client.set_logging_level(level)  # type: ignore[arg-type]
        result = await client.call_tool("deploy", {"service": "api"})
    assert result.is_error is False, result.content
    if level == "debug":  # below info: the debug entry comes too
        assert [entry.level for entry in person.logs] == ["debug", "info", "info", "info"]
    else:  # above info: none of the tool's entries
        assert person.logs == []


@pytest.mark.parametrize("action", ["accept", "decline", "cancel"])
@pytest.mark.parametrize("era", ERAS)
async def test_accept_decline_and_cancel_reach_the_tool(
    era: str, action: str, project: Path, served: str
) -> None:
    person = Person(action, name="grace")
    async with connect("http", era, project, served, person) as client:
        result = await client.call_tool("whoami", {})
    assert result.is_error is False, result.content
    assert result.structured_content == {"result": "grace" if action == "accept" else action}
    assert person.elicitor.asked == ["Who are you?"]


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_without_the_capabilities(era: str, project: Path, served: str) -> None:
    async with connect("http", era, project, served, None) as client:
        asked = await client.call_tool("whoami", {})
        # nobody can answer (no elicitation, no console page): cancel, at once
        assert asked.structured_content == {"result": "cancel"}
        # it cannot approve: the policy's ask is denied, saying so
        denied = await client.call_tool("deploy", {"service": "api"})
        assert denied.is_error is True
        assert "elicitation" in "".join(getattr(b, "text", "") for b in denied.content)
        if era == "legacy":  # sampling it did not declare: the tool fails, naming it
            sampled = await client.call_tool("summarize", {"text": "x"})
            assert sampled.is_error is True
            text = "".join(getattr(block, "text", "") for block in sampled.content)
            assert "asked the caller for sampling" in text
        else:  # 2026-07-28: the protocol's -32021, naming the capability
            with pytest.raises(MCPError) as refused:
                await client.call_tool("summarize", {"text": "x"})
            assert refused.value.code == MISSING_REQUIRED_CLIENT_CAPABILITY
            assert refused.value.data == {"requiredCapabilities": {"sampling": {}}}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_prompt_and_a_resource_that_ask(
    transport: str, era: str, project: Path, request: pytest.FixtureRequest
) -> None:
    person = Person()
    person.elicitor.form = {"role": "reviewer", "name": "ada"}
    async with connect(transport, era, project, url_of(transport, request), person) as client:
        listed = {p.name: p for p in (await client.list_prompts()).prompts}
        got = await client.get_prompt("briefing", {"topic": "rounds"})
        read = await client.read_resource("motd://today")
    assert [a.name for a in listed["briefing"].arguments or []] == ["topic"]  # ctx is no argument
    assert got.messages[0].content == types.TextContent(
        type="text", text="Brief a reviewer on rounds"
    )
    [contents] = read.contents
    assert isinstance(contents, types.TextResourceContents)
    assert contents.text == "Good morning, ada"
    assert person.elicitor.asked == ["Your role?", "Your name?"]


PROGRAM = "await whoami()"


async def test_an_inner_calls_question_reaches_only_the_client_running_the_program(
    project: Path, served: str
) -> None:
    """Two clients run a program at once; each program's inner call asks; each question
    reaches the client whose program asked, and that client's answer comes back to it."""
    both_asked = anyio.Event()
    waiting = 0

    class Waiting(Person):
        async def elicit(self, context: Any, params: Any) -> types.ElicitResult:
            nonlocal waiting
            waiting += 1
            if waiting == 2:
                both_asked.set()
            with anyio.fail_after(30):  # both programs are asking at the same time
                await both_asked.wait()
            return await super().elicit(context, params)

    people = {"ada": Waiting(name="ada"), "grace": Waiting(name="grace")}
    results: dict[str, Any] = {}

    async def run(name: str) -> None:
        async with connect("http", "legacy", project, served, people[name]) as client:
            results[name] = await client.call_tool("run_code", {"code": PROGRAM})

    async with anyio.create_task_group() as group:
        for name in people:
            group.start_soon(run, name)
    for name, person in people.items():
        assert person.elicitor.asked == ["Who are you?"], name
        text = "".join(getattr(block, "text", "") for block in results[name].content)
        assert results[name].is_error is False, text
        assert name in text
        other = "grace" if name == "ada" else "ada"
        assert other not in text
