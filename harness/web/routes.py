"""The console's HTTP API and page, as a Starlette app (JSON in, JSON out).

========================================  =============================================
``GET /``                                 the page (``/static/...``: its files)
``GET /api/plugins``                      the entries (id, name, state, error, group, ...)
``POST /api/plugins/{id}/enable|disable``  switch an entry in ``cordis.yml``
``GET /api/problems``                     ``{"ok", "problems"}`` as ``harness check --json``
``GET /api/tools``                        the tools with their schemas
``GET /api/tools/search?q=&limit=``       ``{"query", "tools": [{name, description, score}]}``
``POST /api/tools/{name}/call``           ``{"args": {...}, "id"?}`` → ``ToolResult.to_dict()``
                                          (``Idempotency-Key``: journaled, docs/store.md)
``POST /api/calls/{id}/cancel``           cancel that running call (its result: ``cancelled``)
``GET /api/approvals``                    the open approval requests
``POST /api/approvals/{id}``              ``{"decision", "reason"?, "content"?}`` (``content``:
                                          a tool's question's form, filled in)
``GET /api/tasks``                        the MCP tasks, newest first (id, tool, status,
                                          statusMessage, createdAt, lastUpdatedAt)
``POST /api/tasks/{id}/cancel``           cancel that task → ``{"id", "status"}``
``GET /api/events``                       Server-Sent Events (``Last-Event-ID`` resumes)
``/api/sessions...``                      the chat sessions (:mod:`harness.web.sessions`)
========================================  =============================================

Errors are ``{"error": message}`` with a 4xx status; a tool call that fails is still a 200
carrying its result (its ``code`` says why), as every surface of harness reports it.
"""

from __future__ import annotations

import json
import re
import secrets
from importlib.resources import files
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..errors import ConfigError, HarnessError
from ..loader.writeback import UnknownEntry
from ..tools.approval_requests import DECISIONS, ApprovalError
from .console import CallRunning, WebConsole
from .sessions import session_routes

STATIC = files("harness.web") / "static"
ID_PUNCTUATION = "- _ . : ~"
MAX_QUERY = 500
"""The longest search text the Tools page's search takes."""
MAX_HITS = 50
ID = re.compile(r"[A-Za-z0-9_.:~-]{1,200}")
"""A call id the client chooses: it goes into ``/api/calls/{id}/cancel`` as it is."""
KEY = re.compile(r"[!-~]{1,200}")
"""An ``Idempotency-Key``: the call's key in the journal, shared with MCP's (docs/store.md)."""


