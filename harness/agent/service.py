"""``harness:agent``: the ``agent`` service (sessions and their turns) and the ``approval`` broker.

It injects ``llm`` (a provider plugin such as ``harness:openai``) and ``tools``; without an
``llm`` the entry stays pending, naming it. The registry is read afresh for each step, so a
tool hot-reloaded between two steps is live in the next one.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import time
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import anyio
import pydantic

from ..service import Service, unwrap
from ..store.config import StoreConfig
from ..store.service import open_store
from ..store.session_records import SessionRecords
from ..tools.approval_requests import TIMEOUT, Approvals
from ..tools.calls import ToolCall, ToolResult
from ..tools.finding import SEARCH_TOOL
from ..tools.render import default_text
from .always import allow_tool
from .client import project_root
from .deferral import RequestTools, request_tools
from .log import SessionNotFound, SessionStore, check_id, dumps, log_chunks, new_id
from .resume import open_turn
from .session import Session
from .session_list import Catalog, any_spoken, check_query, check_title, summary
from .stored_sessions import StoredSessions, is_store_url
from .trajectory import trajectory

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator, Sequence
    from pathlib import Path

    from ..context import Context
    from ..llm.base import LLM

_log = logging.getLogger("harness.agent")

TOOL_RULES = """\
How to use tools:
- Call a tool only when the request needs what it does; otherwise answer directly.
- Pick the tool whose description fits; follow what descriptions say about limits and \
which tool to use instead.
- Results arrive as JSON. When a call fails, read its error and code, then fix the arguments \
or tell the user; do not repeat a denied call unchanged.
- Never invent tool results, file contents or command output."""

CODE_RULES = """\
How to use run_code:
- When a task needs several tool calls, write one short Python program and run it with \
run_code: the tools are async functions in it (their stubs are in run_code's description).
- Loop, filter and combine inside the program; use asyncio.gather for calls that can run \
at once. Print or return only what you need to answer: the rest never reaches you.
- A failed call raises an exception whose text begins with its code (denied, timeout, ...); \
catch it where the rest of the program can go on, and never retry a denied call.
- The sandbox has no files, network or environment beyond the tools; keep programs small."""

RUN_CODE = "run_code"
SWEEP = 2.0
"""Seconds between looks for turns a dead process left (sessions in a store)."""


class AgentConfig(pydantic.BaseModel):
    """Config of a ``harness:agent`` entry."""

    model_config = pydantic.ConfigDict(extra="forbid")

    system: str = "You are a careful assistant. Use the tools you are given when they help."
    """The system prompt; harness appends its short tool-use rules."""
    max_steps: int = pydantic.Field(25, ge=1, le=1000)
    """Model requests per turn before the wrap-up request."""
    sessions: str | None = "./.harness/sessions"
    """The folder of the session logs (relative to cordis.yml), or a store's URL
    (``sqlite:///PATH``, the path relative to cordis.yml, or ``postgresql://...``); null
    keeps them in memory."""
    tools: list[str] = ["*"]
    """Globs over registry names: the tools the model sees and may call."""
    approval_timeout: float = pydantic.Field(300.0, gt=0)
    """Seconds an approval request waits before it is denied."""
    policy: str = "policy"
    """The id of the policy entry whose rules ``allow_always`` extends."""
    config_file: str | None = None
    """The cordis.yml ``allow_always`` edits (default: the host's config file)."""
    code_mode: bool = False
    """Offer the model only ``run_code`` (``harness:code``) and the tools in ``direct``."""
    direct: list[str] = []
    """In code mode, globs over the tools the model may still call directly."""
    roots: list[str] = ["."]
    """Folders (relative to cordis.yml) a tool's ``ctx.roots()`` gets as ``file://`` roots."""


class AgentService(Service):
    """Sessions of a model using the registry's tools, provided as ``ctx.agent``."""

    name = "agent"
    provides = ("agent", "approval")
    inject: ClassVar[dict[str, dict[str, bool]]] = {
        "llm": {},
        "tools": {},
        "host": {"required": False},  # for the config file allow_always edits
    }
    Config = AgentConfig

    def __init__(self, ctx: Context, config: AgentConfig) -> None:
        super().__init__(ctx, "agent")
        self.config = config
        base = ctx.base_dir
        self.store: SessionStore | StoredSessions = SessionStore(
            None
            if config.sessions is None or is_store_url(config.sessions)
            else base / config.sessions
        )
        """Where the sessions are: a folder, memory, or (once started) a store."""
        self.catalog = Catalog(self.store)
        host = ctx.get("host")
        default = host.config_path if host is not None else os.environ.get("HARNESS_CONFIG")
        config_file = base / (config.config_file or default or "cordis.yml")
        # The one approval object is the tools service's; the agent provides it as the
        # ``approval`` service and sets its timeout and the allow_always writer while loaded.
        self.approvals: Approvals = unwrap(ctx.tools).approvals
        self.approvals.timeout = config.approval_timeout
        self.save_always_to(config_file.absolute())
        ctx.provide("approval", self.approvals)
        rules = f"{TOOL_RULES}\n\n{CODE_RULES}" if config.code_mode else TOOL_RULES
        self.system_prompt = f"{config.system.strip()}\n\n{rules}".strip()
        self.roots = [project_root(base / folder) for folder in config.roots]
        """What a tool's ``ctx.roots()`` gets in this agent's sessions."""
        for folder in config.roots:
            if not (base / folder).is_dir():
                _log.warning(
                    "the agent's roots name %s, which is not a folder (relative to %s)",
                    folder,
                    base,
                )
        self.running: dict[int, Any] = {}
        """The calls of running steps, by ``id()`` of their ToolCall."""
        self._open: dict[str, Session] = {}
        self._visible: dict[str, dict[str, Any]] | None = None
        ctx.on("tools/execute", self._around)
        ctx.on("tools/result", self._on_result)
        ctx.on("tools/change", self._on_change)
        ctx.on("code/call", self._on_inner_call)
        ctx.on("code/result", self._on_inner_result)
        ctx.on("approval/request", partial(self._on_approval, "approval/request"))
        ctx.on("approval/decided", partial(self._on_approval, "approval/decided"))

    def save_always_to(self, config_file: Path) -> None:
        """Write ``allow_always`` decisions into the policy entry of ``config_file``."""
        self.approvals.always = partial(allow_tool, config_file, self.config.policy)

    async def start(self) -> None:
        """Open the store when ``sessions`` names one; once the host is ready, finish the
        turns that dead processes left, and keep looking for them (another replica's)."""
        url = self.config.sessions
        if url is None or not is_store_url(url):
            return
        config = StoreConfig(url=url)
        records = SessionRecords(await open_store(config, self.ctx.base_dir))
        self.store = StoredSessions(records)
        self.ctx.start_soon(records.write)
        self.ctx.on("ready", lambda: self.ctx.start_soon(self._sweep, records))

    async def _sweep(self, records: SessionRecords) -> None:
        while True:
            try:
                await self._adopt(records)
            except Exception:
                _log.exception("the store could not look for turns left by a dead process")
            await anyio.sleep(SWEEP)

    async def _adopt(self, records: SessionRecords) -> None:
        """Open the sessions whose turn a dead process left: each resumes it, if it is the
        one to adopt it."""
        for session_id in await records.orphaned():
            session = self._open.get(session_id)
            if session is None:
                await self.open(session_id)
            elif not session.busy:  # open here while another process ran its turn
                await self.open(session_id)  # caught up with what that process recorded
                session.resume(partial(records.adopt, session_id))

    async def stop(self) -> None:
        for session in self._open.values():
            self.approvals.forget(session.id)
            session.close()
        self._open.clear()
        self.approvals.timeout = TIMEOUT
        self.approvals.always = None
        if isinstance(self.store, StoredSessions):
            records = self.store.records
            with anyio.move_on_after(5):
                await records.flush()
            await records.database.close()

    @property
    def max_steps(self) -> int:
        return self.config.max_steps

    @property
    def llm(self) -> LLM:
        """The injected model."""
        model: LLM = self.ctx.llm
        return model

    # -- sessions --------------------------------------------------------------------------

    def session(self, session_id: str | None = None) -> Session:
        """A new session, or the session ``session_id`` resumed from its log.

        With sessions in a database this blocks its caller for one query; the event loop's
        own readers (the web console) use :meth:`open`.
        """
        if session_id is None:
            session_id = new_id()
            while self.store.exists(session_id):
                session_id = new_id()
            return self._opened(session_id, [], 0)
        check_id(session_id)
        if session_id in self._open:
            return self._open[session_id]
        events, size = self.store.load(session_id)
        return self._opened(session_id, events, size)

    async def open(self, session_id: str | None = None) -> Session:
        """:meth:`session`, reading a store off the event loop (PostgreSQL in a worker
        thread); a session open here that runs no turn first takes the events another
        replica appended to it meanwhile, so every replica shows the whole session."""
        store = self.store
        if not isinstance(store, StoredSessions):
            return self.session(session_id)
        if session_id is None:
            session_id = new_id()
            while await store.has(session_id):
                session_id = new_id()
            return self._opened(session_id, [], 0)
        check_id(session_id)
        session = self._open.get(session_id)
        if session is None:
            events = await store.fetch(session_id)
            return self._open.get(session_id) or self._opened(session_id, events, 0)
        if not session.busy:
            session.catch_up(await store.fetch_after(session_id, session.seq))
        return session

    def _opened(self, session_id: str, events: list[dict[str, Any]], size: int) -> Session:
        writer = self.store.writer(session_id, size)
        if isinstance(self.store, StoredSessions) and open_turn(events) is not None:
            # cut off, or run by another replica now: the store says which
            session = Session(self, session_id, events, writer, repair=False)
            session.resume(partial(self.store.records.adopt, session_id))
        else:
            session = Session(self, session_id, events, writer)
        self._open[session_id] = session
        return session

    def sessions(self, q: str | None = None) -> list[dict[str, Any]]:
        """``{id, title, created, updated, turns}`` of every session, the latest first.

        ``q`` keeps the sessions whose messages contain it (case-insensitive).
        """
        needle = None if q is None else check_query(q).casefold()
        if isinstance(self.store, StoredSessions):
            return self._with_open(self.store.summaries(needle), needle)
        listed = []
        if self.store.folder is not None:
            for item in self.catalog.summaries():
                if needle is None or self.catalog.matches(item["id"], needle):
                    listed.append(item)
        for session_id, session in self._open.items():
            unsaved = self.store.folder is None or not self.store.exists(session_id)
            if unsaved and (needle is None or any_spoken(session.events, needle)):
                listed.append(summary(session_id, session.events))
        if self.store.folder is None:
            known = {item["id"] for item in listed}
            for session_id in self.store.ids():
                events = self.store.load(session_id)[0]
                if session_id not in known and (needle is None or any_spoken(events, needle)):
                    listed.append(summary(session_id, events))
        listed.sort(key=lambda item: item["updated"] or "", reverse=True)
        return listed

    async def listed(self, q: str | None = None) -> list[dict[str, Any]]:
        """:meth:`sessions`, reading a store off the event loop."""
        if not isinstance(self.store, StoredSessions):
            return self.sessions(q)
        needle = None if q is None else check_query(q).casefold()
        return self._with_open(await self.store.fetch_summaries(needle), needle)

    def _with_open(self, listed: list[dict[str, Any]], needle: str | None) -> list[dict[str, Any]]:
        """The store's summaries and those of sessions open here with nothing stored yet,
        the latest first."""
        known = {item["id"] for item in listed}
        for session_id, session in self._open.items():
            if session_id not in known and (needle is None or any_spoken(session.events, needle)):
                listed.append(summary(session_id, session.events))
        listed.sort(key=lambda item: item["updated"] or "", reverse=True)
        return listed

    async def has(self, session_id: str) -> bool:
        """:meth:`exists`, reading a store off the event loop."""
        if not isinstance(self.store, StoredSessions):
            return self.exists(session_id)
        try:
            check_id(session_id)
        except SessionNotFound:
            return False
        return session_id in self._open or await self.store.has(session_id)

    def exists(self, session_id: str) -> bool:
        """Whether ``session_id`` names a session (open, or logged)."""
        try:
            check_id(session_id)
        except SessionNotFound:
            return False
        return session_id in self._open or self.store.exists(session_id)

    def rename(self, session_id: str, title: str) -> dict[str, Any]:
        """Give a session a title (a ``session/title`` event in its log); its summary."""
        title = check_title(title)
        session = self.session(session_id)
        session.record("session/title", title=title)
        return summary(session_id, session.events)

    def trajectory(self, session_id: str) -> list[dict[str, Any]]:
        """Each turn's steps, model time, tokens and tool calls (:mod:`.trajectory`)."""
        return trajectory(self._events(session_id))

    def export(self, session_id: str) -> Iterator[bytes]:
        """The session's log as JSONL, in chunks (every complete line)."""
        if isinstance(self.store, StoredSessions):
            if session_id in self._open:
                return iter([(dumps(e) + "\n").encode() for e in self._open[session_id].events])
            return self.store.export(session_id)
        if session_id in self._open and self.store.folder is None:
            return iter([(dumps(e) + "\n").encode() for e in self._open[session_id].events])
        if self.store.folder is None:
            return iter([(dumps(e) + "\n").encode() for e in self.store.load(session_id)[0]])
        if not self.store.exists(session_id):
            if session_id in self._open:
                return iter([(dumps(e) + "\n").encode() for e in self._open[session_id].events])
            raise SessionNotFound(f"no session {session_id!r} in {self.store.folder}")
        return log_chunks(self.store.path(session_id))

    def _events(self, session_id: str) -> list[dict[str, Any]]:
        if check_id(session_id) in self._open:
            return list(self._open[session_id].events)
        return self.store.load(session_id)[0]

    def delete(self, session_id: str) -> None:
        """Delete a session and its log (a running turn is cancelled first)."""
        session = self._open.pop(check_id(session_id), None)
        if session is not None:
            self.approvals.forget(session.id)
            session.close()
            if not self.store.exists(session_id):
                return
        self.store.delete(session_id)

    # -- tools -----------------------------------------------------------------------------

    def visible_tools(self) -> dict[str, dict[str, Any]]:
        """The tools the model may see and call, name → schema in the model's format.

        The format is the provider's ``schema_format`` (``openai`` when it names none); the
        registry lists schemas in the order of its names, so they pair up by position.
        """
        if self._visible is None:
            tools = self.ctx.tools
            config = self.config
            format = getattr(self.llm, "schema_format", "openai")

            def shown(name: str) -> bool:
                if not any(fnmatch.fnmatchcase(name, pattern) for pattern in config.tools):
                    return False
                return (
                    not config.code_mode
                    or name == RUN_CODE
                    or any(fnmatch.fnmatchcase(name, pattern) for pattern in config.direct)
                )

            self._visible = {
                name: schema
                for name, schema in zip(tools.list(), tools.schemas(format), strict=True)
                if shown(name)
            }
            if config.code_mode and RUN_CODE not in self._visible:
                _log.warning(
                    "code_mode is on, but there is no run_code tool (add a harness:code "
                    "entry); the model sees only the direct tools"
                )
        return self._visible

    def request_tools(self, loaded: Sequence[str]) -> RequestTools:
        """The tools one model request carries (:mod:`.deferral`): every visible tool, or
        with deferral the kept and ``loaded`` ones and the means to find the rest."""
        service = unwrap(self.ctx.tools)
        native = bool(getattr(self.llm, "native_search", False))
        return request_tools(
            self.visible_tools(), service.config.search, loaded, native, service.finder.is_visible
        )

    def _on_change(self, *args: Any) -> None:
        self._visible = None

    async def _around(self, call: ToolCall, next: Callable[[], Awaitable[ToolResult]]) -> Any:
        run = self.running.get(id(call))
        if run is None:
            return await next()
        if run.cancelled:
            return ToolResult.failure(call, "cancelled", f"Tool {call.name} was cancelled")
        run.started = time.perf_counter()
        result = None
        with anyio.CancelScope() as scope:
            run.scope = scope
            result = await next()
        run.ended = time.perf_counter()
        run.scope = None
        if result is None or scope.cancelled_caught:
            return ToolResult.failure(call, "cancelled", f"Tool {call.name} was cancelled")
        if call.name == SEARCH_TOOL and result.ok and isinstance(result.result, dict):
            return await self._scoped(call, result)
        return result

    async def _scoped(self, call: ToolCall, result: ToolResult) -> ToolResult:
        """A ``search_tools`` result as this agent may see it: the same search among the
        tools it may call only (its ``tools`` globs, and in code mode its ``direct`` ones),
        so the others never reach the model and ``limit`` still counts."""
        visible = [name for name in self.visible_tools() if name != SEARCH_TOOL]
        args = call.args if isinstance(call.args, dict) else {}
        try:  # the arguments passed validation: the search that ran takes them again
            hits = await self.ctx.tools.search(
                args.get("query", ""), args.get("limit", 10), tools=visible
            )
        except (TypeError, ValueError):
            return result
        value = {"tools": [hit.to_dict() for hit in hits]}
        if value == result.result:
            return result
        text = default_text(value)
        return ToolResult(result.id, result.name, value, [{"type": "text", "text": text}])

    def _on_result(self, call: ToolCall, result: ToolResult) -> None:
        run = self.running.get(id(call))
        if run is not None:
            run.result = result
            if not run.ended and run.started:
                run.ended = time.perf_counter()

    def _on_inner_call(self, call: ToolCall) -> None:
        """A call a ``run_code`` program makes: a nested card in the session running it."""
        session = self._open.get(call.session) if call.session is not None else None
        if session is not None:
            session.record(
                "tool/call", id=call.id, name=call.name, args=call.args, parent=call.parent
            )

    def _on_inner_result(self, call: ToolCall, result: ToolResult, duration_ms: float) -> None:
        session = self._open.get(call.session) if call.session is not None else None
        if session is not None:
            session.record(
                "tool/result",
                id=call.id,
                result=result.to_dict(),
                duration_ms=round(duration_ms, 3),
                parent=call.parent,
            )

    def _on_approval(self, kind: str, fields: dict[str, Any]) -> None:
        """An approval request or decision of a session's call: one of its events."""
        session = self._open.get(fields.get("session") or "")
        if session is not None:
            session.record(kind, **{k: v for k, v in fields.items() if k != "session"})
