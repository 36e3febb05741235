"""The loop on asyncio and trio, through an llm provider that does not use the openai SDK.

The provider is the guide's "another llm provider" example, run as a plugin by path.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import yaml

from harness import Host

from .conftest import PLUGINS, SLOW_PLUGIN, write

pytestmark = pytest.mark.anyio

PROVIDER = '''
"""A provider of the llm service: it asks for one tool call, then repeats the result."""

import json

import anyio
from harness import Service
from harness.llm import ChatRequest, Completion, RequestedCall


class Parrot(Service):
    name = "parrot"
    provides = ("llm",)

    def __init__(self, ctx, config):
        super().__init__(ctx, "llm")
        self.tool = config["tool"]

    async def complete(self, request: ChatRequest, on_text=None) -> Completion:
        last = request.messages[-1]
        if last["role"] == "tool":
            text = f"The tool said {last['content']}"
            for word in text.split(" "):
                await anyio.lowlevel.checkpoint()
                if on_text is not None:
                    on_text(word + " ")
            return Completion(text=text, usage={"total_tokens": len(text)})
        call = RequestedCall("p1", self.tool, json.dumps({"text": last["content"]}))
        return Completion(tool_calls=(call,), finish_reason="tool_calls")


apply = Parrot  # the module is the plugin; the class is applied with (ctx, config)
'''


def config(tmp_path: Path, tool: str) -> Path:
    provider = write(tmp_path / "parrot.py", PROVIDER)
    slow = write(tmp_path / "slow.py", SLOW_PLUGIN)
    items = [
        {"id": "echo", "name": str(PLUGINS / "echo.py")},
        {"id": "slow", "name": str(slow)},
        {"id": "model", "name": str(provider), "config": {"tool": tool}},
        {"id": "agent", "name": "harness:agent", "config": {"sessions": "./sessions"}},
    ]
    path = tmp_path / "cordis.yml"
    path.write_text(yaml.safe_dump({"insert": items}), encoding="utf-8")
    return path


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_a_turn_with_a_tool_call(tmp_path: Path) -> None:
    async with Host(config(tmp_path, "echo")) as host:
        session = host.ctx.agent.session()
        events = [event async for event in session.send("hello")]
    kinds = [e["type"] for e in events if e["type"] != "assistant/delta"]
    assert kinds == [
        "turn/start",
        "step/start",
        "assistant/message",
        "tool/call",
        "tool/result",
        "step/end",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    assert events[-1]["reason"] == "done"
    assert events[-2]["usage"] == {"total_tokens": len('The tool said {"text":"Echo: hello"}')}
    log = tmp_path / "sessions" / f"{session.id}.jsonl"
    assert len(log.read_text().splitlines()) == len(kinds)


async def test_cancelling_a_running_tool(tmp_path: Path) -> None:
    async with Host(config(tmp_path, "slow")) as host:
        started = anyio.Event()
        host.ctx.on("test/started", lambda args: started.set())
        session = host.ctx.agent.session()
        events = []
        with anyio.fail_after(20):
            async for event in session.send("wait"):
                events.append(event)
                if event["type"] == "tool/call":
                    await started.wait()
                    session.cancel()
    assert events[-1]["reason"] == "cancelled"
    result = next(e for e in events if e["type"] == "tool/result")["result"]
    assert result["code"] == "cancelled"
