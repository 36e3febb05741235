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
from watchfiles import Change, awatch

from .context import Context
from .service import Service

if TYPE_CHECKING:
    from .host import Host

_log = logging.getLogger("harness.reload")

STEP_MS = 20
"""Quiet time after the last change before a batch is handled."""
DEBOUNCE_MS = 400
"""The longest a burst of changes is grouped before it is handled anyway."""


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
        self._closing = False
        self._stopped = anyio.Event()
        self.reloads = 0

    async def start(self) -> None:
        self._watched = self.host.watched_files()
        self.ctx.start_soon(self._watch)
        self.ctx.start_soon(self._work)

    async def stop(self) -> None:
        # The watcher waits in a thread; its stop event ends the wait within one step,
        # where cancelling would wait for watchfiles' rust timeout (seconds).
        self._closing = True
        self._restart.set()
        with anyio.move_on_after(2):
            await self._stopped.wait()

    def request(self, paths: set[Path]) -> None:
        """Queue ``paths`` as changed (what the watcher does; useful to trigger by hand)."""
        self._pending |= paths
        self._wake.set()

    async def _watch(self) -> None:
        try:
            await self._watch_folders()
        finally:
            self._stopped.set()

    async def _watch_folders(self) -> None:
        while not self._closing:
            self._folders = _folders(self._watched)
            self._restart = anyio.Event()

            def keep(change: Change, raw: str) -> bool:
                return Path(raw) in self._watched  # read live: new files need no restart

            async for changes in awatch(
                *self._folders,
                watch_filter=keep,
                step=STEP_MS,
                debounce=DEBOUNCE_MS,
                stop_event=self._restart,
                recursive=False,
            ):
                self.request({Path(raw) for _, raw in changes})

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
                self._restart.set()
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
