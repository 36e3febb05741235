"""A scripted OpenAI-compatible server, for testing agents without a model provider.

:class:`ScriptedServer` serves ``POST /v1/chat/completions`` over real HTTP on 127.0.0.1,
streamed as Server-Sent Events in the official ``chat.completion.chunk`` format (or as one
``chat.completion`` object when the request does not ask for a stream). It answers by
*rules*: the first rule matching the last message of the request (a user message, or a tool
result) gives a text, tool calls, or both, sent in small deltas (tool-call arguments split
across many chunks), followed by a usage chunk when ``stream_options.include_usage`` is set.
Scripted faults exercise the client's error paths: an HTTP status (429 with ``Retry-After``,
500, ...), a stream cut mid-way, a stall (for idle timeouts and cancellation), malformed
arguments (a raw argument string) and calls to tools that do not exist.

It tests the wiring — requests, streaming, tool calls, retries, the loop — never a model's
judgement: the answers are whatever the rules say. The server runs on its own thread and
event loop, so it serves asyncio code, trio code, synchronous code and subprocesses alike::

    with ScriptedServer([Rule(Reply.calls(call("echo", {"text": "hi"})), user="repeat"),
                         Rule(Reply.text("Done."), tool="echo")]) as server:
        server.url            # "http://127.0.0.1:PORT/v1"
        server.requests       # every request body received, parsed
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal

__all__ = ["Fault", "Reply", "Rule", "ScriptedServer", "call"]


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """One tool call of a scripted reply."""

    name: str
    arguments: str
    """The raw argument string, as a model would send it (may be malformed on purpose)."""


def call(name: str, args: dict[str, Any] | str | None = None) -> ScriptedCall:
    """A tool call: ``args`` as a dict (sent as compact JSON) or as a raw string."""
    if isinstance(args, str):
        return ScriptedCall(name, args)
    return ScriptedCall(name, json.dumps(args or {}, ensure_ascii=False))


@dataclass(frozen=True, slots=True)
class Reply:
    """What the server answers: a text, tool calls, or both.

    ``thinking`` is the reasoning a Messages-API server streams as a signed thinking block
    when the request enables thinking, and ``search`` a query the Messages-API server's
    model runs through the request's tool search tool before it answers (a
    ``server_tool_use`` block and its ``tool_search_tool_result``, which loads the deferred
    tools it finds); the OpenAI-compatible server has neither. ``pause`` makes the
    Messages-API server stop that answer with ``pause_turn`` (as the API does when a long
    server-side turn is paused); the client sends it back to let the model go on.
    """

    text: str = ""
    tool_calls: tuple[ScriptedCall, ...] = ()
    about: Callable[[str], str] | None = None
    """Composes the text from the last message's text (a tool result, say) when set."""
    thinking: str = ""
    search: str = ""
    pause: bool = False

    @classmethod
    def program(cls, code: str, text: str = "") -> Reply:
        """An answer that runs ``code`` in one ``run_code`` call (code mode, ``harness:code``)."""
        return cls.calls(call("run_code", {"code": code}), text=text)

    @classmethod
    def answer(cls, about: Callable[[str], str]) -> Reply:
        """A text answer composed from the last message: ``about(text_of_last_message)``."""
        return cls(about=about)

    @classmethod
    def say(cls, text: str, thinking: str = "") -> Reply:
        """A plain text answer (the model is done)."""
        return cls(text=text, thinking=thinking)

    @classmethod
    def calls(
        cls, *calls: ScriptedCall, text: str = "", thinking: str = "", search: str = ""
    ) -> Reply:
        """An answer asking for tool calls, optionally with some text before them (and a
        server-side tool search before that, on the Messages-API server)."""
        return cls(text=text, tool_calls=tuple(calls), thinking=thinking, search=search)


@dataclass(frozen=True, slots=True)
class Fault:
    """A scripted failure of one request."""

    kind: Literal["status", "cut", "stall", "error"]
    status: int = 500
    retry_after: float | None = None
    after_chunks: int = 0
    seconds: float = 0.0
    error_type: str = "overloaded_error"

    @classmethod
    def http(cls, status: int, retry_after: float | None = None) -> Fault:
        """Answer with this HTTP status and an OpenAI-style error body."""
        return cls("status", status=status, retry_after=retry_after)

    @classmethod
    def cut(cls, after_chunks: int = 2) -> Fault:
        """Send ``after_chunks`` chunks of the real answer, then drop the connection."""
        return cls("cut", after_chunks=after_chunks)

    @classmethod
    def stall(cls, seconds: float, after_chunks: int = 1) -> Fault:
        """Send ``after_chunks`` chunks, then stay silent for ``seconds``, then go on."""
        return cls("stall", after_chunks=after_chunks, seconds=seconds)

    @classmethod
    def error(cls, error_type: str = "overloaded_error", after_chunks: int = 1) -> Fault:
        """Send ``after_chunks`` chunks, then an error event of this type, and end the stream
        (``overloaded_error``, ``api_error``, ``rate_limit_error``, ``invalid_request_error``)."""
        return cls("error", after_chunks=after_chunks, error_type=error_type)


