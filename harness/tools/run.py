"""The innermost stage of a call: arguments checked, the body run under its deadline, the
value checked and rendered.

:func:`run` is synchronous as far as it can be: an async body's first step runs at once
(:mod:`.deadline`), and a body that returns on it gives its :class:`ToolResult` back with
nothing left to await. Only a body that suspends (or a sync body, which runs in a worker
thread) hands back an awaitable. Every failure is a result; only cancellation passes.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from ..errors import ToolArgsError
from . import jsonvalue
from .calls import ToolCall, ToolResult
from .deadline import start, suspended
from .define import OutputMismatch, ToolDefinition, unchecked
from .jsonvalue import is_json
from .render import RenderError, render

_log = logging.getLogger("harness.tools")

_isfinite = math.isfinite
_monotonic = time.monotonic


def run(
    tool: ToolDefinition | None,
    call: ToolCall,
    default_timeout: float | None,
    loop: asyncio.AbstractEventLoop | None,
) -> ToolResult | Awaitable[ToolResult]:
    """Run ``call`` with ``tool``: its result, or an awaitable of it when the body suspends.

    ``loop`` is the running asyncio loop (None on trio).

    Cancellation of the caller passes through (as an exception); everything else is a result.
    """
    if tool is None:
        return ToolResult.failure(call, "unknown_tool", f"Tool {call.name} not found")
    args = call.args
    accepts = tool.accepts
    body: Callable[[], Any] | None = None
    """The bound body; None when the acceptor vouched for the arguments (``execute(args)``)."""
    if not (accepts is not None and type(args) is dict and tool.is_async and accepts(args)):
        try:
            if isinstance(args, str | bytes):
                try:
                    args = jsonvalue.loads(args)
                except jsonvalue.NotJson as exc:
                    raise ToolArgsError(f"arguments are not valid JSON ({exc})") from None
            elif not is_json(args):
                raise ToolArgsError(f"arguments are not valid JSON: {jsonvalue.problem(args)}")
            body = tool.bind(args)
        except ToolArgsError as exc:
            return _invalid_args(call, exc)
    timeout = tool.timeout if tool.timeout is not None else default_timeout
    if body is not None and not tool.is_async:
        return _finish(call, tool, _threaded(body, timeout), timeout)
    # What ``deadline.start`` does, inline: this is every async call's path.
    began = _monotonic()
    try:
        coro = tool.execute(args) if body is None else body()
        if loop is None and timeout is not None:  # trio: the deadline is a cancel scope,
            return _finish(call, tool, start(coro, timeout).rest, timeout)  # entered first
        waiting = coro.send(None)
    except StopIteration as done:
        return _outcome(call, tool, done.value)
    except BaseException as exc:
        if _passes(exc):
            raise
        return _raised(call, exc)
    return _finish(call, tool, suspended(coro, waiting, loop, timeout, began).rest, timeout)


async def _finish(
    call: ToolCall,
    tool: ToolDefinition,
    pending: Awaitable[tuple[Any, bool]],
    seconds: float | None,
) -> ToolResult:
    try:
        finished = await pending
    except BaseException as exc:
        if _passes(exc):
            raise
        return _raised(call, exc)
    value, timed_out = finished
    if timed_out:
        return ToolResult.failure(
            call, "timeout", f"Tool {call.name} timed out after {seconds:g} seconds"
        )
    return _outcome(call, tool, value)


def _outcome(call: ToolCall, tool: ToolDefinition, value: Any) -> ToolResult:
    """The result of a body that returned ``value``: checked and rendered."""
    try:
        check = tool.check_output
        canonical = value if check is unchecked else check(value)
        if tool.render is None:  # the usual scalars read as text at once (render.default_text)
            kind = type(canonical)
            if kind is float and _isfinite(canonical):
                text = repr(canonical)
            elif kind is str and canonical.isascii():
                text = canonical
            elif kind is int:
                text = str(canonical)
            else:
                text = None
            if text is not None:
                block = {"type": "text", "text": text}
                return ToolResult(call.id, call.name, canonical, [block])
        if not is_json(canonical):
            raise OutputMismatch(f"the result is not valid JSON: {jsonvalue.problem(canonical)}")
        content = render(tool.render, canonical)
        if tool.render is not None and not is_json(content):
            raise RenderError(
                f"render returned blocks that are not JSON: {jsonvalue.problem(content)}"
            )
    except (OutputMismatch, RenderError) as exc:
        _log.warning("tool %r returned invalid output: %s", call.name, exc)
        return ToolResult.failure(
            call, "invalid_output", f"Tool {call.name} returned invalid output: {exc}"
        )
    except Exception as exc:
        _log.info("rendering tool %r raised", call.name, exc_info=exc)
        return ToolResult.failure(call, "tool_error", str(exc) or type(exc).__name__)
    except BaseException as exc:
        if _passes(exc):
            raise
        return contained(call, exc)
    return ToolResult(call.id, call.name, canonical, content)


def _passes(exc: BaseException) -> bool:
    """Whether ``exc`` ends the call as an exception: the caller's cancellation, or close()."""
    return isinstance(exc, (anyio.get_cancelled_exc_class(), GeneratorExit))


def _raised(call: ToolCall, exc: BaseException) -> ToolResult:
    """What the body raised, as a result."""
    if isinstance(exc, ToolArgsError):
        return _invalid_args(call, exc)
    if isinstance(exc, Exception):
        _log.info("tool %r raised", call.name, exc_info=exc)
        return ToolResult.failure(call, "tool_error", str(exc) or type(exc).__name__)
    return contained(call, exc)  # SystemExit, KeyboardInterrupt...: the tool's, not ours


def _invalid_args(call: ToolCall, exc: ToolArgsError) -> ToolResult:
    return ToolResult.failure(
        call, "invalid_args", f"Invalid arguments for tool {call.name}: {exc}"
    )


async def _threaded(body: Callable[[], Any], seconds: float | None) -> tuple[Any, bool]:
    """Run a sync body in a worker thread.

    A sync body cannot be stopped: on timeout or cancellation the call stops waiting for
    its thread, whose late result is discarded.
    """
    if seconds is None:
        return await _body(body), False
    with anyio.move_on_after(seconds) as scope:
        return await _body(body), False
    return None, scope.cancelled_caught


async def _body(body: Callable[[], Any]) -> Any:
    value = await anyio.to_thread.run_sync(body, abandon_on_cancel=True)
    if inspect.isawaitable(value):
        value = await value
    return value


def contained(call: ToolCall, exc: BaseException) -> ToolResult:
    """A BaseException a tool raised (SystemExit, KeyboardInterrupt, ...) as a tool_error.

    Only the host's own signal handling stops the host; a tool cannot, by raising.
    """
    _log.warning("tool %r raised %s; contained", call.name, type(exc).__name__, exc_info=exc)
    detail = str(exc)
    return ToolResult.failure(
        call,
        "tool_error",
        f"Tool {call.name} raised {type(exc).__name__}" + (f": {detail}" if detail else ""),
    )
