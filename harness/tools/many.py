"""``execute_many``'s scheduling: concurrency-safe calls together, the others alone, in order.

Calls are dispatched in call order. A run of concurrency-safe calls shares a rolling pool of
at most ``limit`` slots: a call starts when a slot frees up. A call that is not
concurrency-safe waits for the running ones, runs alone, and then the pool resumes.
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
from .define import ToolDefinition

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
        return index < count and is_concurrency_safe(items[index], tools)

    index, count = 0, len(items)
    safe = safe_at(0)
    while index < count:
        if not safe:
            results[index] = await execute(items[index])
            index += 1
            safe = safe_at(index)
            continue
        async with anyio.create_task_group() as pool:
            # The slot is taken here, in the dispatch loop, so calls start in call order on
            # every backend; the pool closes (its calls finish) before an exclusive call.
            while safe:
                if anyio.current_effective_deadline() == -math.inf:
                    return
                await slots.acquire()
                await pool.start(pooled, index)
                index += 1
                safe = safe_at(index)


def is_concurrency_safe(call: Any, tools: Mapping[str, Any]) -> bool:
    """Whether ``call`` may run alongside others, judged on its validated arguments."""
    try:
        normal = ToolCall.of(call)
    except TypeError:
        return True  # fails at once without running anything
    entry = tools.get(normal.name)
    if entry is None:
        return True
    definition: ToolDefinition = entry.definition
    safe = definition.concurrency_safe
    if isinstance(safe, bool):
        return safe
    args = normal.args
    try:
        if isinstance(args, str | bytes):
            args = json.loads(args)
        definition.bind(args)
    except (ToolArgsError, ValueError):
        return True  # invalid arguments: the call fails without running, so it is harmless
    try:
        return bool(safe(args))
    except Exception:
        _log.warning("concurrency_safe of %r raised; running the call alone", normal.name)
        return False
