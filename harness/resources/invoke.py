"""Running a plugin's function for a read, a render or a completion: one call site each.

A coroutine function is awaited; a plain one runs in a worker thread (as a tool's sync body
does), so a slow read never stalls the host, and an awaitable it returns is awaited. What
it raises is kept as it is when it is a :class:`~harness.errors.HarnessError` (a read may
raise ``NotFound`` for a value that names nothing), else wrapped in
:class:`~harness.errors.ContentError` with its message.
"""

from __future__ import annotations

import inspect
import secrets
import typing
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from ..errors import ContentError, HarnessError
from ..service import unwrap
from ..tools.call_context import CallContext
from ..tools.calls import ToolCall

if TYPE_CHECKING:
    from ..context import Context


async def invoke(function: Callable[..., Any], what: str, *args: Any) -> Any:
    """``function(*args)``, awaited or in a thread; ``what`` names it in a failure
    (``reading resource 'x'``)."""
    try:
        if inspect.iscoroutinefunction(function):
            value = await function(*args)
        else:
            value = await anyio.to_thread.run_sync(partial(function, *args))
            if inspect.isawaitable(value):
                value = await value
    except anyio.get_cancelled_exc_class():
        raise
    except HarnessError:
        raise
    except Exception as exc:
        raise ContentError(f"{what} failed: {exc}") from exc
    return value


def by_keywords(function: Callable[..., Any], context: str | None = None) -> Callable[..., Any]:
    """A function of one dict calling ``function(**that_dict)``; a coroutine function stays
    one (``@resource`` and ``@prompt`` pass variables and arguments as keywords). With
    ``context`` (the name of a parameter annotated ``CallContext``) it is a function of the
    dict and the context, passing the context by that name."""
    if context is not None:
        if inspect.iscoroutinefunction(function):

            async def call_async_with(values: dict[str, str], ctx: CallContext) -> Any:
                return await function(**values, **{context: ctx})

            return call_async_with
        return partial(_call_with_context, function, context)
    if inspect.iscoroutinefunction(function):

        async def call_async(values: dict[str, str]) -> Any:
            return await function(**values)

        return call_async
    return partial(_call_with, function)


def _call_with(function: Callable[..., Any], values: dict[str, str]) -> Any:
    return function(**values)


def _call_with_context(
    function: Callable[..., Any], context: str, values: dict[str, str], ctx: CallContext
) -> Any:
    return function(**values, **{context: ctx})


def context_parameter(function: Callable[..., Any]) -> str | None:
    """The name of ``function``'s parameter annotated ``CallContext`` (or ``CallContext |
    None``), None without one."""
    try:
        hints = typing.get_type_hints(function)
    except Exception:
        return None
    for name, annotation in hints.items():
        if name == "return":
            continue
        if annotation is CallContext or CallContext in typing.get_args(annotation):
            return name
    return None


def python_context(root: Context, kind: str, name: str, args: dict[str, str]) -> CallContext:
    """The context of a read or render asked from Python (or the command line): its
    questions go to the approval object of the tools service (a console page), if any."""
    tools = root.get("tools")
    call = ToolCall(f"{kind}-{secrets.token_hex(6)}", name, dict(args))
    return CallContext(call, "python", tools=unwrap(tools) if tools is not None else None)
