"""No error answer of ``harness run``'s HTTP server, console or MCP, shows a path of this
host: files of the project are named relative to it, others by their name. Against a real
``harness run`` on 127.0.0.1, over every kind of error either app answers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from harness.testing import Reply, Rule, ScriptedServer

from ..providers import model_yaml
from .conftest import Served, make_project

MCP = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
_PATHS = re.compile(r"(?:[A-Za-z]:)?[/\\][^\s'\"`()<>,;]+")


def host_paths(text: str) -> list[str]:
    """The absolute paths in ``text`` that name a file or folder of this machine."""
    found = []
    for candidate in _PATHS.findall(text):
        for path in (candidate.rstrip(".:"), candidate.split(":")[0]):
            if len(path) > 1 and Path(path).exists():
                found.append(candidate)
                break
    return found


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with ScriptedServer([Rule(Reply.say("Noted."), user="")]) as model:
        extra = (
            f"  - id: model\n    {model_yaml(model, '    ')}\n"
            "  - id: agent\n    name: harness:agent\n"
            "  - id: ghost\n    name: ./plugins/missing.py\n"
        )
        server = Served(make_project(tmp_path_factory.mktemp("errors"), extra), "--no-watch")
        yield server
        server.close()


def test_no_error_of_the_console_names_a_host_path(served: Served) -> None:
    base = served.base
    folder = str(served.config.parent)
    requests = [
        ("POST", "api/sessions/nope/messages", {"text": "hi"}, 404),
        ("POST", "api/sessions/nope/cancel", {}, 404),
        ("GET", "api/sessions/nope", None, 404),
        ("GET", "api/sessions/nope/export", None, 404),
        ("GET", "api/sessions/nope/trajectory", None, 404),
        ("POST", "api/plugins/nope/enable", {}, 404),
        ("POST", "api/plugins/echo/frob", {}, 404),
        ("POST", "api/approvals/nope", {"decision": "deny"}, 404),
        ("POST", "api/tools/echo/call", {"bogus": 1}, 400),
        ("GET", "api/nope", None, 404),
        ("GET", "nope", None, 404),
        ("GET", "static/nope.js", None, 404),
        ("GET", "static/../../../etc/passwd", None, 404),
        ("PUT", "api/tools", {}, 404),
        ("POST", "", {}, 405),
    ]
    with httpx2.Client(timeout=10) as client:
        for method, path, body, status in requests:
            answer = client.request(method, base + path, json=body)
            assert answer.status_code == status, (method, path, answer.text)
            assert folder not in answer.text, (method, path, answer.text)
            assert host_paths(answer.text) == [], (method, path, answer.text)
        moved = client.post(base + "api/plugins/nope/enable", json={})
        assert moved.json() == {"error": "cordis.yml: no entry has id 'nope'"}  # still says where
        served.config.write_text(served.config.read_text() + "\n  - id: [unclosed\n")
        broken = client.post(base + "api/plugins/echo/disable", json={})
        assert broken.status_code == 409, broken.text
        assert broken.json()["error"].startswith(
            "cordis.yml: cannot edit a file that is not valid YAML"
        ), broken.text
        assert folder not in broken.text
        assert host_paths(broken.text) == []


def test_no_error_of_the_mcp_endpoint_names_a_host_path(served: Served) -> None:
    mcp = served.base + "mcp"
    port = served.base.rsplit(":", 1)[1].rstrip("/")
    answers = [
        httpx2.get(mcp + "/nope"),
        httpx2.post(mcp, content=b"{", headers=MCP),
        httpx2.post(mcp, json=PING, headers={**MCP, "Mcp-Session-Id": "nope"}),
        httpx2.delete(mcp, headers={"Mcp-Session-Id": "nope"}),
        httpx2.get(mcp, headers={"Accept": "text/html"}),
        httpx2.post(mcp, content=b"x", headers={**MCP, "Content-Type": "text/plain"}),
        httpx2.post(mcp, json=PING, headers={**MCP, "Host": "evil.example"}),
        httpx2.post(mcp, json=PING, headers={**MCP, "Origin": "http://evil.example"}),
        httpx2.post(mcp, json={"jsonrpc": "2.0", "id": 1, "method": "nope"}, headers=MCP),
    ]
    for answer in answers:
        assert answer.status_code >= 400, (answer.request.url, answer.text)
        assert str(served.config.parent) not in answer.text
        assert host_paths(answer.text) == [], answer.text
    assert port  # the requests went to this server


def test_outside_the_project_a_path_keeps_only_its_name(tmp_path: Path) -> None:
    from harness.web.hide_paths import hide_paths

    project = tmp_path / "project"
    assert hide_paths(f"{project}/cordis.yml:3: entry 'x': broken", project) == (
        "cordis.yml:3: entry 'x': broken"
    )
    assert hide_paths(f"cannot read {tmp_path}/elsewhere/policy.yml.", project) == (
        "cannot read policy.yml."
    )
    assert hide_paths("no such API route: GET /api/nope/deeper", project) == (
        "no such API route: GET /api/nope/deeper"
    )  # not a folder of this host: the request's own path, echoed
