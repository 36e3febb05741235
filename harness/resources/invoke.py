"""Running a plugin's function for a read, a render or a completion: one call site each.

A coroutine function is awaited; a plain one runs in a worker thread (as a tool's sync body
does), so a slow read never stalls the host, and an awaitable it returns is awaited. What
it raises is kept as it is when it is a :class:`~harness.errors.HarnessError` (a read may
raise ``NotFound`` for a value that names nothing), else wrapped in
:class:`~harness.errors.ContentError` with its message.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import partial
from typing import Any

import anyio

from ..errors import ContentError, HarnessError


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


def by_keywords(function: Callable[..., Any]) -> Callable[[dict[str, str]], Any]:
    """A function of one dict calling ``function(**that_dict)``; a coroutine function stays
    one (``@resource`` and ``@prompt`` pass variables and arguments as keywords)."""
    if inspect.iscoroutinefunction(function):

        async def call_async(values: dict[str, str]) -> Any:
            return await function(**values)

        return call_async
    return partial(_call_with, function)


def _call_with(function: Callable[..., Any], values: dict[str, str]) -> Any:
    return function(**values)
