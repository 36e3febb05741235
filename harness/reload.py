"""Hot reload: a plugin that watches files and asks the host to reload what changed.

It watches the config, its patches and ``.env``, and the local source files of plugins
loaded by path (found through their import graph), with watchfiles. Changes are debounced;
changes arriving during a reload are coalesced and handled right after it. Each reload
emits ``reload/start`` (the changed files), then ``reload/done`` or ``reload/failed`` (a
:class:`~harness.host.ReloadReport`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from watchfiles._rust_notify import RustNotify  # awatch cannot say when it is ready

from .context import Context
from .service import Service

if TYPE_CHECKING:
    from .host import Host

_log = logging.getLogger("harness.reload")

STEP_MS = 20
"""Quiet time after the last change before a batch is handled."""
DEBOUNCE_MS = 400
"""The longest a burst of changes is grouped before it is handled anyway."""
TIMEOUT_MS = 1000
"""How long one wait in the watcher thread lasts before it checks in again."""


class Reloader(Service):
    """The ``reload`` service: watches the host's files and reloads on change."""

    name = "reload"

    def __init__(self, ctx: Context, host: Host) -> None:
        super().__init__(ctx, "reload")
        self.host = host
        self._pending: set[Path] = set()
        self._wake = anyio.Event()
        self._restart = anyio.Event()
        self._watched: set[Path] = set()
        self._folders: list[Path] = []
        self._next: RustNotify | None = None
        self._closing = False
        self._stopped = anyio.Event()
        self.reloads = 0

    async def start(self) -> None:
        self._watched = self.host.watched_files()
        # The watch is set up here, before the host is handed back: edits made right after
        # start-up are seen (the OS queues them until the watcher thread reads them).
        self._notify = self._watcher(_folders(self._watched))
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
        return RustNotify([str(folder) for folder in folders], False, False, 300, False, False)

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
                    changed = {Path(path) for _, path in raw} & self._watched
                    if changed:
                        self.request(changed)
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
            await self._reload(changed)

    async def _reload(self, changed: set[Path]) -> None:
        ctx = self.ctx
        ctx.emit("reload/start", sorted(changed))
        try:
            report = await self.host.reload_files(changed)
        except Exception:
            _log.exception("reload failed unexpectedly")
            return
        self.reloads += 1
        watched = self.host.watched_files()
        if watched != self._watched:
            self._watched = watched
            if _folders(watched) != self._folders:
                self._replace_watcher(_folders(watched))
        for path in report.ignored:
            _log.warning("%s is part of harness itself: restart harness to use the change", path)
        if report.ok:
            _log.info("reload: %s", report.summary())
            ctx.emit("reload/done", report)
        else:
            for problem in report.errors:
                _log.error("reload failed: %s", problem)
            ctx.emit("reload/failed", report)


def _folders(files: set[Path]) -> list[Path]:
    return sorted({path.parent for path in files if path.parent.is_dir()})