class BadRequest(Exception):
    """Raised by a handler for a request it cannot serve; becomes ``{"error"}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def fail(status: int, message: str) -> JSONResponse:
    """A JSON error response."""
    return JSONResponse({"error": message}, status_code=status)


async def read_json(request: Request) -> dict[str, Any]:
    """The request's body as a JSON object (an empty body reads as ``{}``)."""
    body = await request.body()
    if not body.strip():
        return {}
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(400, f"the request body is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadRequest(400, f"the request body must be a JSON object, not {type(value).__name__}")
    return value


def build_app(console: WebConsole) -> Starlette:
    """The console's routes (unsecured: :class:`~harness.web.security.WebGate` wraps them)."""

    async def index(request: Request) -> Response:
        return FileResponse(str(STATIC / "index.html"), headers={"cache-control": "no-cache"})

    async def plugins(request: Request) -> Response:
        return JSONResponse(console.plugins())

    async def switch(request: Request) -> Response:
        await read_json(request)
        entry_id = request.path_params["id"]
        action = request.path_params["action"]
        if action not in ("enable", "disable"):
            return fail(404, f"no such API route: POST {request.url.path}")
        on = action == "enable"
        try:
            return JSONResponse(await console.set_enabled(entry_id, on))
        except UnknownEntry as exc:
            return fail(404, str(exc))
        except ConfigError as exc:
            return fail(409, str(exc))

    async def problems(request: Request) -> Response:
        found = console.problems()
        return JSONResponse({"ok": not found, "problems": found})

    async def tools(request: Request) -> Response:
        return JSONResponse(console.tools())

    async def search(request: Request) -> Response:
        query = request.query_params.get("q", "").strip()
        if not query:
            raise BadRequest(400, "give the words to search for: GET /api/tools/search?q=words")
        if len(query) > MAX_QUERY:
            raise BadRequest(400, f"the search text is longer than {MAX_QUERY} characters")
        raw = request.query_params.get("limit", "10")
        limit = int(raw) if raw.strip().isdigit() else 0
        if not 1 <= limit <= MAX_HITS:
            raise BadRequest(400, f"limit must be a whole number from 1 to {MAX_HITS}, got {raw!r}")
        return JSONResponse(await console.search(query, limit))

    async def call(request: Request) -> Response:
        body = await read_json(request)
        unknown = sorted(set(body) - {"args", "id"})
        if unknown:
            raise BadRequest(
                400, f'unknown field(s) {", ".join(unknown)}: send {{"args": {{...}}}}'
            )
        args = body.get("args", {})
        call_id = body.get("id") or f"web-{secrets.token_hex(6)}"
        if not isinstance(call_id, str) or not ID.fullmatch(call_id):
            raise BadRequest(400, f"id must be 1 to 200 letters, digits or {ID_PUNCTUATION}")
        key = request.headers.get("idempotency-key")
        if key is not None and not KEY.fullmatch(key):
            raise BadRequest(400, "Idempotency-Key must be 1 to 200 printable ASCII characters")
        try:
            result = await console.call(request.path_params["name"], args, call_id, key)
        except CallRunning as exc:
            return fail(409, str(exc))
        return JSONResponse(result)

    async def cancel(request: Request) -> Response:
        await read_json(request)
        call_id = request.path_params["id"]
        if not console.cancel(call_id):
            return fail(
                404,
                f"no running call has id {call_id!r}: it has finished, or was not started "
                "with POST /api/tools/{name}/call",
            )
        return JSONResponse({"id": call_id, "cancelled": True})

    async def approvals(request: Request) -> Response:
        return JSONResponse(console.pending())

    async def answer(request: Request) -> Response:
        body = await read_json(request)
        decision = body.get("decision")
        reason = body.get("reason")
        if decision not in DECISIONS:
            raise BadRequest(400, f"decision must be one of {', '.join(DECISIONS)}")
        if reason is not None and not isinstance(reason, str):
            raise BadRequest(400, "reason must be a string")
        content = body.get("content")
        if content is not None and not isinstance(content, dict):
            raise BadRequest(400, "content must be an object: the question's form, filled in")
        try:
            console.answer(request.path_params["id"], decision, reason, content)
        except ApprovalError as exc:
            return fail(404 if "no open approval" in str(exc) else 400, str(exc))
        except HarnessError as exc:  # the policy file's (allow_always)
            return fail(409, str(exc))
        return JSONResponse({"id": request.path_params["id"], "decision": decision})

    async def tasks(request: Request) -> Response:
        return JSONResponse(await console.task_list())

    async def cancel_task(request: Request) -> Response:
        await read_json(request)
        task_id = request.path_params["id"]
        status = await console.cancel_task(task_id)
        if status is None:
            return fail(
                404,
                f"no task has id {task_id!r}: it has expired (a task is kept for its ttlMs), "
                "or was never started here; GET /api/tasks lists them",
            )
        return JSONResponse({"id": task_id, "status": status})

    async def events(request: Request) -> Response:
        last = request.headers.get("last-event-id") or request.query_params.get("last_event_id")
        return StreamingResponse(
            console.events(last),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    async def not_found(request: Request) -> Response:
        return fail(404, f"no such API route: {request.method} {request.url.path}")

    routes = [
        Route("/", index),
        Route("/api/plugins", plugins),
        Route("/api/plugins/{id}/{action:str}", switch, methods=["POST"]),
        Route("/api/problems", problems),
        Route("/api/tools", tools),
        Route("/api/tools/search", search),
        Route("/api/tools/{name}/call", call, methods=["POST"]),
        Route("/api/calls/{id}/cancel", cancel, methods=["POST"]),
        Route("/api/approvals", approvals),
        Route("/api/approvals/{id}", answer, methods=["POST"]),
        Route("/api/tasks", tasks),
        Route("/api/tasks/{id}/cancel", cancel_task, methods=["POST"]),
        Route("/api/events", events),
        *session_routes(console, read_json, fail),
        Route("/api/{rest:path}", not_found, methods=["GET", "POST", "DELETE", "PUT", "PATCH"]),
        Mount("/static", StaticFiles(directory=str(STATIC)), name="static"),
    ]

    async def bad_request(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, BadRequest)
        return fail(exc.status, exc.message)

    async def method_or_missing(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 500)
        detail = getattr(exc, "detail", "") or "error"
        return fail(status, f"{request.method} {request.url.path}: {detail}")

    return Starlette(
        routes=routes,
        exception_handlers={
            BadRequest: bad_request,
            404: method_or_missing,
            405: method_or_missing,
        },
    )
