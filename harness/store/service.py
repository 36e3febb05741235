"""``harness:store``: the store that outlives a process (DESIGN §18, docs/store.md).

    - id: store
      name: harness:store
      config:
        url: sqlite:///.harness/harness.db      # or postgresql://..., shared by replicas

It opens the store when it loads (creating an SQLite file and migrating the schema), and
lends the tools service its call journal (:mod:`.journal`) and the approval object the
keeping of keyed calls' pending approvals (:mod:`.approvals`) until it unloads; MCP tasks
are kept in it too (:mod:`.tasks`). A store that is
locked, unreachable or written by a newer harness fails the entry, with the problem located
at its ``config`` in cordis.yml: calls then run unjournaled, as without the entry.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ..service import Service, unwrap
from .approvals import DurableApprovals
from .config import StoreConfig
from .database import Database
from .journal import Journal
from .programs import DurablePrograms
from .tasks import StoredTasks

if TYPE_CHECKING:
    from ..context import Context

_log = logging.getLogger("harness.store")


class StoreService(Service):
    """The open store, provided as ``ctx.store``."""

    name = "store"
    provides = ("store",)
    inject: ClassVar[dict[str, dict[str, bool]]] = {"tools": {}}
    Config = StoreConfig

    def __init__(self, ctx: Context, config: StoreConfig | None = None) -> None:
        super().__init__(ctx, "store")
        self.config = config or StoreConfig()
        self.database: Database | None = None
        self.journal: Journal | None = None
        self.programs: DurablePrograms | None = None
        """Paused run_code programs (harness:code lends it their resumption)."""
        self.tasks: StoredTasks | None = None
        """MCP tasks (the MCP surface keeps them here while the store is loaded)."""

    async def start(self) -> None:
        database = self.database = await open_store(self.config, self.ctx.base_dir)
        pruned = await database.prune(self.config.keep_days)
        if pruned:
            _log.info(
                "the journal forgot %d calls finished over %g days ago",
                pruned,
                self.config.keep_days,
            )
        self.tasks = StoredTasks(database)
        await self.tasks.purge()
        journal = self.journal = Journal(database, lambda: self.ctx.is_stopping)
        programs = self.programs = DurablePrograms(database, journal)
        tools = unwrap(self.ctx.tools)
        durable = DurableApprovals(self.ctx, database, tools.approvals, programs)
        journal.resumable = durable.adopt_program
        tools.journal, tools.approvals.keyed = journal, durable

        def lend_back() -> None:
            if tools.journal is journal:
                tools.journal = None
            if tools.approvals.keyed is durable:
                tools.approvals.keyed = None

        self.ctx.effect(lambda: lend_back)
        await durable.start()

    async def stop(self) -> None:
        if self.database is not None:
            database, self.database = self.database, None
            self.tasks = None
            await database.close()


async def open_store(config: StoreConfig, base_dir: Path) -> Database:
    """The store ``config.url`` names (an SQLite path relative to ``base_dir``), open."""
    url = config.url
    if url.startswith("sqlite:///"):
        from .sqlite import SqliteDatabase

        return await SqliteDatabase.open(
            base_dir / url.removeprefix("sqlite:///"), config.lock_timeout
        )
    from .postgres import PostgresDatabase

    return await PostgresDatabase.open(url, config.lock_timeout)
