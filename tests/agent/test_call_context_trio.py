"""The agent surface of the call context on asyncio and trio, through an ``llm`` provider that
does not use the openai SDK (the SDK leaves async generators unfinished on trio)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from harness import Host

from .conftest import write

pytestmark = pytest.mark.anyio

PROVIDER = '''
import json

from harness import Service
from harness.llm import ChatRequest, Completion, RequestedCall, ToolMessage


class Echoing(Service):
    """Calls ``probe`` once, answers a sampling request by echoing it, then says done."""

    name = "echoing"
    provides = ("llm",)
    schema_format = "openai"
    label = "echoing"

    def __init__(self, ctx, config):
        super().__init__(ctx, "llm")

    async def complete(self, request: ChatRequest, on_text=None) -> Completion:
        last = request.messages[-1]
        if request.max_tokens is not None:  # a tool's sampling: no tools, its own budget
            text = f"{request.system}|{last.text}|{request.max_tokens}|{request.tools}"
            return Completion(text=text, finish_reason="length")
        if isinstance(last, ToolMessage):
            return Completion(text="done", finish_reason="stop")
        call = RequestedCall("p1", "probe", json.dumps({"text": last.text}))
        return Completion(tool_calls=(call,), finish_reason="tool_calls")


apply = Echoing
'''

PROBE = '''
from harness import CallContext, tool

inject = ["tools"]


@tool
async def probe(text: str, ctx: CallContext) -> dict:
    """Use every input of the context."""
    await ctx.progress(1, 2, "half")
    await ctx.log("notice", "probing", text=text)
    answer = await ctx.ask("Go on?", {"go": {"type": "boolean", "required": True}})
    sampled = await ctx.sample(text, system="terse", max_tokens=7)
    roots = await ctx.roots()
    await ctx.progress(2, 2, "done")
    return {
        "go": (answer.content or {}).get("go"),
        "sampled": [sampled.text, sampled.model, sampled.stop_reason],
        "roots": [root.uri for root in roots],
        "surface": ctx.surface,
    }


def apply(ctx):
    return ctx.tools.register(probe)
'''


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def config(tmp_path: Path) -> Path:
    items: list[dict[str, Any]] = [
        {"id": "probe", "name": str(write(tmp_path / "probe.py", PROBE))},
        {"id": "model", "name": str(write(tmp_path / "echoing.py", PROVIDER))},
        {"id": "agent", "name": "harness:agent", "config": {"sessions": None}},
    ]
    path = tmp_path / "cordis.yml"
    path.write_text(yaml.safe_dump({"insert": items}), encoding="utf-8")
    return path


async def test_every_input_of_a_call_on_the_agent_surface(tmp_path: Path) -> None:
    async with Host(config(tmp_path)) as host:
        session = host.ctx.agent.session()
        events = []
        with anyio.fail_after(30):
            async for event in session.send("ship it"):
                events.append(event)
                if event["type"] == "approval/request":
                    host.ctx.approval.answer(event["id"], "allow_once", content={"go": True})
        logged = [event["type"] for event in session.events]
    result = next(e for e in events if e["type"] == "tool/result")["result"]
    assert result["result"] == {
        "go": True,
        "sampled": ["terse|ship it|7|[]", "echoing", "maxTokens"],
        "roots": [tmp_path.resolve().as_uri()],
        "surface": "agent",
    }
    progress = [(e["done"], e["message"]) for e in events if e["type"] == "tool/progress"]
    assert progress == [(1, "half"), (2, "done")]
    [log] = [e for e in events if e["type"] == "tool/log"]
    assert (log["level"], log["message"], log["data"]) == ("notice", "probing", {"text": "ship it"})
    assert "tool/log" in logged
    assert "tool/progress" not in logged
