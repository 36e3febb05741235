"""The call journal: a keyed call to a tool that is not ``read_only`` runs at most once.

The kernel hands a keyed call's stage 2 (validation, the body, the output check) to
:meth:`Journal.run`, which records the key ``started`` before the body and ``done`` with the
result after. A repeat of the key is answered from its row:

- ``done``: the recorded result, without running (on any surface, any replica);
- another tool or other arguments under the key: ``invalid_args``;
- ``started`` by a process that is alive: the repeat waits for that run's result;
- ``started`` by a process that died (a restart, ``kill -9``, a graceful stop), or whose
  run was cancelled inside stage 2: ``interrupted``, recorded as the key's result, unless
  the tool is ``idempotent``, whose call this repeat runs again.

A run that ends a round asking for input (an MCP 2026-07-28 ``InputRequiredResult``) leaves
no row: the next round, which brings the answers, runs the call under the key.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from ..tools.calls import ToolCall, ToolResult
from ..tools.definition import ToolDefinition
from .database import Database, Row

_log = logging.getLogger("harness.store")
INTERRUPTED = "the host stopped while this call ran; it may or may not have taken effect"
POLL = (0.02, 0.5)
"""Seconds between looks at a call another live process runs: the first, the longest."""


class Journal:
    """The journal of one open store (``tools.journal`` while ``harness:store`` is loaded)."""

    def __init__(self, database: Database, stopping: Callable[[], bool] = lambda: False) -> None:
        self.database = database
        self.stopping = stopping
        """Whether the host is stopping: a run cut off then is left as ``kill -9`` leaves it
        (this process's, which is gone once the store closes), not released."""
        self._running: dict[str, anyio.Event] = {}
        """Keys this process is running now → set when their result is recorded."""
        self.resumable: Callable[[str], Awaitable[None]] | None = None
        """Adopts the paused program of a key a dead process left started, if there is one
        (:mod:`.programs`): the key is then this process's to finish."""

    async def run(
        self, call: ToolCall, tool: ToolDefinition, step: Callable[[], Awaitable[ToolResult]]
    ) -> ToolResult:
        """``step()`` (the call's stage 2) at most once per ``call.key``, or its answer."""
        key = call.key
        assert key is not None
        digest = digest_of(call.args)
        database = self.database
        delay = POLL[0]
        while True:
            found = await database.claim(key, call.name, digest)
            if found is None:
                return await self._record(call, key, step)
            if found.tool != call.name or found.digest != digest:
                return reused(call, key, found)
            if found.state == "done":
                return replayed(call, found)
            running = self._running.get(key)
            if running is not None:  # this process runs it: wait for its result
                await running.wait()
                continue
            # cut off: its process died, its run was cancelled (no owner), or (this process,
            # not running it) its record was lost; else another process runs it: wait
            owner = found.owner
            if owner and owner != database.owner and await database.is_alive(owner):
                await anyio.sleep(delay)
                delay = min(delay * 2, POLL[1])
                continue
            if self.resumable is not None:  # a paused program: resumed, not interrupted
                await self.resumable(key)
                if key in self._running:
                    continue
            if tool.annotations.idempotent:  # cut off: safe to run again, once
                if await database.settle(key, found.owner, None):
                    return await self._record(call, key, step)
                continue
            answer = ToolResult.failure(call, "interrupted", f"interrupted: {INTERRUPTED}")
            await database.settle(key, found.owner, dumps(answer))
            # whoever settled it first, the key's answer is its row's

    async def _record(
        self, call: ToolCall, key: str, step: Callable[[], Awaitable[ToolResult]]
    ) -> ToolResult:
        self._running[key] = anyio.Event()
        result: ToolResult | None = None
        try:
            result = await step()
        except BaseException:
            result = None  # cut off (cancelled) or failed inside: a repeat finds it so
            raise
        finally:
            await self.record(call, key, result)
        return result

    async def take_over(self, key: str, gone: str) -> bool:
        """Make this process the runner of ``key``, which the dead owner ``gone`` left
        ``started`` (a paused program this process resumes): a repeat of the key then waits
        for :meth:`record`. False when the key was answered or taken meanwhile."""
        if key in self._running or not await self.database.settle(key, gone, None):
            return False
        self._running[key] = anyio.Event()
        return True

    async def record(self, call: ToolCall, key: str, result: ToolResult | None) -> None:
        """Record the end of this process's run of ``key``: ``result``, or (None) cut off.
        A round that ends asking for input (``approval_pending``: its answers come with the
        next request, which runs the call again) is no answer of the key: it is forgotten."""
        done = self._running.get(key)
        with anyio.CancelScope(shield=True):
            try:
                if result is not None and result.code == "approval_pending":
                    await self.database.forget(key)
                elif result is None:
                    if not self.stopping():
                        await self.database.release(key)
                    # else left to this process, as a kill -9 leaves it: a paused program's
                    # key is taken over with the program by the next process to open the
                    # store; any other key is answered as cut off
                else:
                    await self.database.finish(key, dumps(result))
            except Exception:
                _log.exception("the journal could not record call %r (key %r)", call.id, key)
            finally:
                self._running.pop(key, None)
                if done is not None:
                    done.set()


def digest_of(args: Any) -> str:
    """The arguments' digest: equal for equal JSON, whatever the key order or spacing."""
    value = args
    if isinstance(args, str | bytes):
        try:
            value = json.loads(args)
        except ValueError:
            value = {"<text>": args if isinstance(args, str) else args.decode(errors="replace")}
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return hashlib.sha256(text.encode(errors="surrogatepass")).hexdigest()


def dumps(result: ToolResult) -> str:
    return json.dumps(
        {
            "result": result.result,
            "content": result.content,
            "error": result.error,
            "code": result.code,
        },
        ensure_ascii=False,
    )


def replayed(call: ToolCall, row: Row) -> ToolResult:
    """The recorded result, as this call's."""
    recorded = json.loads(row.result or "{}")
    return ToolResult(
        call.id,
        call.name,
        recorded.get("result"),
        recorded.get("content") or [],
        recorded.get("error"),
        recorded.get("code"),
    )


def reused(call: ToolCall, key: str, row: Row) -> ToolResult:
    """A key used again for another tool or other arguments."""
    what = "other arguments" if row.tool == call.name else f"tool {row.tool}"
    return ToolResult.failure(
        call,
        "invalid_args",
        f"Invalid arguments for tool {call.name}: the idempotency key {key!r} was used for "
        f"{what}; a key names one call: use a new key for a new call",
    )
