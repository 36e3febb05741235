"""``trace_content: false`` (the default): no argument, program, output or result in a span.

Every span the real OpenTelemetry SDK records (into its in-memory exporter) is searched, its
name, attributes, status description, events and links alike, for distinctive strings put in
the arguments, programs, printed output, results, error messages, the user's input and the
model's answer and errors. Tool calls, ``run_code`` programs, an agent turn and a mounted
(gateway) tool all run, their failures included.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness import Host
from harness.testing import Reply, Rule, ScriptedServer, call

from ..helpers import HARNESS, ROOT, write

pytestmark = pytest.mark.anyio

ARGUMENT = "argument-7f3a"
PROGRAM = "program-91c2"
OUTPUT = "printed-55d0"
RESULT = "result-0b6e"
RAISED = "raised-c4a8"
INPUT = "typed-3e17"
ANSWER = "answered-d0f9"
UPSTREAM = "upstream-62ab"
REFUSED = "refused-a81c"
SECRETS = (ARGUMENT, PROGRAM, OUTPUT, RESULT, RAISED, INPUT, ANSWER, UPSTREAM, REFUSED)

LEAKY = f'''
from harness import define_tool

inject = ["tools"]


def boom(args):
    raise ValueError("{RAISED} while reading " + args["text"])


def apply(ctx):
    ctx.tools.register(define_tool(
        name="boom", description="Fail.", parameters={{"text": {{"type": "string"}}}},
        execute=boom))
    ctx.tools.register(define_tool(
        name="reveal", description="Answer.", parameters={{"text": {{"type": "string"}}}},
        execute=lambda args: {{"text": "{RESULT} " + args["text"]}}))
'''

# a program with a secret in its text, its printed output, its value and its failure
FAILING_PROGRAM = f"""
# {PROGRAM}
print("{OUTPUT}")
found = await reveal(text="{ARGUMENT}")
raise ValueError("{RAISED} " + found["text"])
"""
FINE_PROGRAM = f"""
# {PROGRAM}
print("{OUTPUT}")
(await reveal(text="{ARGUMENT}"))["text"]
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def everything(span: Any) -> str:
    """All the text of one exported span: name, attributes, status, events, links."""
    parts: list[Any] = [span.name, dict(span.attributes or {})]
    parts.append(span.status.description)
    for event in span.events:
        parts += [event.name, dict(event.attributes or {})]
    for link in span.links:
        parts.append(dict(link.attributes or {}))
    return json.dumps(parts, default=str)


def assert_private(exporter: InMemorySpanExporter, expected: set[str]) -> None:
    spans = exporter.get_finished_spans()
    names = {span.name for span in spans}
    assert expected <= names, names
    for span in spans:
        text = everything(span)
        leaked = [secret for secret in SECRETS if secret in text]
        assert not leaked, f"{span.name} shows {leaked}: {text}"


def config(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump({"insert": items}, sort_keys=False), encoding="utf-8")
    return path


def project(folder: Path, extra: list[dict[str, Any]]) -> Path:
    """The leaky tools, add and run_code, and the leaky tools again from a mounted upstream
    (``harness mcp``, whose failures' messages reach the gateway as they were)."""
    leaky = write(folder / "leaky.py", LEAKY)
    upstream = config(folder / "upstream.yml", [{"id": "leaky", "name": str(leaky)}])
    mount = {"command": HARNESS, "args": ["mcp", "-c", str(upstream)]}
    items: list[dict[str, Any]] = [
        {"id": "leaky", "name": str(leaky)},
        {"id": "add", "name": str(ROOT / "plugins" / "add.py")},
        {"id": "code", "name": "harness:code", "config": {"timeout": 20}},
        {"id": "up", "name": "harness:mcp-client", "config": mount},
        *extra,
    ]
    return config(folder / "cordis.yml", items)


