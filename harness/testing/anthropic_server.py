"""A scripted Anthropic Messages-API server, for testing agents without a key.

:class:`AnthropicServer` serves ``POST /v1/messages`` over real HTTP on 127.0.0.1, streamed
in the official event format (``message_start``, ``content_block_start`` / ``_delta`` /
``_stop`` with ``text_delta``, ``input_json_delta``, ``thinking_delta`` and ``signature_delta``,
``message_delta`` with the stop reason and usage, ``message_stop``, a ``ping``), or as one
``message`` object when the request does not ask for a stream. It answers by the same
:class:`~harness.testing.Rule` s as :class:`~harness.testing.ScriptedServer` (the last block of
the request decides: a user text, or a tool result) and shares its faults, plus
``Fault.error`` (an ``error`` event mid-stream) and the 529 "overloaded" status.

It checks each request as the real API does and answers 400 ``invalid_request_error`` when
one is malformed: turns that do not alternate, a ``tool_use`` left without its
``tool_result``, results not first in their turn, ids with characters the API refuses, tool
blocks without ``tools``, empty text, a thinking budget out of range, and thinking blocks
that were not passed back as they were sent (each carries a signature the server checks),
or are missing where thinking is on and a tool result continues the assistant's turn.

Usage is counted as the real API reports it, with prompt caching simulated: every prefix
ending at a ``cache_control`` mark is remembered, a later request that starts with one reads
it (``cache_read_input_tokens``), and the rest up to its last mark is written
(``cache_creation_input_tokens``). Tokens are estimated (4 characters each). ``requests``
holds every body, ``usage`` every reported usage, ``input_tokens`` per request every input
token, cached ones included.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from .anthropic_checks import RequestError, check
from .anthropic_search import check_deferral, search_blocks
from .openai_server import Fault, Reply, Rule, ScriptedServer, _CutStream, _text_of

__all__ = ["AnthropicServer"]

_SECRET = b"harness scripted thinking"


def signature(thinking: str) -> str:
    """The signature the server gives (and expects back on) a thinking block."""
    digest = hmac.new(_SECRET, thinking.encode(), hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def tokens(value: Any) -> int:
    """The estimated token count of a JSON value."""
    return max(1, len(json.dumps(value, ensure_ascii=False, sort_keys=True)) // 4)


class AnthropicServer(ScriptedServer):
    """The scripted Messages-API server; a context manager running it on its own thread."""

    def __init__(
        self,
        rules: Sequence[Rule] = (),
        *,
        chunk_size: int = 4,
        model: str = "scripted",
        fallback: Reply | None = None,
    ) -> None:
        super().__init__(rules, chunk_size=chunk_size, model=model, fallback=fallback)
        self.usage: list[dict[str, int]] = []
        """The usage reported for each answered request, in order."""
        self.headers: list[dict[str, str]] = []
        """The HTTP headers of each request, in order."""
        self._cached: set[str] = set()

    @property
    def url(self) -> str:
        """The base URL to give an Anthropic client (``http://127.0.0.1:PORT``)."""
        return f"http://127.0.0.1:{self.port}"

    def _app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse, Response, StreamingResponse
        from starlette.routing import Route

        async def messages(request: Request) -> Response:
            try:
                body = json.loads(await request.body())
            except ValueError:
                return JSONResponse(_error("invalid_request_error", "the body is not JSON"), 400)
            with self._lock:
                self.requests.append(body)
                self.headers.append(dict(request.headers))
                if not {"x-api-key", "authorization"} & set(request.headers):
                    denied = _error("authentication_error", "x-api-key header is required")
                    return JSONResponse(denied, 401)
                try:
                    if "anthropic-version" not in request.headers:
                        raise RequestError("anthropic-version: header is required")
                    check(body, signature)
                    check_deferral(body)
                except RequestError as exc:
                    return JSONResponse(_error("invalid_request_error", str(exc)), 400)
                reply, fault = self._choose(body)
                refused = fault is not None and fault.kind == "status"
                usage = self._count(body, remember=not refused)
                self.input_tokens.append(sum(v for k, v in usage.items() if "input" in k))
            if fault is not None and fault.kind == "status":
                headers = {}
                if fault.retry_after is not None:
                    headers["retry-after"] = f"{fault.retry_after:g}"
                kind = _ERROR_OF_STATUS.get(fault.status, "api_error")
                text = f"scripted fault: HTTP {fault.status}"
                return JSONResponse(_error(kind, text), fault.status, headers)
            blocks = self._blocks(body, reply)
            usage["output_tokens"] = tokens(blocks) if blocks else 1
            self.usage.append(usage)
            stop = "pause_turn" if reply.pause else "tool_use" if reply.tool_calls else "end_turn"
            message: dict[str, Any] = {
                "id": f"msg_{len(self.requests)}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model") or self.model,
                "content": blocks,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": usage,
            }
            if not body.get("stream"):
                return JSONResponse(message)
            events = self._events(message)
            return StreamingResponse(self._send(events, fault), media_type="text/event-stream")

        return Starlette(routes=[Route("/v1/messages", messages, methods=["POST"])])

    # -- choosing and counting ---------------------------------------------------------------

    def _choose(self, body: dict[str, Any]) -> tuple[Reply, Fault | None]:
        return self._pick(*_last(body.get("messages") or []))

    def _count(self, body: dict[str, Any], remember: bool = True) -> dict[str, int]:
        """Usage with prompt caching simulated over the request's prefix (tools, system, turns)."""
        items: list[Any] = []
        for tool in body.get("tools") or []:
            if not tool.get("defer_loading"):  # deferred tools are not in the prompt
                items.append(tool)
        system = body.get("system")
        if isinstance(system, str):
            system = [{"type": "text", "text": system}]
        items += list(system or [])
        for turn in body.get("messages") or []:
            content = turn.get("content")
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            items += [{"role": turn.get("role"), **block} for block in content]
        total, read, written = 0, 0, 0
        digest = hashlib.sha256()
        prefixes: list[tuple[str, int]] = []  # (digest, tokens) of the prefix ending at each item
        marks: list[int] = []
        for item in items:
            plain = {k: v for k, v in item.items() if k != "cache_control"}
            total += tokens(plain)
            digest.update(json.dumps(plain, sort_keys=True).encode())
            prefixes.append((digest.copy().hexdigest(), total))
            if "cache_control" in item:
                marks.append(len(prefixes) - 1)
        # as the API does: from each mark, look back up to 20 blocks for a cached prefix
        for mark in reversed(marks):
            hit = next(
                (
                    at
                    for at in range(mark, max(-1, mark - 20), -1)
                    if prefixes[at][0] in self._cached
                ),
                None,
            )
            if hit is not None:
                read = prefixes[hit][1]
                break
        if marks and prefixes[marks[-1]][0] not in self._cached:
            written = prefixes[marks[-1]][1] - read
        if remember:
            self._cached.update(prefixes[mark][0] for mark in marks)
        return {
            "input_tokens": total - read - written,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
            "output_tokens": 0,
        }

    # -- answering ---------------------------------------------------------------------------

    def _blocks(self, body: dict[str, Any], reply: Reply) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        mode = (body.get("thinking") or {}).get("type")
        if mode in ("enabled", "adaptive"):
            thought = reply.thinking or "Thinking about the request before answering."
            blocks.append(
                {"type": "thinking", "thinking": thought, "signature": signature(thought)}
            )
        if reply.search:
            number = self._next_id().split("_")[-1]
            blocks += search_blocks(body, reply.search, f"srvtoolu_{number}")
        if reply.text:
            blocks.append({"type": "text", "text": reply.text})
        for item in reply.tool_calls:
            try:
                value: Any = json.loads(item.arguments)
            except ValueError:
                value = item.arguments  # malformed on purpose: streamed raw
            blocks.append(
                {
                    "type": "tool_use",
                    "id": self._next_id().replace("call", "toolu"),
                    "name": item.name,
                    "input": value,
                }
            )
        return blocks

    def _events(self, message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """The stream of a message, as (event, data) pairs."""
        size = max(1, self.chunk_size)
        usage = message["usage"]
        start = {
            **message,
            "content": [],
            "stop_reason": None,
            "usage": {**usage, "output_tokens": 1},
        }
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": start}),
            ("ping", {"type": "ping"}),
        ]
        for index, block in enumerate(message["content"]):
            kind = block["type"]
            if kind == "text":
                opened: dict[str, Any] = {"type": "text", "text": ""}
                pieces = _split(block["text"], size)
                deltas = [{"type": "text_delta", "text": p} for p in pieces]
            elif kind == "thinking":
                opened = {"type": "thinking", "thinking": "", "signature": ""}
                deltas = [
                    {"type": "thinking_delta", "thinking": p}
                    for p in _split(block["thinking"], size)
                ]
                deltas.append({"type": "signature_delta", "signature": block["signature"]})
            elif kind == "tool_search_tool_result":  # whole in its start event
                opened, deltas = block, []
            else:  # tool_use, server_tool_use
                opened = {"type": kind, "id": block["id"], "name": block["name"], "input": {}}
                raw = block["input"]
                raw = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
                deltas = [
                    {"type": "input_json_delta", "partial_json": p} for p in _split(raw, size)
                ]
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": opened},
                )
            )
            events += [
                ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
                for d in deltas
            ]
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
        events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
        events.append(("message_stop", {"type": "message_stop"}))
        return events

    async def _send(
        self, events: list[tuple[str, dict[str, Any]]], fault: Fault | None
    ) -> AsyncIterator[bytes]:
        import asyncio

        for number, (name, data) in enumerate(events):
            if fault is not None and number == fault.after_chunks:
                if fault.kind == "cut":
                    raise _CutStream
                if fault.kind == "stall":
                    await asyncio.sleep(fault.seconds)
                if fault.kind == "error":
                    error = _error(fault.error_type, f"scripted fault: {fault.error_type}")
                    yield f"event: error\ndata: {json.dumps(error)}\n\n".encode()
                    return
            yield f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


_ERROR_OF_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _split(text: str, size: int) -> list[str]:
    return [text[at : at + size] for at in range(0, len(text), size)]


def _last(turns: list[Any]) -> tuple[dict[str, Any], str | None]:
    """The request's last block, as a rule reads it: a user text, or a result of a tool."""
    if not turns or not isinstance(turns[-1], dict):
        return {}, None
    content = turns[-1].get("content")
    if isinstance(content, str):
        return {"role": turns[-1].get("role"), "content": content}, None
    blocks = [b for b in content or [] if isinstance(b, dict)]
    if not blocks:
        return {}, None
    last = blocks[-1]
    if last.get("type") != "tool_result":
        texts: list[str] = []
        for block in reversed(blocks):
            if block.get("type") != "text":
                break
            texts.insert(0, str(block.get("text", "")))
        return {"role": turns[-1].get("role"), "content": "".join(texts)}, None
    wanted = last.get("tool_use_id")
    name = None
    for turn in reversed(turns[:-1]):
        for block in turn.get("content") or []:
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_use"
                and block.get("id") == wanted
            ):
                name = str(block.get("name"))
        if name is not None:
            break
    return {"role": "tool", "content": _text_of(last.get("content"))}, name
