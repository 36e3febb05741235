"""The chat routes: the agent's sessions over HTTP (DESIGN §10's Python API underneath).

``GET /api/sessions`` lists them, ``POST /api/sessions`` starts one (``{"id"}``),
``GET /api/sessions/{id}`` returns its events, ``POST /api/sessions/{id}/messages``
(``{"text"}``) starts a turn and answers 202 at once — the turn's events stream on
``/api/events`` with their ``session`` — ``POST /api/sessions/{id}/cancel`` stops the turn
(``cancelled``: whether one was running) and ``DELETE /api/sessions/{id}`` deletes the
session. The session record (DESIGN §15): ``GET /api/sessions?q=WORD`` keeps the sessions
whose messages contain the word, ``PATCH /api/sessions/{id}`` (``{"title"}``) renames one,
``GET /api/sessions/{id}/export`` streams its JSONL log as a download and
``GET /api/sessions/{id}/trajectory`` gives each turn's steps, model time, tokens and calls.
An id no session has (or no id at all) is a 404 on every route; without an ``agent`` service
every route answers 503 saying what to configure.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..errors import HarnessError, RecordError
from .no_agent import no_agent_message

if TYPE_CHECKING:
    from .console import WebConsole

_log = logging.getLogger("harness.web")
MAX_TEXT = 200_000


async def settle(value: Any) -> Any:
    """Await ``value`` when the agent's API returned an awaitable."""
    if inspect.isawaitable(value):
        return await value
    return value


def session_routes(
    console: WebConsole,
    read_json: Callable[[Request], Awaitable[dict[str, Any]]],
    fail: Callable[[int, str], JSONResponse],
) -> list[Route]:
    """The ``/api/sessions`` routes of ``console``."""
    live: dict[str, Any] = {}

    def agent() -> Any:
        return console.root.get("agent")

    async def session_of(session_id: str) -> Any:
        # asked each time: with sessions in a store, the agent reads it off the event loop
        # and catches an idle session up with what another replica appended
        live[session_id] = await settle(agent().open(session_id))
        return live[session_id]

    async def existing(session_id: str) -> Any:
        """The session, or a 404 reply when no session has that id (or it is no id)."""
        try:
            return await session_of(session_id)
        except HarnessError:  # SessionNotFound: unknown, or not a safe file name
            return fail(404, f"no session has id {session_id!r}")

    def unavailable() -> JSONResponse:
        return JSONResponse(
            {"error": no_agent_message(console.host), "configure": True}, status_code=503
        )

    async def listing(request: Request) -> Response:
        if agent() is None:
            return unavailable()
        if request.method == "POST":
            await read_json(request)
            session = await settle(agent().open())
            live[session.id] = session
            return JSONResponse({"id": session.id}, status_code=201)
        query = request.query_params.get("q")
        try:
            found = await settle(agent().listed(query) if query else agent().listed())
        except RecordError as exc:
            return fail(400, f"?q=: {exc}")
        return JSONResponse(list(found))

    async def known(session_id: str) -> bool:
        return session_id in live or bool(await settle(agent().has(session_id)))

    async def one(request: Request) -> Response:
        if agent() is None:
            return unavailable()
        session_id = request.path_params["id"]
        if not await known(session_id):
            return fail(404, f"no session has id {session_id!r}")
        if request.method == "PATCH":
            body = await read_json(request)
            if "title" not in body:
                return fail(400, 'send {"title": "..."}: the title is missing')
            opened = await existing(session_id)  # caught up: the title goes after every event
            if isinstance(opened, Response):
                return opened
            try:
                return JSONResponse(await settle(agent().rename(session_id, body["title"])))
            except RecordError as exc:
                return fail(400, f"title: {exc}")
        if request.method == "DELETE":
            live.pop(session_id, None)
            await settle(agent().delete(session_id))
            return JSONResponse({"id": session_id, "deleted": True})
        session = await session_of(session_id)
        return JSONResponse({"id": session_id, "events": list(session.events)})

    async def message(request: Request) -> Response:
        if agent() is None:
            return unavailable()
        body = await read_json(request)
        text = body.get("text")
        if not isinstance(text, str) or not text.strip():
            return fail(400, 'send {"text": "..."}: the message text is missing or empty')
        if len(text) > MAX_TEXT:
            return fail(413, f"the message is longer than {MAX_TEXT} characters")
        session_id = request.path_params["id"]
        session = await existing(session_id)
        if isinstance(session, Response):
            return session

        async def turn() -> None:
            try:
                async for _ in session.send(text):
                    pass  # the events reach the pages through agent/event
            except Exception:
                _log.exception("the turn of session %s failed", session_id)

        console.root.start_soon(turn)
        return JSONResponse({"id": session_id, "accepted": True}, status_code=202)

    async def cancel(request: Request) -> Response:
        if agent() is None:
            return unavailable()
        await read_json(request)
        session_id = request.path_params["id"]
        session = await existing(session_id)
        if isinstance(session, Response):
            return session
        running = await settle(session.cancel())
        return JSONResponse({"id": session_id, "cancelled": running is not False})

    async def read_record(session_id: str, read: Callable[[str], Any]) -> Any:
        """What ``read`` gives for a session that exists, else the 404 to answer with."""
        if not await known(session_id):
            return fail(404, f"no session has id {session_id!r}")
        try:
            await session_of(session_id)  # read off the event loop, caught up with replicas
            return await settle(read(session_id))
        except HarnessError as exc:
            return fail(404, f"no session has id {session_id!r} ({exc})")

    async def export(request: Request) -> Response:
        if agent() is None:
            return unavailable()
        session_id = request.path_params["id"]
        chunks = await read_record(session_id, agent().export)
        if isinstance(chunks, Response):
            return chunks
        disposition = f'attachment; filename="session-{session_id}.jsonl"'  # a checked id
        return StreamingResponse(
            chunks, media_type="application/x-ndjson", headers={"content-disposition": disposition}
        )

    async def steps(request: Request) -> Response:
        if agent() is None:
            return unavailable()
        session_id = request.path_params["id"]
        turns = await read_record(session_id, agent().trajectory)
        if isinstance(turns, Response):
            return turns
        return JSONResponse({"id": session_id, "turns": turns})

    async def model(request: Request) -> Response:
        llm = console.root.get("llm")
        label = getattr(llm, "label", None) or getattr(getattr(llm, "config", None), "model", None)
        return JSONResponse({"model": str(label) if label else None})

    return [
        Route("/api/model", model),
        Route("/api/sessions", listing, methods=["GET", "POST"]),
        Route("/api/sessions/{id}", one, methods=["GET", "PATCH", "DELETE"]),
        Route("/api/sessions/{id}/export", export, methods=["GET"]),
        Route("/api/sessions/{id}/trajectory", steps, methods=["GET"]),
        Route("/api/sessions/{id}/messages", message, methods=["POST"]),
        Route("/api/sessions/{id}/cancel", cancel, methods=["POST"]),
    ]
