"""The private APIs of dependencies harness relies on, each wrapped in one place.

watchfiles' RustNotify (``harness.reload.notifier``), the MCP SDK's
``ServerSession._connection`` (``harness.mcp.connection_of``), anyio's asyncio scope
records (``harness.tools.cancel_check``, a fast path with a public fallback), the SDK's
``StreamableHTTPSessionManager._admit_session`` and its transports' ``_event_store``
(``harness.mcp.http.resume``: one SSE event store per session), and Monty's refusal
of a ``del`` statement before anything runs (``harness.code.checker``'s guard). These tests
exercise them for real, so an upgrade that renames or reshapes one fails here, by name,
instead of hot reload or list_changed notices quietly stopping, or calls quietly slowing.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from mcp import Client
from mcp.server.connection import Connection

from harness import Context, ToolsService, define_tool
from harness.errors import HarnessError
from harness.mcp import McpSurface, connection_of
from harness.reload import notifier


def test_watchfiles_rust_notify_reports_an_edit_in_a_watched_folder(tmp_path: Path) -> None:
    watched = tmp_path / "watched"
    watched.mkdir()
    watcher = notifier([watched])  # watching from here on: the edit below is never missed
    try:
        (watched / "plugin.py").write_text("x = 1\n")
        stop = threading.Event()
        changes = watcher.watch(50, 10, 5000, stop)  # debounce_ms, step_ms, timeout_ms, stop
        assert isinstance(changes, set), changes
        assert {Path(path).name for _, path in changes} == {"plugin.py"}
        stop.set()
        assert watcher.watch(50, 10, 5000, stop) == "stop"
    finally:
        watcher.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the MCP SDK's client runs on asyncio


@pytest.mark.anyio
async def test_mcp_server_session_holds_its_connection() -> None:
    async with Context() as root:
        await root.plugin(ToolsService)
        root.tools.register(define_tool(name="ping", description="p", execute=lambda a: "pong"))
        surface = McpSurface(root)
        surface.attach()
        async with Client(surface.server, mode="legacy") as client:
            assert (await client.call_tool("ping", {})).structured_content == {"result": "pong"}
            [connection] = list(surface.connections)
            assert isinstance(connection, Connection)
            await connection.send_tool_list_changed()  # the call notifications go through


def test_connection_of_fails_loudly_when_the_sdk_changes() -> None:
    class Changed:
        connection: Any = None

    with pytest.raises(HarnessError, match="no longer holds its Connection as _connection"):
        connection_of(Changed())  # type: ignore[arg-type]


def test_each_http_session_gets_its_own_event_store() -> None:
    from mcp.server.lowlevel.server import Server

    from harness.mcp.http.resume import SessionEvents, resumable

    server: Server[Any] = Server("s")
    server.streamable_http_app(retry_interval=1000)
    manager = server.session_manager
    assert resumable(manager)
    first, second = manager._admit_session(None), manager._admit_session(None)
    assert first is not None
    assert second is not None
    assert isinstance(first._event_store, SessionEvents)
    assert isinstance(second._event_store, SessionEvents)
    assert first._event_store is not second._event_store
    assert first._retry_interval == 1000  # the public setting reaches the transport


ALLOWED_PRIVATE_IMPORTS = {
    "watchfiles._rust_notify.RustNotify",
    "anyio._backends._asyncio.CancelScope",
    "anyio._backends._asyncio._task_states",
}


def test_anyio_scope_records_still_feed_the_fast_cancel_check() -> None:
    from harness.tools import cancel_check

    assert cancel_check.FAST, (
        "anyio's asyncio backend changed: harness.tools.cancel_check fell back to "
        "anyio.current_effective_deadline() on every call; update caller_cancelled()"
    )


@pytest.mark.anyio
async def test_the_running_task_is_read_as_asyncio_reads_it(anyio_backend: str) -> None:
    """On Python 3.11 the running task is read from asyncio's own table (what its Python
    ``current_task`` does); the answer is ``current_task()``'s, in tasks of every kind."""
    import asyncio
    import sys

    from harness.tools import cancel_check

    if sys.version_info < (3, 12):
        assert cancel_check._TASKS is asyncio.tasks._current_tasks, "asyncio 3.11 changed"  # type: ignore[attr-defined]
    loop = asyncio.get_running_loop()
    seen: list[bool] = []

    async def child() -> None:
        await asyncio.sleep(0)
        seen.append(cancel_check._current_task(loop) is asyncio.current_task())

    assert cancel_check._current_task(loop) is asyncio.current_task()
    await asyncio.gather(child(), child())
    async with anyio.create_task_group() as group:
        group.start_soon(child)
    assert seen == [True, True, True]


@pytest.mark.anyio
async def test_the_fast_cancel_check_agrees_with_anyio(anyio_backend: str) -> None:
    from harness.tools.cancel_check import caller_cancelled
    from harness.tools.deadline import running_loop

    assert caller_cancelled(running_loop()) is False
    with anyio.CancelScope() as scope:
        scope.cancel()
        assert caller_cancelled(running_loop()) is True
        with anyio.CancelScope(shield=True):
            assert caller_cancelled(running_loop()) is False
            await anyio.lowlevel.checkpoint()  # shielded: goes on
        await anyio.lowlevel.checkpoint()  # cancelled here
    assert scope.cancelled_caught


def _is_private(dotted: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in dotted.split("."))


def test_no_other_private_import_of_a_dependency() -> None:
    import ast

    import harness

    found: set[str] = set()
    for path in Path(harness.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
    assert {dotted for dotted in found if _is_private(dotted)} == ALLOWED_PRIVATE_IMPORTS


def test_monty_type_checks_a_guarded_snippet_but_runs_none_of_it() -> None:
    """harness.code.checker feeds each program to a long-lived session with GUARD after it:
    Monty must check it all, refuse it before running any of it, and keep none of it for
    the checks of later snippets. Should Monty ever run ``del``, this fails by name."""
    import pydantic_monty as monty

    from harness.code.checker import REFUSED, guarded

    printed: list[str] = []
    with monty.Monty(min_processes=1, max_processes=1) as pool:
        session = pool.checkout(type_check=True, type_check_stubs="x: int\n")
        with session:
            for code in ('print("ran")\ny: int = 1', 'y: str = "a"\nprint(y)'):
                with pytest.raises(monty.MontyRuntimeError, match=REFUSED):
                    session.feed_run(
                        guarded(code)[0], print_callback=lambda s, t: printed.append(t)
                    )
            with pytest.raises(monty.MontyTypingError, match="not assignable to `int`"):
                session.feed_run(guarded('y: int = "a"')[0])
            with pytest.raises(monty.MontyTypingError, match="Name `y` used when not defined"):
                session.feed_run(guarded("y")[0])
    assert printed == []
