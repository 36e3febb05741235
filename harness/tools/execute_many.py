"""``execute_many``'s scheduling: concurrency-safe calls together, the others alone, in order.

Calls are dispatched in call order. A run of concurrency-safe calls shares a rolling pool of
at most ``limit`` slots: a call starts when a slot frees up. Each call is classified when its
turn to start comes (a slot is free), against the registry of that moment. A call that is
not concurrency-safe waits for the running ones, runs alone, and then the pool resumes; so
does a call whose tool is unknown or whose arguments are invalid (its pre-execute stage and
approvals still run), and one whose ``concurrency_safe`` predicate raises.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import anyio.abc

from ..errors import ToolArgsError
from .calls import ToolCall, ToolResult
from .definition import ToolDefinition

_log = logging.getLogger("harness.tools")

Execute = Callable[[Any], Awaitable[ToolResult]]


async def dispatch(
    items: list[Any],
    results: list[ToolResult | None],
    limit: int,
    execute: Execute,
    tools: Mapping[str, Any],
) -> None:
    """Run ``items`` with ``execute``, filling ``results`` in call order.

    ``tools`` maps a tool name to what holds its definition (``.definition``); returns early,
    leaving the calls not started as None, when the caller is cancelled.
    """
    slots = anyio.Semaphore(limit)

    async def pooled(index: int, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        try:
            task_status.started()  # the dispatch loop goes on once this call has begun
            results[index] = await execute(items[index])
        finally:
            slots.release()

    def safe_at(index: int) -> bool:
        return is_concurrency_safe(items[index], tools)

    index, count = 0, len(items)
    while index < count:
        if not safe_at(index):  # nothing runs now: its turn has come
            results[index] = await execute(items[index])
            index += 1
            continue
        async with anyio.create_task_group() as pool:
            # The slot is taken here, in the dispatch loop, so calls start in call order on
            # every backend; the pool closes (its calls finish) before an exclusive call.
            await slots.acquire()  # free: nothing runs
            await pool.start(pooled, index)
            index += 1
            while index < count:
                if anyio.current_effective_deadline() == -math.inf:
                    return
                await slots.acquire()
                # Classified now that a slot is free, against the registry of this moment
                # (a result listener may have replaced the tool meanwhile).
                if not safe_at(index):
                    slots.release()
                    break
                await pool.start(pooled, index)
                index += 1
        if index < count:  # the call that closed the pool was judged exclusive: alone, now
            results[index] = await execute(items[index])
            index += 1


def is_concurrency_safe(call: Any, tools: Mapping[str, Any]) -> bool:
    """Whether ``call`` may run alongside others, judged on its validated arguments."""
    try:
        normal = ToolCall.of(call)
    except TypeError:
        return True  # fails at once without running anything
    entry = tools.get(normal.name)
    if entry is None:
        return False  # its pre-execute stage still runs (a policy may ask): alone
    definition: ToolDefinition = entry.definition
    safe = definition.concurrency_safe
    if safe is False:
        return False
    args = normal.args
    try:
        if isinstance(args, str | bytes):
            args = json.loads(args)
        definition.bind(args)
    except (ToolArgsError, ValueError):
        return False  # its pre-execute stage and approvals still run: alone, as dsh does
    if safe is True:
        return True
    try:
        return bool(safe(args))
    except Exception:
        _log.warning("concurrency_safe of %r raised; running the call alone", normal.name)
        return False
