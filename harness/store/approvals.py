"""Pending approvals that outlive their process (keyed calls only).

While a keyed call waits for a person's approval, its request is kept in the store (before
anyone is shown it). When the process dies meanwhile, or stops (a request whose call the
stop cuts off is left in the store, not denied), the next one to open the store (this host
restarted), or another replica within :data:`SWEEP` seconds, adopts the request: it is
listed again (``pending()``, ``GET /api/approvals``) with the same id, and once it is
allowed the call runs, once, through the call journal, where the client's repeat of the key
finds its result. A repeat that arrives while the request is still open waits for the same
answer instead of asking again; a repeat of a call the journal holds is not asked about
again (the person approved it; the journal answers it).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
from typing import TYPE_CHECKING, Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..tools.approval_contract import Approved, Denied
from ..tools.approval_requests import Approvals, Request
from ..tools.calls import ToolCall
from .database import Database
from .journal import digest_of
from .programs import DurablePrograms

if TYPE_CHECKING:
    from ..context import Context

_log = logging.getLogger("harness.store")
SWEEP = 2.0
"""Seconds between looks for requests a dead process left (another replica's)."""


class DurableApprovals:
    """The store's side of one approval object (``approvals.keyed``)."""

    def __init__(
        self,
        ctx: Context,
        database: Database,
        approvals: Approvals,
        programs: DurablePrograms | None = None,
    ) -> None:
        self.ctx = ctx
        self.programs = programs
        """Paused programs, adopted after the requests they wait for."""
        self.database = database
        self.approvals = approvals
        self._revived: dict[str, Request] = {}
        """Adopted requests still open, by the key of their call."""
        self._granted: set[str] = set()
        """Keys of adopted requests that were allowed: their next ask is answered yes."""
        self._writes: MemoryObjectSendStream[tuple[str, Any]] | None = None
        self._kept: set[str] = set()
        """Ids of the requests this process keeps in the store (open ones)."""

    async def start(self) -> None:
        """Write requests in the order they come; adopt the dead processes' requests."""
        writes, pending = anyio.create_memory_object_stream[tuple[str, Any]](math.inf)
        self._writes = writes
        self.ctx.effect(lambda: writes.close)
        self.ctx.start_soon(self._write, pending)
        self.ctx.on("approval/decided", self._decided)
        await self._adopt()
        self.ctx.start_soon(self._sweep)

    async def _sweep(self) -> None:
        """Adopt the requests of a replica that dies while this one runs."""
        while True:
            await anyio.sleep(SWEEP)
            try:
                await self._adopt()
            except Exception:
                _log.exception("the store could not look for approvals left by a dead process")

    async def _adopt(self) -> None:
        for fields in await self.database.adopt_approvals():
            call = ToolCall(
                f"resumed-{fields['id'][:8]}",
                fields["tool"],
                json.loads(fields["args"]),
                session=fields["session"],
                client=fields["client"],
                key=fields["key"],
            )
            self._kept.add(fields["id"])
            request = self.approvals.revive(fields["id"], call, fields["reason"])
            self._revived[fields["key"]] = request
            self.ctx.start_soon(self._resume, request)
        if self.programs is not None:
            await self.programs.adopt()

    async def adopt_program(self, key: str) -> None:
        """Adopt now the paused program of ``key`` if a dead process left one (a repeat of
        its key came before the sweep), after the requests its calls wait for."""
        await self._adopt()
        if self.programs is not None:
            await self.programs.adopt(key)

    async def before(self, call: ToolCall) -> Approved | Denied | None:
        key = call.key
        assert key is not None
        if key in self._granted:
            self._granted.discard(key)
            return Approved("once")
        revived = self._revived.get(key)
        if revived is not None and revived.call.name == call.name:
            await revived.done.wait()  # the same request: one answer for both
            return _outcome(revived)
        row = await self.database.row(key)
        if row is not None and (row.tool, row.digest) == (call.name, digest_of(call.args)):
            return Approved("once")  # approved before: the journal answers it
        return None

    async def _resume(self, request: Request) -> None:
        """Wait for an adopted request's answer (its timeout restarts), then run its call."""
        with anyio.move_on_after(self.approvals.timeout):
            await request.done.wait()
        if not request.done.is_set():
            why = f"no answer within {self.approvals.timeout:g} seconds"
            self.approvals.answer(request.id, "deny", why)
        key = request.call.key
        assert key is not None
        self._revived.pop(key, None)
        if isinstance(_outcome(request), Approved):
            self._granted.add(key)
            result = await self.ctx.tools.execute(request.call)
            _log.info(
                "approved after a restart: %s (key %r) ended %s",
                request.call.name,
                key,
                result.code or "ok",
            )

    async def opened(self, id: str, call: ToolCall, reason: str) -> None:
        kept = {
            "id": id,
            "key": call.key,
            "tool": call.name,
            "args": json.dumps(call.args),
            "reason": reason,
            "session": call.session,
            "client": call.client,
        }
        try:
            await self.database.keep_approval(kept)
            self._kept.add(id)
        except Exception:
            _log.exception("the store could not keep approval request %s", id)

    def outlives(self, id: str) -> bool:
        """Whether request ``id`` stays in the store when its call is cut off now: the host
        is stopping (the next process on the store adopts it, as after ``kill -9``)."""
        return id in self._kept and self.ctx.is_stopping

    def _decided(self, fields: dict[str, Any]) -> None:
        if fields["id"] in self._kept:
            self._kept.discard(fields["id"])
            self._send("drop", fields["id"])

    def _send(self, kind: str, value: Any) -> None:
        if self._writes is not None:
            with contextlib.suppress(anyio.ClosedResourceError):
                self._writes.send_nowait((kind, value))

    async def _write(self, pending: MemoryObjectReceiveStream[tuple[str, Any]]) -> None:
        """Forget decided requests, in order (an event listener cannot await)."""
        async with pending:
            async for _, id in pending:
                try:
                    await self.database.drop_approval(id)
                except Exception:
                    _log.exception("the store could not forget approval request %s", id)


def _outcome(request: Request) -> Approved | Denied:
    if request.decision in (None, "deny"):
        return Denied(f"denied by the user: {request.why}" if request.why else "denied by the user")
    return Approved("once")
