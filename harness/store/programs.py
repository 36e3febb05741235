"""Paused ``run_code`` programs that outlive their process (keyed programs only).

While a keyed ``run_code`` program waits for a person's approval of one of its calls,
harness:code parks it (Monty's snapshot dump, its worker freed) and keeps it here: its state
as JSON and the snapshot, owned by this process (:meth:`DurablePrograms.keep`). When the
process dies meanwhile, the next one to open the store (or another replica, within the
approvals' sweep) adopts the program: it takes over the ``run_code`` call's journal entry,
so a repeat of its key waits for the program's result instead of being answered
``interrupted``, and hands the program to harness:code, which waits for the answer without
a worker, then restores the snapshot on one and runs the program on from where it stopped.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .database import Database
from .journal import Journal

_log = logging.getLogger("harness.store")


@dataclass(frozen=True, slots=True)
class Adopted:
    """A paused program left by a process that died, now this process's to finish."""

    key: str
    """The ``run_code`` call's key (its journal entry is this process's now)."""
    state: dict[str, Any]
    """What harness:code kept beside the snapshot (its calls, output, clock...)."""
    snapshot: bytes
    """Monty's dump of the suspended program."""
    paused_at: float
    """When its wait began (``time.time()``)."""


class DurablePrograms:
    """The store's side of paused programs (``store.programs``)."""

    def __init__(self, database: Database, journal: Journal) -> None:
        self.database = database
        self.journal = journal
        self.resume: Callable[[Adopted], None] | None = None
        """Set by harness:code while it is loaded: starts an adopted program's resumption.
        Without it programs are left in the store for a process that has code mode."""

    async def keep(
        self, key: str, state: dict[str, Any], snapshot: bytes, paused_at: float
    ) -> None:
        await self.database.keep_program(key, json.dumps(state), snapshot, paused_at)

    async def drop(self, key: str) -> None:
        await self.database.drop_program(key)

    async def adopt(self, key: str | None = None) -> int:
        """Adopt the programs of processes that died (only ``key``'s, when given) and hand
        them to harness:code; how many."""
        resume = self.resume
        if resume is None:
            return 0
        adopted = 0
        for fields in await self.database.adopt_programs(key):
            if not await self.journal.take_over(fields["key"], fields["gone"]):
                # its run_code call was answered meanwhile (``interrupted``): nobody waits
                _log.info("paused program %r was answered before it could resume", fields["key"])
                await self.database.drop_program(fields["key"])
                continue
            state = json.loads(fields["state"])
            resume(Adopted(fields["key"], state, fields["snapshot"], fields["paused_at"]))
            adopted += 1
        return adopted