@dataclass
class Rule:
    """When the last message matches, answer with ``reply``.

    ``user`` matches the last message when it is the user's (a substring, or a compiled
    regular expression); ``tool`` matches when it is the result of that tool, and ``result``
    matches the text of that result. A rule with no condition matches anything. ``faults``
    are used one per matching request, in order, before the reply is given; ``times`` bounds
    how often the rule answers (then the next matching rule does).
    """

    reply: Reply
    user: str | re.Pattern[str] | None = None
    tool: str | None = None
    result: str | re.Pattern[str] | None = None
    faults: list[Fault] = field(default_factory=list)
    times: int | None = None
    used: int = 0

    def matches(self, last: dict[str, Any], tool_name: str | None) -> bool:
        """True when this rule answers a request whose last message is ``last``."""
        if self.times is not None and self.used >= self.times:
            return False
        role = last.get("role")
        text = _text_of(last.get("content"))
        if self.user is not None and (role != "user" or not _found(self.user, text)):
            return False
        if self.tool is not None and (role != "tool" or tool_name != self.tool):
            return False
        return self.result is None or (role == "tool" and _found(self.result, text))


def _found(pattern: str | re.Pattern[str], text: str) -> bool:
    if isinstance(pattern, re.Pattern):
        return pattern.search(text) is not None
    return pattern in text


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


