"""An int of more than 4300 digits, which Python will not write as JSON, never bricks a session.

A tool returns ``10**5000``; a program returns one and passes one to a tool. Over the
console's HTTP API of a real ``harness run``, against each scripted provider: every turn
finishes, the model reads what went wrong, the next turn works, and the session's record
(``GET /api/sessions/{id}``, its export and trajectory) answers 200.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from harness.testing import Reply, Rule, ScriptedServer, call

from ..agent.conftest import PLUGINS
from ..providers import PROVIDERS, model_entry, sent, server_for
from .conftest import Served

BIG = """
from harness import tool

inject = ["tools"]


@tool
def big() -> int:
    \"\"\"A very long number.\"\"\"
    return 10**5000


def apply(ctx):
    ctx.tools.register(big)
"""

PROGRAM = """
n = 10**5000
try:
    await add(a=n, b=1)
except Exception as exc:
    print(exc)
n
"""

RULES = [
    Rule(Reply.calls(call("big", {})), user="first"),
    Rule(Reply.say("The tool failed."), tool="big"),
    Rule(Reply.calls(call("run_code", {"code": PROGRAM})), user="second"),
    Rule(Reply.say("The program failed."), tool="run_code"),
    Rule(Reply.say("Still here."), user="third"),
]

EXPECTED = "an integer of more than 4300 digits (the most a JSON number may have here)"


@pytest.fixture(params=PROVIDERS)
def model(request: pytest.FixtureRequest) -> Iterator[ScriptedServer]:
    with server_for(request.param, list(RULES)) as server:
        yield server


@pytest.fixture
def served(tmp_path: Path, model: ScriptedServer) -> Iterator[Served]:
    (tmp_path / "big.py").write_text(BIG, encoding="utf-8")
    items: list[dict[str, Any]] = [
        {"id": "big", "name": str(tmp_path / "big.py")},
        {"id": "add", "name": str(PLUGINS / "add.py")},
        {"id": "code", "name": "harness:code", "config": {"timeout": 20}},
        model_entry(model, max_retries=0),
        {"id": "agent", "name": "harness:agent"},
    ]
    config = tmp_path / "cordis.yml"
    config.write_text(yaml.safe_dump({"insert": items}, sort_keys=False), encoding="utf-8")
    running = Served(config)
    yield running
    running.close()


def turn(served: Served, session: str, text: str) -> dict[str, Any]:
    """Send ``text`` and read the console's event stream until that turn ends (60 s at most:
    the stream's keep-alive lines come through while nothing happens)."""
    sessions = served.base + "api/sessions/"
    deadline = time.monotonic() + 60
    with (
        httpx2.Client(timeout=30) as client,
        client.stream("GET", served.base + "api/events") as stream,
    ):
        answer = client.post(f"{sessions}{session}/messages", json={"text": text})
        assert answer.status_code == 202, answer.text
        for line in stream.iter_lines():
            assert time.monotonic() < deadline, f"the turn {text!r} did not end within 60 s"
            if line.startswith("data: "):
                data = json.loads(line[len("data: ") :])
                if data.get("type") == "turn/end" and data.get("session") == session:
                    return dict(data)
    raise AssertionError(f"the stream ended before the turn {text!r} did")


def test_a_tool_or_program_returning_a_long_int_leaves_the_session_usable(
    served: Served, model: ScriptedServer
) -> None:
    sessions = served.base + "api/sessions/"
    created = httpx2.post(served.base + "api/sessions", json={})
    assert created.status_code == 201, created.text
    session = created.json()["id"]
    for text in ("first", "second", "third"):
        ended = turn(served, session, text)
        assert (ended["reason"], ended["error"]) == ("done", None), ended
    # the last turn's request holds both results, as the model read what went wrong
    assert len(model.requests) == 5
    tool, program = (m["content"] for m in sent(model, 4).results())
    assert "Tool big returned invalid output" in tool
    assert f"$ is {EXPECTED}" in tool
    assert json.loads(program) == {
        "error": f"the program's value holds {EXPECTED}",
        "code": "tool_error",
    }
    record = httpx2.get(sessions + session)
    assert record.status_code == 200, record.text
    events = record.json()["events"]
    [inner] = [e for e in events if e["type"] == "tool/call" and e.get("parent")]
    assert inner["args"] == {"a": "<an integer of more than 4300 digits>", "b": 1}
    [failed] = [e for e in events if e["type"] == "tool/result" and e.get("parent")]
    assert failed["result"]["code"] == "invalid_args"
    assert EXPECTED in failed["result"]["error"]
    for path in ("/export", "/trajectory"):
        assert httpx2.get(sessions + session + path).status_code == 200
    assert httpx2.get(served.base + "api/sessions").status_code == 200
    assert "Traceback" not in "".join(served.lines)