async def test_calls_programs_and_mounted_tools_keep_their_content_out_of_spans(
    tmp_path: Path, exported: InMemorySpanExporter
) -> None:
    async with Host(project(tmp_path, [])) as host:
        calls = [
            ("boom", {"text": ARGUMENT}),
            ("reveal", {"text": ARGUMENT}),
            ("add", {"a": ARGUMENT, "b": 1}),
            ("run_code", {"code": FAILING_PROGRAM}),
            ("run_code", {"code": FINE_PROGRAM}),
            ("run_code", {"code": f"{PROGRAM} = ("}),
            ("up_boom", {"text": UPSTREAM}),
            ("up_reveal", {"text": ARGUMENT}),
        ]
        results = [
            await host.tools.execute({"id": f"c{n}", "name": name, "args": args})
            for n, (name, args) in enumerate(calls)
        ]
    codes = [result.code for result in results]
    assert codes == [
        "tool_error",
        None,
        "invalid_args",
        "tool_error",
        None,
        "invalid_args",
        "tool_error",
        None,
    ]
    # the secrets were there to leak: the results carry them
    assert RAISED in str(results[0].error)
    assert RAISED in str(results[3].error)
    assert UPSTREAM in str(results[6].error)
    assert_private(
        exported,
        {
            "execute_tool boom",
            "execute_tool run_code",
            "execute_tool reveal",
            "execute_tool up_boom",
        },
    )
    failed = [s for s in exported.get_finished_spans() if s.status.status_code.name == "ERROR"]
    # the status still says what kind of failure it was
    assert {s.status.description for s in failed} == {"tool_error", "invalid_args"}


class Refusing:
    """A model server answering every request with HTTP 400 whose message quotes the request,
    as providers' validation errors do."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                body = json.dumps(
                    {"error": {"message": f"cannot use {REFUSED}", "type": "invalid_request"}}
                ).encode()
                self.send_response(400)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def refusing() -> Iterator[Refusing]:
    running = Refusing()
    yield running
    running.close()


def model(url: str) -> list[dict[str, Any]]:
    config = {"model": "scripted", "base_url": url, "retry_backoff": 0.01, "max_retries": 0}
    return [
        {"id": "model", "name": "harness:openai", "config": config},
        {"id": "agent", "name": "harness:agent", "config": {}},
    ]


async def test_agent_turns_keep_their_content_out_of_spans(
    tmp_path: Path, exported: InMemorySpanExporter, refusing: Refusing
) -> None:
    rules = [
        Rule(
            Reply.calls(
                call("boom", {"text": ARGUMENT}),
                call("run_code", {"code": FAILING_PROGRAM}),
                call("up_boom", {"text": UPSTREAM}),
            ),
            user=INPUT,
        ),
        Rule(Reply.say(f"{ANSWER}"), tool="up_boom"),
    ]
    with ScriptedServer(rules) as server:
        async with Host(project(tmp_path, model(server.url))) as host:
            events = [event async for event in host.ctx.agent.session().send(f"say {INPUT}")]
    assert events[-1]["reason"] == "done"
    assert_private(
        exported,
        {"invoke_agent harness", "chat scripted", "execute_tool boom", "execute_tool up_boom"},
    )
    exported.clear()
    broken = tmp_path / "broken"
    broken.mkdir()
    async with Host(project(broken, model(refusing.url))) as host:
        events = [event async for event in host.ctx.agent.session().send(f"say {INPUT}")]
    assert events[-1]["reason"] == "error"
    assert REFUSED in str(events[-1]["error"])  # the secret was there to leak
    assert_private(exported, {"invoke_agent harness", "chat scripted"})
    [turn] = [s for s in exported.get_finished_spans() if s.name == "invoke_agent harness"]
    assert turn.status.description == "400"


async def test_with_trace_content_a_failure_s_status_says_what_failed(
    tmp_path: Path, exported: InMemorySpanExporter
) -> None:
    leaky = write(tmp_path / "leaky.py", LEAKY)
    tools = {"id": "tools", "name": "harness:tools", "config": {"trace_content": True}}
    path = config(tmp_path / "cordis.yml", [tools, {"id": "leaky", "name": str(leaky)}])
    async with Host(path) as host:
        await host.tools.execute({"id": "c1", "name": "boom", "args": {"text": ARGUMENT}})
    [span] = exported.get_finished_spans()
    assert span.status.description == f"{RAISED} while reading {ARGUMENT}"
    assert span.attributes is not None
    assert span.attributes["error.type"] == "tool_error"