class ScriptedServer:
    """The scripted server; a context manager running it on a thread of its own."""

    def __init__(
        self,
        rules: Sequence[Rule] = (),
        *,
        chunk_size: int = 4,
        model: str = "scripted",
        fallback: Reply | None = None,
    ) -> None:
        self.rules = list(rules)
        self.chunk_size = chunk_size
        self.model = model
        self.fallback = fallback
        self.requests: list[dict[str, Any]] = []
        """Every request body received, in order."""
        self.input_tokens: list[int] = []
        """Per request, the tokens the model received: its messages and tool schemas, at
        four characters a token (a tokenizer-free count, the same for every request)."""
        self.port = 0
        self._calls = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._server: Any = None
        self._started = threading.Event()
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        """The base URL to give an OpenAI client (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- running ---------------------------------------------------------------------------

    def __enter__(self) -> ScriptedServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self, timeout: float = 60.0) -> None:
        """Start serving; return once the port is listening."""
        import uvicorn

        config = uvicorn.Config(
            self._app(), host="127.0.0.1", port=self.port, log_level="critical", lifespan="off"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._serve, name="scripted-llm", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout):
            raise RuntimeError(f"the scripted server did not start within {timeout:g} seconds")
        if self._error is not None:
            raise RuntimeError(f"the scripted server failed to start: {self._error}")

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = True
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._main())
        except BaseException as exc:
            self._error = exc
            self._started.set()
        finally:
            loop.close()

    async def _main(self) -> None:
        server = self._server
        task = asyncio.ensure_future(server.serve())
        # uvicorn offers no started event to wait on
        while not server.started and not task.done():  # noqa: ASYNC110
            await asyncio.sleep(0.005)
        if server.started:
            self.port = server.servers[0].sockets[0].getsockname()[1]
        self._started.set()
        await task

    # -- answering -------------------------------------------------------------------------

    def _app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse, Response, StreamingResponse
        from starlette.routing import Route

        async def completions(request: Request) -> Response:
            try:
                body = json.loads(await request.body())
            except ValueError:
                return JSONResponse(_error_body("the request body is not JSON", 400), 400)
            with self._lock:
                self.requests.append(body)
                self.input_tokens.append(_input_tokens(body))
                reply, fault = self._choose(body)
            if fault is not None and fault.kind == "status":
                headers = {}
                if fault.retry_after is not None:
                    headers["retry-after"] = f"{fault.retry_after:g}"
                message = f"scripted fault: HTTP {fault.status}"
                return JSONResponse(_error_body(message, fault.status), fault.status, headers)
            if not body.get("stream"):
                return JSONResponse(self._completion(body, reply))
            return StreamingResponse(
                self._stream(body, reply, fault), media_type="text/event-stream"
            )

        async def models(request: Request) -> Response:
            return JSONResponse({"object": "list", "data": [{"id": self.model, "object": "model"}]})

        return Starlette(
            routes=[
                Route("/v1/chat/completions", completions, methods=["POST"]),
                Route("/chat/completions", completions, methods=["POST"]),
                Route("/v1/models", models),
            ]
        )

    def _choose(self, body: dict[str, Any]) -> tuple[Reply, Fault | None]:
        messages = body.get("messages") or [{}]
        last = messages[-1] if isinstance(messages[-1], dict) else {}
        return self._pick(last, _tool_name(messages, last))

    def _pick(self, last: dict[str, Any], tool_name: str | None) -> tuple[Reply, Fault | None]:
        """The reply (and fault) of the first rule matching ``last``, a message in OpenAI form."""
        for rule in self.rules:
            if rule.matches(last, tool_name):
                reply = rule.reply
                if reply.about is not None:
                    text = reply.about(_text_of(last.get("content")))
                    reply = Reply(
                        text,
                        reply.tool_calls,
                        thinking=reply.thinking,
                        search=reply.search,
                        pause=reply.pause,
                    )
                if rule.faults:
                    return reply, rule.faults.pop(0)
                rule.used += 1
                return reply, None
        if self.fallback is not None:
            return self.fallback, None
        preview = _text_of(last.get("content"))[:200]
        return Reply.say(f"[scripted server: no rule matched the last message: {preview!r}]"), None

    def _next_id(self) -> str:
        with self._lock:
            self._calls += 1
            return f"call_{self._calls}"

    def _chunks(self, reply: Reply) -> list[dict[str, Any]]:
        """The deltas of one answer, without the envelope."""
        size = max(1, self.chunk_size)
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        text = reply.text
        deltas += [{"content": text[at : at + size]} for at in range(0, len(text), size)]
        for index, item in enumerate(reply.tool_calls):
            deltas.append(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": self._next_id(),
                            "type": "function",
                            "function": {"name": item.name, "arguments": ""},
                        }
                    ]
                }
            )
            raw = item.arguments
            for at in range(0, len(raw), size):
                piece = {"index": index, "function": {"arguments": raw[at : at + size]}}
                deltas.append({"tool_calls": [piece]})
        return deltas

    async def _stream(
        self, body: dict[str, Any], reply: Reply, fault: Fault | None
    ) -> AsyncIterator[bytes]:
        envelope = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
        }
        finish = "tool_calls" if reply.tool_calls else "stop"
        chunks = [
            {**envelope, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
            for delta in self._chunks(reply)
        ]
        chunks.append({**envelope, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**envelope, "choices": [], "usage": _usage(body, reply)})
        for number, chunk in enumerate(chunks):
            if fault is not None and number == fault.after_chunks:
                if fault.kind == "cut":
                    raise _CutStream  # uvicorn drops the connection mid-body
                if fault.kind == "stall":
                    await asyncio.sleep(fault.seconds)
                if fault.kind == "error":
                    error = {"message": f"scripted fault: {fault.error_type}"}
                    error["type"] = fault.error_type
                    yield f"event: error\ndata: {json.dumps({'error': error})}\n\n".encode()
                    return
            yield f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode()
        yield b"data: [DONE]\n\n"

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": self._next_id(),
                    "type": "function",
                    "function": {"name": item.name, "arguments": item.arguments},
                }
                for item in reply.tool_calls
            ]
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                }
            ],
            "usage": _usage(body, reply),
        }


class _CutStream(Exception):
    """Raised inside a streamed body to drop the connection."""


def _tool_name(messages: list[Any], last: dict[str, Any]) -> str | None:
    if last.get("role") != "tool":
        return None
    wanted = last.get("tool_call_id")
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "assistant":
            for item in message.get("tool_calls") or []:
                if item.get("id") == wanted:
                    name = (item.get("function") or {}).get("name")
                    return str(name) if name is not None else None
    return None


def _usage(body: dict[str, Any], reply: Reply) -> dict[str, int]:
    prompt = len(json.dumps(body.get("messages", []))) // 4
    completion = (len(reply.text) + sum(len(c.arguments) for c in reply.tool_calls)) // 4 + 1
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _input_tokens(body: dict[str, Any]) -> int:
    text = json.dumps(body.get("messages", []), ensure_ascii=False)
    tools = json.dumps(body.get("tools", []), ensure_ascii=False) if body.get("tools") else ""
    return (len(text) + len(tools)) // 4


def _error_body(message: str, status: int) -> dict[str, Any]:
    kind = "rate_limit_error" if status == 429 else "server_error"
    return {"error": {"message": message, "type": kind, "code": str(status)}}
