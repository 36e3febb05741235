"""Whether the caller's cancel scope is already cancelled: asked once at the start of every call.

A call made from a cancelled scope must not start (a tool's first step runs without a
checkpoint, so nothing else would stop it). anyio's public ways to ask —
``anyio.current_effective_deadline() == -math.inf``, ``get_current_task()
.has_pending_cancellation()`` or ``lowlevel.checkpoint_if_cancelled()`` — cost 2.5 to 3.8 µs
each on asyncio, more than a whole ``add(a, b)`` call. asyncio's own ``Task.cancelling()`` does
not help: anyio marks a scope cancelled without cancelling the running task.

So, on asyncio, this module reads anyio's record of the task's cancel scopes directly, the
same walk anyio's ``CancelScope._effectively_cancelled`` does (about 0.3 µs). It is the one
place harness reads anyio's private state. When an anyio release reshapes that state, the
import check below fails, :func:`caller_cancelled` falls back to the public API (slower, still
correct), and ``tests/repository/test_private_apis.py`` fails by name so the fast path gets updated.
"""

from __future__ import annotations

import asyncio
import inspect
import math
from typing import Any
from weakref import ref

import anyio

try:  # anyio's asyncio backend: the task → TaskState records and the scope's fields
    from anyio._backends._asyncio import CancelScope as _AsyncioScope
    from anyio._backends._asyncio import _task_states

    _NEEDED = {"_cancel_called", "_parent_scope", "_shield"}
    _SCOPES: Any = _task_states.data if set(_AsyncioScope.__slots__) >= _NEEDED else None  # type: ignore[attr-defined]
except (ImportError, AttributeError):  # another anyio: use its public API
    _SCOPES = None

FAST = _SCOPES is not None
"""Whether the fast path reads anyio's records (False: every call asks the public API)."""

# The running task. On Python 3.11 ``asyncio.current_task`` is a Python function whose
# whole body, for a given loop, is ``_current_tasks.get(loop)``: that read is made here
# directly (a function call less on every tool call). Where it is anything else (3.12 and
# later write it in C), it is called.
_current = asyncio.current_task
_TASKS: Any = (
    getattr(asyncio.tasks, "_current_tasks", None)
    if inspect.isfunction(_current) and "_current_tasks" in _current.__code__.co_names
    else None
)
_current_task: Any = _current if not isinstance(_TASKS, dict) else _TASKS.get
"""``current_task(loop)``, read as cheaply as this Python allows."""


def caller_cancelled(loop: asyncio.AbstractEventLoop | None) -> bool:
    """Whether the caller's cancel scope is already cancelled (no checkpoint needed).

    ``loop`` is the running asyncio loop, None when there is none (trio). The same answer as
    ``anyio.current_effective_deadline() == -math.inf``, on every backend.
    """
    task = None if loop is None else _current_task(loop)
    if task is None or _SCOPES is None:
        return anyio.current_effective_deadline() == -math.inf
    state = _SCOPES.get(ref(task))
    scope = None if state is None else state.cancel_scope
    while scope is not None:
        if scope._cancel_called:
            return True
        if scope._shield:
            return False
        scope = scope._parent_scope
    return False
