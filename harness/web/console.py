"""The web console's model: what the page reads and does, over a :class:`~harness.Host`.

:class:`WebConsole` turns the host's events into the console's live event log
(:class:`~harness.web.stream.EventHub`), answers the JSON API's questions (entries, problems,
tools) and performs its actions: running a tool through the full pipeline (and cancelling
it while it runs), and switching an entry with the same write-back as ``harness enable`` /
``harness disable``, after which the hot reload (or, without watching, an explicit reload)
shows the result. It lists the MCP surface's tasks and cancels them. The calls a
``run_code`` program makes for a caller without a session (a Run on the Tools page, a
script) go out live as ``code/call`` and ``code/result``; a session's are its own
``tool/call`` and ``tool/result`` events.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ..errors import HarnessError
from ..loader.writeback import set_enabled
from ..tools import jsonvalue
from ..tools.approval_requests import Approvals
from ..tools.call_context import CallContext
from ..tools.calls import ToolCall, ToolResult
from ..tools.formats import mcp as mcp_schema
from ..tools.kernel import cancelled
from .console_client import ConsoleClient
from .stream import EventHub

if TYPE_CHECKING:
    from ..host import Host

_log = logging.getLogger("harness.web")
CHANGE_DELAY = 0.05
"""Seconds fiber changes are gathered before one ``plugins/change`` goes out."""
HOST_EVENTS = ("reload/start", "reload/done", "reload/failed")


class CallRunning(HarnessError):
    """Raised when a call is started with the id of a call that is still running."""


class TaskView(Protocol):
    """What the console needs of the MCP surface's tasks (``harness.mcp.tasks.McpTasks``,
    which the web layer does not import)."""

    async def listing(self) -> list[dict[str, Any]]: ...
    async def cancel(self, task_id: str) -> str | None: ...


class WebConsole:
    """The console of one host: its live events, its JSON views and its actions."""

    def __init__(self, host: Host, hub: EventHub | None = None) -> None:
        self.host = host
        self.hub = hub or EventHub()
        self._dirty = False
        self._running: dict[str, anyio.CancelScope] = {}
        """The calls this console runs (``POST /api/tools/{name}/call``), by their id."""
        self._client: ConsoleClient | None = None
        self.tasks: TaskView | None = None
        """The MCP surface's tasks, which the Tasks view lists (``harness run`` sets it);
        None: no MCP surface, no tasks."""

    def _later(self, func: Any) -> None:
        if not self.root.is_disposed:
            self.root.start_soon(func)

    @property
    def client(self) -> ConsoleClient:
        """Who the calls this console runs reach: the pages, by the event stream."""
        if self._client is None:
            root = self.host.ctx
            self._client = ConsoleClient(self.hub, root.base_dir, self._later)
        return self._client

    @property
    def root(self) -> Any:
        """The host's root context."""
        return self.host.ctx

    def attach(self) -> None:
        """Listen to the host's events."""
        root = self.root
        root.on("tools/change", self._tools_changed)
        root.on("fiber/status", lambda fiber, previous: self._plugins_changed())
        for name in HOST_EVENTS:
            root.on(name, self._relay(name))
        root.on("agent/event", self._agent_event)
        root.on("approval/request", self._relay_approval("approval/request"))
        root.on("approval/decided", self._relay_approval("approval/decided"))
        root.on("code/call", self._inner_call)
        root.on("code/result", self._inner_result)

    @property
    def approvals(self) -> Approvals:
        """The host's approval object: the page's buttons answer its requests."""
        return self.host.tools.approvals

    # -- events ----------------------------------------------------------------------------

    async def events(self, last_event_id: str | None = None) -> AsyncIterator[bytes]:
        """One page's event stream (:meth:`~harness.web.stream.EventHub.stream`). While it
        is open a person sees the approval requests nobody else can answer: they wait for
        the page."""
        detach = self.approvals.attach()
        try:
            async for chunk in self.hub.stream(last_event_id):
                yield chunk
        finally:
            detach()

    def _relay(self, kind: str) -> Any:
        def relay(*args: Any) -> None:
            self.hub.publish(kind, _payload(kind, args))
            if kind.startswith("reload/") and kind != "reload/start":
                self._plugins_changed()

        return relay

    def _relay_approval(self, kind: str) -> Any:
        def relay(fields: dict[str, Any]) -> None:
            if fields.get("session") is None:  # a session's come as its agent/event
                self.hub.publish(kind, _jsonable(fields))

        return relay

    def _inner_call(self, call: ToolCall) -> None:
        if call.session is None:  # a session's calls are its own events
            fields = {"id": call.id, "name": call.name, "args": call.args, "parent": call.parent}
            self.hub.publish("code/call", _jsonable(fields))

    def _inner_result(self, call: ToolCall, result: ToolResult, duration_ms: float) -> None:
        if self._client is not None:
            self._client.shown.end(call.id)
        if call.session is None:
            fields = {"id": call.id, "parent": call.parent, "result": result.to_dict()}
            self.hub.publish("code/result", {**_jsonable(fields), "duration_ms": duration_ms})

    def _tools_changed(self, kind: str, name: str) -> None:
        self.hub.publish("tools/change", {"kind": kind, "name": name})
        self._plugins_changed()

    def _agent_event(self, *args: Any) -> None:
        session: Any = None
        event: Any = args[-1] if args else {}
        if len(args) >= 2:
            session = args[0]
        if not isinstance(event, dict):
            event = _jsonable(event)
        if not isinstance(event, dict):
            return
        session = event.get("session", session)
        kind = str(event.get("type", "agent/event"))
        self.hub.publish(kind, {**event, "session": session, "type": kind})

    def _plugins_changed(self) -> None:
        if not self._dirty and not self.root.is_disposed:
            self._dirty = True
            self.root.start_soon(self._announce_plugins)

    async def _announce_plugins(self) -> None:
        await anyio.sleep(CHANGE_DELAY)
        self._dirty = False
        self.hub.publish("plugins/change", {"plugins": self.plugins(), "problems": self.problems()})

    # -- views -----------------------------------------------------------------------------

    def plugins(self) -> list[dict[str, Any]]:
        """Every entry in config order: id, name, state, error, group, tools, problems."""
        by_entry: dict[str | None, list[dict[str, Any]]] = {}
        for problem in self.host.problems():
            by_entry.setdefault(problem.entry, []).append(problem.to_dict())
        return [
            {
                **status.to_dict(),
                "group": status.group,
                "tools": list(status.tools),
                "enabled": status.state != "disabled",
                "problems": by_entry.get(status.id, []),
            }
            for status in self.host.status()
        ]

    def problems(self) -> list[dict[str, Any]]:
        """What ``harness check`` would list."""
        return [problem.to_dict() for problem in self.host.problems()]

    def tools(self) -> list[dict[str, Any]]:
        """Every tool: name, description, parameter and output schemas, hints, owner."""
        registry = self.host.tools
        out = []
        for name in registry.list():
            definition = registry.get(name)
            if definition is None:
                continue
            schema = mcp_schema(definition)
            out.append(
                {
                    "name": name,
                    "description": definition.description,
                    "parameters": schema["inputSchema"],
                    "output": definition.output_schema,
                    "annotations": schema.get("annotations") or {},
                    "owner": registry.owner(name),
                }
            )
        return out

    async def search(self, query: str, limit: int) -> dict[str, Any]:
        """The tools that best match ``query``, best first, with their scores: the search
        of ``ctx.tools.search`` (no tool the policy denies). Raises ``TypeError`` or
        ``ValueError`` for a limit out of range."""
        hits = await self.host.tools.search(query, limit)
        return {"query": query, "tools": [hit.to_dict() for hit in hits]}

    def pending(self) -> list[dict[str, Any]]:
        """Every open approval request (the page answers any of them)."""
        return self.approvals.pending()

    def answer(
        self,
        request_id: str,
        decision: str,
        reason: str | None,
        content: dict[str, Any] | None = None,
    ) -> None:
        """Answer one open request: the same call as from the terminal or Python; ``content``
        fills in a tool's question."""
        self.approvals.answer(request_id, decision, reason, content)

    # -- actions ---------------------------------------------------------------------------

    async def call(
        self, name: str, args: Any, call_id: str, key: str | None = None
    ) -> dict[str, Any]:
        """Run one call through the full pipeline: ``ToolResult.to_dict()`` + ``duration_ms``.
        ``key`` is its idempotency key (with a store loaded, a repeat is answered from the
        call journal).

        While it runs, :meth:`cancel` with its id ends it ``cancelled``. Raises
        :class:`CallRunning` when a call with this id is running already.
        """
        if call_id in self._running:
            raise CallRunning(f"a call with id {call_id!r} is running already; use another id")
        call = ToolCall(call_id, name, args, key=key)
        CallContext(call, "console", self.client)
        started = time.perf_counter()
        result: ToolResult | None = None
        with anyio.CancelScope() as scope:
            self._running[call_id] = scope
            try:  # the pipeline turns the cancellation into the call's `cancelled` result
                result = await self.host.tools.execute(call)
            finally:
                del self._running[call_id]
                self.client.shown.end(call_id)
        if result is None:  # cancelled after the pipeline had answered, before we got it
            result = cancelled(call)
        return {**result.to_dict(), "duration_ms": round((time.perf_counter() - started) * 1000, 3)}

    def cancel(self, call_id: str) -> bool:
        """Cancel the running call ``call_id`` (its result: ``cancelled``); False when no call
        this console runs has that id (it has finished, or never started here)."""
        scope = self._running.get(call_id)
        if scope is None:
            return False
        scope.cancel()
        return True

    async def task_list(self) -> list[dict[str, Any]]:
        """The MCP tasks, newest first (:meth:`~harness.mcp.tasks.McpTasks.listing`; with
        ``harness:store``, every replica's)."""
        return [] if self.tasks is None else await self.tasks.listing()

    async def cancel_task(self, task_id: str) -> str | None:
        """Cancel an MCP task; its status after, None when there is no such task."""
        return None if self.tasks is None else await self.tasks.cancel(task_id)

    async def set_enabled(self, entry_id: str, enabled: bool) -> dict[str, Any]:
        """Switch an entry in the config file; reload at once when nothing watches it."""
        path = self.host.config_path
        changed = await anyio.to_thread.run_sync(set_enabled, path, entry_id, enabled)
        if changed and not self.host.watch:
            await self.host.reload()
        return {"id": entry_id, "enabled": enabled, "changed": changed, "file": str(path)}


def _payload(kind: str, args: tuple[Any, ...]) -> dict[str, Any]:
    if kind == "reload/start":
        files = args[0] if args else []
        return {"files": [str(path) for path in files]}
    if len(args) == 1:
        value = _jsonable(args[0])
        if hasattr(args[0], "ok") and isinstance(value, dict):
            value["ok"] = bool(args[0].ok)
        return value if isinstance(value, dict) else {"value": value}
    return {"args": [_jsonable(arg) for arg in args]}


def _jsonable(value: Any) -> Any:
    """Plain JSON for the events' objects (dataclasses, paths, problems)."""
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    elif is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(item) for item in value]
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return jsonvalue.printable(value)  # an int too long to write says so
    return str(value)
