"""A running call on the Tools page and over HTTP: Cancel really cancels it on the server
(its result is ``cancelled`` and its body stops), and a program's calls show as live nested
cards while it runs, on the Tools page and in the Chat; run_code's description shows its
first paragraph, its stubs folded. In Chromium, against ``harness run``."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from harness.testing import Reply, Rule, ScriptedServer

from ..providers import model_yaml
from .conftest import Served, make_project
from .plugins_src import HOLD
from .test_browser import WAIT

JSON = {"Content-Type": "application/json"}


class Listener:
    """A port the ``hold`` tool connects to: accepting shows the call has started, reading
    end-of-stream shows its body has stopped, sending a word lets it finish."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(WAIT / 1000)
        self.port = self.server.getsockname()[1]

    def started(self) -> socket.socket:
        connection, _ = self.server.accept()
        connection.settimeout(WAIT / 1000)
        assert connection.makefile("rb").readline() == b"started\n"
        return connection

    def close(self) -> None:
        self.server.close()


def stopped(connection: socket.socket) -> bool:
    """Whether the tool's end closed the connection (its body has stopped)."""
    try:
        return connection.recv(1) == b""
    finally:
        connection.close()


def program(port: int) -> str:
    return f'first = await echo(text="one")\nprint(first)\nprint(await hold(port={port}))'


@pytest.fixture(scope="module")
def chat_port() -> Iterator[Listener]:
    listener = Listener()
    yield listener
    listener.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, chat_port: Listener) -> Iterator[Served]:
    rules = [
        Rule(Reply.program(program(chat_port.port)), user="run the program"),
        Rule(Reply.say("The program has run."), tool="run_code"),
    ]
    with ScriptedServer(rules) as model:
        extra = (
            "  - id: hold\n    name: ./plugins/hold.py\n"
            f"  - id: model\n    {model_yaml(model, '    ')}\n"
            "  - id: agent\n    name: harness:agent\n    config: {code_mode: true}\n"
            "  - id: code\n    name: harness:code\n    config: {timeout: 120}\n"
        )
        folder = tmp_path_factory.mktemp("running")
        running = Served(make_project(folder, extra, {"hold.py": HOLD}))
        yield running
        running.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    made = Listener()
    yield made
    made.close()


@pytest.fixture
def page(browser: Any, served: Served) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(WAIT)
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.goto(served.base + "#/tools")
    tab.get_by_text("live", exact=True).wait_for()
    yield tab
    context.close()
    assert errors == []


def test_a_running_call_is_cancelled_over_http(served: Served, listener: Listener) -> None:
    api = served.base + "api/"
    outcome: dict[str, Any] = {}

    def run() -> None:
        body = {"args": {"port": listener.port}, "id": "script-1"}
        outcome.update(httpx2.post(api + "tools/hold/call", json=body, timeout=60).json())

    caller = threading.Thread(target=run)
    caller.start()
    connection = listener.started()
    twice = httpx2.post(api + "tools/echo/call", json={"args": {"text": "x"}, "id": "script-1"})
    assert twice.status_code == 409
    assert twice.json() == {"error": "a call with id 'script-1' is running already; use another id"}
    # the same-origin JSON rules hold for the new route
    assert httpx2.post(api + "calls/script-1/cancel", content="{}").status_code == 415
    foreign = {**JSON, "Origin": "http://elsewhere.example"}
    assert (
        httpx2.post(api + "calls/script-1/cancel", content="{}", headers=foreign).status_code == 403
    )

    answer = httpx2.post(api + "calls/script-1/cancel", json={})
    assert answer.status_code == 200
    assert answer.json() == {"id": "script-1", "cancelled": True}
    caller.join(timeout=WAIT / 1000)
    assert outcome["code"] == "cancelled"
    assert outcome["error"] == "Tool hold was cancelled"
    assert stopped(connection)  # the body itself was stopped, not merely abandoned

    again = httpx2.post(api + "calls/script-1/cancel", json={})
    assert again.status_code == 404
    assert again.json() == {
        "error": "no running call has id 'script-1': it has finished, or was not started "
        "with POST /api/tools/{name}/call"
    }
    bad = httpx2.post(api + "tools/echo/call", json={"args": {"text": "x"}, "id": "a b"})
    assert bad.status_code == 400
    assert bad.json() == {"error": "id must be 1 to 200 letters, digits or - _ . : ~"}


def test_cancel_on_the_tools_page(page: Any, listener: Listener) -> None:
    region = page.get_by_role("region", name="hold")
    region.get_by_label("port", exact=True).fill(str(listener.port))
    region.get_by_role("button", name="Run").click()
    connection = listener.started()
    result = region.get_by_role("region", name="result")
    result.get_by_role("button", name="Cancel").click()
    result.get_by_text("error code: cancelled").wait_for()
    assert "Tool hold was cancelled" in result.inner_text()
    assert stopped(connection)
    assert result.get_by_role("button", name="Cancel").count() == 0
    assert region.get_by_role("button", name="Run").is_enabled()


def test_run_code_shows_its_first_paragraph_and_folds_its_stubs(page: Any) -> None:
    region = page.get_by_role("region", name="run_code")
    lead = region.get_by_text("Run a short Python program that calls the tools below")
    lead.wait_for()  # visible once the Tools page has rendered (is_visible does not wait)
    stub = region.get_by_text("async def hold(port: int)")
    assert stub.is_hidden()
    region.get_by_text("The tools, as Python stubs (top-level await works)").click()
    stub.wait_for()
    assert "monospace" in stub.evaluate("node => getComputedStyle(node).fontFamily")


def test_a_programs_calls_show_live_on_the_tools_page(page: Any, listener: Listener) -> None:
    region = page.get_by_role("region", name="run_code")
    region.get_by_label("code", exact=True).fill(program(listener.port))
    region.get_by_role("button", name="Run").click()
    connection = listener.started()  # the program waits in its second call
    result = region.get_by_role("region", name="result")
    result.get_by_role("article", name="tool call echo").get_by_text("done", exact=True).wait_for()
    holding = result.get_by_role("article", name="tool call hold")
    holding.get_by_text("running", exact=True).wait_for()
    connection.sendall(b"go")
    result.get_by_role("heading", name="Canonical JSON").wait_for()
    assert "{'word': 'go'}" in result.inner_text()
    result.get_by_role("article", name="tool call hold").get_by_text("done", exact=True).wait_for()
    connection.close()


def test_a_programs_calls_show_live_in_the_chat(page: Any, chat_port: Listener) -> None:
    page.get_by_role("link", name="Chat").click()
    page.get_by_role("button", name="New session").click()
    page.get_by_role("textbox", name="Message").fill("run the program")
    page.get_by_role("button", name="Send").click()
    connection = chat_port.started()
    outer = page.get_by_role("article", name="tool call run_code")
    outer.get_by_role("article", name="tool call echo").get_by_text("done", exact=True).wait_for()
    outer.get_by_role("article", name="tool call hold").get_by_text(
        "running", exact=True
    ).wait_for()
    assert "running" in outer.locator("h3").first.inner_text()  # the program has not ended
    connection.sendall(b"go")
    page.get_by_role("log", name="conversation").get_by_text("The program has run.").wait_for()
    connection.close()
