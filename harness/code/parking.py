"""Where programs wait for a person: parked, holding no sandbox worker, within bounds.

A program one of whose calls waits for an approval is parked (:meth:`.program.Program._wait`):
its snapshot dump goes to the host and its worker back to the pool. The :class:`Lot` of an
entry bounds that: a dump longer than ``max_snapshot`` is not kept, no more than
``max_paused`` programs wait at once, and none for longer than ``pause_timeout``; each is a
clear failure of that program, never a worker held. A keyed program (its ``run_code`` call
has a key) with a store loaded is also kept in the store (:mod:`harness.store.programs`),
so that it resumes after a restart, or on another replica, from its snapshot; a graceful
stop of the host leaves it there too, as ``kill -9`` does (a person's Stop forgets it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from ..store.programs import DurablePrograms
from ..tools.calls import ToolCall, ToolResult
from .config import CodeConfig
from .program import ProgramFailed, Wait
from .results import CallRecord

if TYPE_CHECKING:
    from .program import Program

_log = logging.getLogger("harness.code")


class Lot:
    """The programs of one ``harness:code`` entry parked now, and its bounds."""

    def __init__(
        self,
        config: CodeConfig,
        store: Callable[[], DurablePrograms | None],
        stopping: Callable[[], bool] = lambda: False,
    ) -> None:
        self.config = config
        self.store = store
        """The store's paused programs, when ``harness:store`` is loaded (else None)."""
        self.stopping = stopping
        """Whether the host is stopping: a program it cuts off while parked stays kept."""
        self.count = 0
        """Programs parked now (those resumed from the store and still waiting included)."""

    def spot(self, call: ToolCall, code: str, records: list[CallRecord]) -> Spot:
        """The parking of the program of ``call`` (a ``run_code`` call)."""
        return Spot(self, call, code, records)


class Spot:
    """One program's parking: counted, timed, and kept in the store when it has a key."""

    def __init__(self, lot: Lot, call: ToolCall, code: str, records: list[CallRecord]) -> None:
        self.lot = lot
        self.call = call
        self.code = code
        self.records = records
        self.limit = lot.config.max_snapshot
        self.kept = False
        """Whether the store holds this program now."""

    async def park(self, program: Program, wait: Wait) -> None:
        lot, config = self.lot, self.lot.config
        if lot.count >= config.max_paused:
            raise ProgramFailed(
                f"{lot.count} programs already wait for an approval (max_paused "
                f"{config.max_paused}); this one was stopped rather than hold a sandbox "
                "worker: answer the waiting approvals, or raise max_paused"
            )
        lot.count += 1
        try:
            await self._keep(program, wait)
            since = program.paused_at or time.time()
            await anyio.sleep(max(0.0, since + config.pause_timeout - time.time()))
            raise ProgramFailed(
                f"the program waited for an approval longer than pause_timeout "
                f"({config.pause_timeout:g} seconds); it was stopped"
            )
        finally:
            lot.count -= 1

    async def _keep(self, program: Program, wait: Wait) -> None:
        """Keep a keyed program in the store, if one is loaded (else in this host only)."""
        key, programs, snapshot = self.call.key, self.lot.store(), program.session.state
        if key is None or programs is None or snapshot is None:
            return
        state = {
            "id": self.call.id,
            "session": self.call.session,
            "client": self.call.client,
            "code": self.code,
            "wait": wait,
            "program": program.state(),
            "spent": program.clock.spent() if program.clock is not None else 0.0,
            "records": [dump_record(r) for r in self.records if r.result is not None],
        }
        try:
            await programs.keep(key, state, snapshot, program.paused_at or time.time())
        except Exception:
            _log.exception("the store could not keep paused program %r (key %r)", self.call.id, key)
            return
        self.kept = True

    async def unparked(self, program: Program) -> None:
        programs = self.lot.store()
        if not self.kept or programs is None or self.call.key is None:
            return
        if program.session.parked and self.lot.stopping():
            return  # cut off by the host's stop while it waited: the next process resumes it
        self.kept = False
        try:
            await programs.drop(self.call.key)
        except Exception:
            _log.exception("the store could not forget paused program %r", self.call.id)


def dump_record(record: CallRecord) -> dict[str, Any]:
    """An inner call's record as JSON (kept with a paused program)."""
    call, result = record.call, record.result
    assert result is not None
    return {
        "id": call.id,
        "name": call.name,
        "args": call.args,
        "parent": call.parent,
        "result": [result.result, result.content, result.error, result.code],
        "duration_ms": record.duration_ms,
    }


def load_record(fields: dict[str, Any]) -> CallRecord:
    """A record from :func:`dump_record`'s JSON."""
    call = ToolCall(fields["id"], fields["name"], fields["args"], parent=fields["parent"])
    value, content, error, code = fields["result"]
    result = ToolResult(call.id, call.name, value, content, error, code)
    return CallRecord(call, result, fields["duration_ms"])
