"""Hot reload: the ``reload`` service, which injects the ``host`` and owns each reload.

It detects changes to the config, its patches and ``.env``, and to the local source files
of plugins loaded by path (found through their import graph, kept incrementally by a
:class:`~harness.reload.index.SourceIndex`), with watchfiles; changes are debounced, and
those arriving during a reload are coalesced and handled right after it. It classifies
them (config, plugin sources, harness's own files), transacts (the host reconciles the
config, then swaps the affected entries' code in with
:meth:`~harness.host.Host.reload_entries`, all or nothing) and reports: ``reload/start``
(the changed files), then ``reload/done`` or ``reload/failed`` with a :class:`ReloadReport`,
and, when the reload brought problems (a broken entry added to the config, an edit that
does not import), ``reload/problems`` with the list of them. The file work (walking the
changed plugins' imports) runs in a worker thread, never on the event loop.
"""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
from watchfiles._rust_notify import RustNotify

from ..context import Context
from ..errors import HarnessError
from ..host import Host
from ..loader.config_problems import Problem
from ..service import Service
from .index import SourceIndex
from .report import FIX_HINT, ReloadReport, ToolLedger, new_problems
from .watcher import inside, notifier, settle

__all__ = ["HARNESS_DIR", "ReloadReport", "Reloader", "notifier"]

_log = logging.getLogger("harness.reload")

STEP_MS = 20
"""Quiet time after the last change before a batch is handled."""
DEBOUNCE_MS = 400
"""The longest a burst of changes is grouped before it is handled anyway."""
TIMEOUT_MS = 1000
"""How long one wait in the watcher thread lasts before it checks in again."""


HARNESS_DIR = Path(__file__).resolve().parent.parent
"""harness's own files: a change there needs a restart, and is only reported."""


class Reloader(Service):
    """The ``reload`` service: watches the host's files and reloads on change."""

    name = "reload"
    inject = ("host",)

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx, "reload")
        self.host: Host = ctx.host
        self.index = SourceIndex()
        self._pending: set[Path] = set()
        self._seen: set[Path] = set()
        """Changed files the watcher reported, not yet sorted (watched or not)."""
        self._wake = anyio.Event()
        self._restart = anyio.Event()
        self._folders: list[Path] = []
        self._next: RustNotify | None = None
        self._closing = False
        self._stopped = anyio.Event()
        self.reloads = 0

    async def start(self) -> None:
        self._ledger = ToolLedger(self.host.ctx)
        self.ctx.on("tools/change", self._ledger.on_change)
        await anyio.to_thread.run_sync(
            self.index.update, self.host.config_files(), self.host.source_roots(), ()
        )
        # The watch is set up here, before the host is handed back: edits made right after
        # start-up are seen (the OS queues them until the watcher thread reads them).
        self._notify = self._watcher(self.index.folders())
        self.ctx.start_soon(self._watch)
        self.ctx.start_soon(self._work)

    async def stop(self) -> None:
        # The watcher waits in a thread; its stop event ends the wait within one step,
        # where cancelling would wait for the thread's timeout.
        self._closing = True
        self._restart.set()
        with anyio.move_on_after(2):
            await self._stopped.wait()

    def request(self, paths: set[Path]) -> None:
        """Queue ``paths`` as changed (what the watcher does; useful to trigger by hand)."""
        self._pending |= paths
        self._wake.set()

    def _watcher(self, folders: list[Path]) -> RustNotify:
        self._folders = folders
        return notifier(folders)

    async def _watch(self) -> None:
        try:
            while not self._closing:
                raw = await anyio.to_thread.run_sync(
                    self._notify.watch, DEBOUNCE_MS, STEP_MS, TIMEOUT_MS, self._restart
                )
                if raw == "stop" and not self._closing and self._next is not None:
                    old, self._notify, self._next = self._notify, self._next, None
                    old.close()
                    self._restart = anyio.Event()
                elif isinstance(raw, set):
                    # sorted out when handled, not now: a reload in progress may be about to
                    # watch one of them (a helper created with the import that loads it)
                    self._seen |= {Path(path) for _, path in raw}
                    self._wake.set()
        finally:
            self._notify.close()
            if self._next is not None:
                self._next.close()
            self._stopped.set()

    def _replace_watcher(self, folders: list[Path]) -> None:
        """Watch a new folder set: set up now, swapped in by the watch loop."""
        self._next = self._watcher(folders)
        self._restart.set()

    async def _work(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            changed, self._pending = self._pending, set()
            seen, self._seen = self._seen, set()
            changed |= {path for path in seen if self.index.is_watched(path)}
            if changed:
                await self._reload(changed)

    async def _transact(self, changed: set[Path]) -> ReloadReport:
        """Classify the changes and have the host apply them: config first, then sources."""
        host = self.host
        report = ReloadReport(files=sorted(changed))
        before_problems = host.problems()
        self._ledger.begin()
        report.ignored = sorted(path for path in changed if inside(path, HARNESS_DIR))
        config_files = host.config_files()
        if changed & config_files:
            report.config = True
            try:
                await settle(changed & config_files)
                await host.reload(keep_if_emptied=True)
            except HarnessError as exc:
                report.errors.extend(
                    getattr(exc, "problems", ())
                    or [Problem.at(host.config_path, None, None, str(exc))]
                )
        sources = changed - config_files - set(report.ignored)
        if sources:
            report.entries = self.index.entries_of(sources)
            if report.entries:
                report.errors.extend(await host.reload_entries(report.entries, sources))
        self._ledger.end(report)
        report.problems = new_problems(before_problems, [*report.errors, *host.problems()])
        return report

    async def _reload(self, changed: set[Path]) -> None:
        ctx = self.ctx
        ctx.emit("reload/start", sorted(changed))
        self.index.graph.forget(changed)  # whatever their stamps say: they changed
        try:
            report = await self._transact(changed)
        except Exception:
            _log.exception("reload failed unexpectedly")
            return
        self.reloads += 1
        # the entries (and their sources) change only with the config
        roots = self.host.source_roots() if report.config else None
        await anyio.to_thread.run_sync(self.index.update, self.host.config_files(), roots, changed)
        folders = self.index.folders()
        if folders != self._folders:
            self._replace_watcher(folders)
        for path in report.ignored:
            _log.warning("%s is part of harness itself: restart harness to use the change", path)
        if report.ok:
            log = _log.warning if report.problems else _log.info
            log("reload: %s", report.summary())
        else:
            for problem in report.errors:
                _log.error("reload failed: %s", problem)
        for problem in new_problems(report.errors, report.problems):
            _log.warning("problem: %s", problem)
        if report.problems:
            _log.warning("  %s", FIX_HINT)
            ctx.emit("reload/problems", list(report.problems))
        ctx.emit("reload/done" if report.ok else "reload/failed", report)
