"""One approval object behind every surface: one id space, one answer call, no context variable.

A host serves MCP and the console over real HTTP on 127.0.0.1 in this process, so the same
requests can be seen and answered from the console's API, from an MCP client and from
Python, and compared.
"""

from __future__ import annotations

import ast
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client

from harness import Host, ToolCall, ToolResult
from harness.mcp import McpSurface
from harness.web.app import console_app
from harness.web.console import WebConsole

from ..helpers import serving_http
from .page import Page

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "plugins"
TOKEN_ID = re.compile(r"[A-Za-z0-9_-]{22,}")
"""``secrets.token_urlsafe(16)``: 22 characters of the URL-safe alphabet."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn


class Served:
    def __init__(self, host: Host, base: str, events: list[tuple[str, dict[str, Any]]]) -> None:
        self.host = host
        self.base = base
        self.events = events
        self.arrived = anyio.Event()
        """Set (and replaced) at each approval event."""

    def heard(self, kind: str, fields: dict[str, Any]) -> None:
        self.events.append((kind, fields))
        self.arrived.set()
        self.arrived = anyio.Event()

    async def until(self, condition: Any) -> None:
        """Wait (bounded) for approval events until ``condition()`` holds."""
        with anyio.fail_after(20):
            while not condition():
                await self.arrived.wait()

    @property
    def approvals(self) -> Any:
        return self.host.tools.approvals


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    config = tmp_path / "cordis.yml"
    config.write_text(
        "insert:\n"
        f"  - id: echo\n    name: {PLUGINS / 'echo.py'}\n"
        f"  - id: policy\n    name: {PLUGINS / 'policy.py'}\n"
        "    config: {rules: {echo: ask}}\n"
    )
    async with Host(config) as host:
        events: list[tuple[str, dict[str, Any]]] = []
        served = Served(host, "", events)
        for kind in ("approval/request", "approval/decided"):
            host.ctx.on(kind, lambda fields, kind=kind: served.heard(kind, fields))
        console = WebConsole(host)
        console.attach()
        surface = McpSurface(host.ctx)
        surface.attach()

        def wrap(app: Any) -> Any:
            return console_app(console, app, "127.0.0.1", None)

        async with serving_http(surface, wrap) as url:
            served.base = url.removesuffix("/mcp").rstrip("/") + "/"
            async with Page(served.base):  # a console page is open: requests wait for it
                yield served


async def test_every_surface_asks_in_one_id_space_of_unguessable_ids(served: Served) -> None:
    results: dict[str, Any] = {}
    async with httpx2.AsyncClient(base_url=served.base, timeout=30) as http:

        async def from_console() -> None:
            answer = await http.post("api/tools/echo/call", json={"args": {"text": "console"}})
            results["console"] = answer.json()

        async def from_mcp() -> None:  # a client without elicitation: the console answers
            async with Client(served.base + "mcp") as client:
                results["mcp"] = await client.call_tool("echo", {"text": "mcp"})

        async def from_python() -> None:
            call = ToolCall("py-1", "echo", {"text": "python"})
            results["python"] = await served.host.tools.execute(call)

        async with anyio.create_task_group() as group:
            for start in (from_console, from_mcp, from_python):
                group.start_soon(start)
            await served.until(lambda: len(served.approvals.pending()) == 3)
            listed = (await http.get("api/approvals")).json()
            assert listed == served.approvals.pending()  # the console lists the same object
            ids = [item["id"] for item in listed]
            assert len(set(ids)) == 3
            assert all(TOKEN_ID.fullmatch(item) for item in ids), ids
            assert not any(re.fullmatch(r"\D*\d+", item) for item in ids)  # no counters
            by_text = {item["args"]["text"]: item["id"] for item in listed}
            # each surface's request is answered from another surface, by its id
            served.approvals.answer(by_text["console"], "allow_once")  # Python answers it
            for text in ("mcp", "python"):
                reply = await http.post(
                    f"api/approvals/{by_text[text]}", json={"decision": "allow_once"}
                )
                assert reply.status_code == 200, reply.text
    assert results["console"]["ok"] is True
    assert results["console"]["result"] == {"text": "Echo: console"}
    assert results["mcp"].is_error is False
    assert results["python"].ok
    assert served.approvals.pending() == []
    decided = [fields["id"] for kind, fields in served.events if kind == "approval/decided"]
    assert sorted(decided) == sorted(ids)


async def test_an_answer_from_python_is_the_answer_from_the_console(served: Served) -> None:
    results: dict[str, ToolResult] = {}

    async def ask(name: str) -> None:
        results[name] = await served.host.tools.execute(ToolCall(name, "echo", {"text": "x"}))

    async with httpx2.AsyncClient(base_url=served.base, timeout=30) as http:
        async with anyio.create_task_group() as group:
            group.start_soon(ask, "by-python")
            group.start_soon(ask, "by-console")
            await served.until(lambda: len(served.approvals.pending()) == 2)
            ids = {item["call_id"]: item["id"] for item in served.approvals.pending()}
            served.approvals.answer(ids["by-python"], "deny", "not this one")
            reply = await http.post(
                f"api/approvals/{ids['by-console']}",
                json={"decision": "deny", "reason": "not this one"},
            )
            assert reply.status_code == 200, reply.text
        unknown = await http.post(f"api/approvals/{ids['by-console']}", json={"decision": "deny"})
        assert unknown.status_code == 404  # answered: the id is spent, in both places
    with pytest.raises(Exception, match="no open approval request"):
        served.approvals.answer(ids["by-python"], "deny")
    python, console = results["by-python"], results["by-console"]
    assert python.code == console.code == "denied"
    assert (
        python.error
        == console.error
        == (
            "Tool denied: the policy asks before echo runs (rule 'echo') "
            "(denied by the user: not this one)"
        )
    )
    decided = {
        fields["call_id"]: {k: v for k, v in fields.items() if k not in ("id", "call_id")}
        for kind, fields in served.events
        if kind == "approval/decided"
    }
    assert decided["by-python"] == decided["by-console"]


async def test_a_session_travels_on_the_call_not_in_a_context_variable(served: Served) -> None:
    """A call carrying a session is that session's, whichever task makes it; its
    ``allow_session`` covers that session only."""
    approvals = served.approvals
    results: list[ToolResult] = []

    async def run(session: str | None, call_id: str) -> None:
        call = ToolCall(call_id, "echo", {"text": call_id}, session=session)
        results.append(await served.host.tools.execute(call))

    async with anyio.create_task_group() as group:  # a task of nobody's session
        group.start_soon(run, "s-1", "first")
        await served.until(lambda: len(approvals.pending()) == 1)
        (request,) = approvals.pending()
        assert request["session"] == "s-1"
        approvals.answer(request["id"], "allow_session")
    async with anyio.create_task_group() as group:
        group.start_soon(run, "s-1", "again")  # remembered for s-1
    assert [r.ok for r in results] == [True, True]
    async with anyio.create_task_group() as group:
        group.start_soon(run, "s-2", "other")  # another session asks again
        await served.until(lambda: len(approvals.pending()) == 1)
        (request,) = approvals.pending()
        assert request["session"] == "s-2"
        approvals.answer(request["id"], "deny")
    assert results[-1].code == "denied"


def test_no_context_variable_in_the_approval_path() -> None:
    """The modules of the approval path and of the call kernel import no ``contextvars``."""
    modules = [
        "harness/tools/approval_contract.py",
        "harness/tools/approval_requests.py",
        "harness/tools/kernel.py",
        "harness/tools/service.py",
        "harness/agent/service.py",
        "harness/agent/session.py",
        "harness/web/console.py",
        "harness/mcp/client.py",
        "harness/mcp/rounds.py",
        "harness/mcp/surface.py",
        "harness/cli/call.py",
        "harness/cli/chat.py",
    ]
    for module in modules:
        tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert "contextvars" not in names, module
            if isinstance(node, ast.Name | ast.Attribute):
                assert getattr(node, "id", getattr(node, "attr", "")) != "ContextVar", module
