"""Spans after the GenAI conventions, into the OpenTelemetry SDK's in-memory exporter.

One turn with two tool calls is one ``invoke_agent harness`` span whose children are its
``chat`` spans and its ``execute_tool`` spans, against both scripted providers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness import Host
from harness.testing import Fault, Reply, Rule, ScriptedServer, call
from harness.tools import traces

from ..spans import Span, check_tree, from_sdk, named
from .conftest import config_file, entry, turn

pytestmark = pytest.mark.anyio


TWO_CALLS = [
    Rule(Reply.calls(call("echo", {"text": "hi"}), call("add", {"a": 2, "b": 3})), user="both"),
    Rule(Reply.say("hi, and 5"), tool="add"),
]


def finished(exporter: InMemorySpanExporter) -> list[Span]:
    return [from_sdk(span) for span in exporter.get_finished_spans()]


async def test_a_turn_with_two_calls_is_one_tree(
    tmp_path: Path, server: ScriptedServer, exported: InMemorySpanExporter
) -> None:
    server.rules = TWO_CALLS
    config = config_file(tmp_path, server, [entry("echo"), entry("add")])
    async with Host(config) as host:
        session = host.ctx.agent.session()
        events = await turn(session, "both")
    assert events[-1]["reason"] == "done"
    spans = finished(exported)
    check_tree(spans, server, session.id)
    assert len(spans) == 5
    # without trace_content: no arguments, results or messages
    for span in spans:
        assert not any(
            key in span.attributes
            for key in (
                "gen_ai.tool.call.arguments",
                "gen_ai.tool.call.result",
                "gen_ai.input.messages",
                "gen_ai.output.messages",
            )
        )


async def test_trace_content_records_arguments_results_and_messages(
    tmp_path: Path, server: ScriptedServer, exported: InMemorySpanExporter
) -> None:
    server.rules = TWO_CALLS
    tools = {"id": "tools", "name": "harness:tools", "config": {"trace_content": True}}
    config = config_file(tmp_path, server, [tools, entry("echo"), entry("add")])
    async with Host(config) as host:
        await turn(host.ctx.agent.session(), "both")
    spans = finished(exported)
    by_tool = {t.attributes["gen_ai.tool.name"]: t for t in named(spans, "execute_tool ")}
    echo, add = by_tool["echo"], by_tool["add"]
    assert json.loads(str(echo.attributes["gen_ai.tool.call.arguments"])) == {"text": "hi"}
    assert json.loads(str(add.attributes["gen_ai.tool.call.result"]))["result"] == 5
    first, second = named(spans, "chat ")
    sent = json.loads(str(second.attributes["gen_ai.input.messages"]))
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"]
    assert sent[-1]["parts"][0]["response"] == "5"
    answered = json.loads(str(second.attributes["gen_ai.output.messages"]))
    assert answered == [{"role": "assistant", "parts": [{"type": "text", "content": "hi, and 5"}]}]
    [agent] = named(spans, "invoke_agent")
    assert json.loads(str(agent.attributes["gen_ai.input.messages"]))[0]["parts"][0] == {
        "type": "text",
        "content": "both",
    }
    assert "How to use tools" in str(first.attributes["gen_ai.system_instructions"])


async def test_failures_carry_error_type(
    tmp_path: Path, server: ScriptedServer, exported: InMemorySpanExporter
) -> None:
    server.rules = [
        Rule(Reply.calls(call("add", {"a": "x", "b": 1}), call("nope", {})), user="fail"),
        Rule(Reply.say("broken"), faults=[Fault.http(500)] * 3),
    ]
    config = config_file(tmp_path, server, [entry("add")], model={"max_retries": 2})
    async with Host(config) as host:
        events = await turn(host.ctx.agent.session(), "fail")
    assert events[-1]["reason"] == "error"
    spans = finished(exported)
    tools = named(spans, "execute_tool ")
    assert [t.attributes["error.type"] for t in tools] == ["invalid_args"]  # nope never runs
    assert tools[0].error
    ok, failed = named(spans, "chat ")
    assert "error.type" not in ok.attributes
    assert failed.attributes["error.type"] == "500"
    assert failed.error
    [agent] = named(spans, "invoke_agent")
    assert agent.attributes["error.type"] == "500"
    assert agent.attributes["harness.turn.reason"] == "error"


async def test_without_a_provider_no_span_is_made(tmp_path: Path, server: ScriptedServer) -> None:
    server.rules = TWO_CALLS
    config = config_file(tmp_path, server, [entry("echo"), entry("add")])
    async with Host(config) as host:
        assert traces.ON is False
        assert traces.tracer() is None
        await turn(host.ctx.agent.session(), "both")
