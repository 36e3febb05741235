"""Hot reload: the ``reload`` service, which injects the ``host`` and owns each reload.

It detects changes to the config, its patches and ``.env``, and to the local source files
of plugins loaded by path (found through their import graph), with watchfiles; changes
are debounced, and those arriving during a reload are coalesced and handled right after
it. It classifies them (config, plugin sources, harness's own files), transacts (the host
reconciles the config, then swaps the affected entries' code in with
:meth:`~harness.host.Host.reload_entries`, all or nothing) and reports: ``reload/start``
(the changed files), then ``reload/done`` or ``reload/failed`` with a :class:`ReloadReport`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from watchfiles._rust_notify import RustNotify  # private: see notifier()

from .context import Context
from .errors import ConfigError, HarnessError
from .host import Host
from .loader.problems import Problem
from .service import Service

_log = logging.getLogger("harness.reload")

STEP_MS = 20
"""Quiet time after the last change before a batch is handled."""
DEBOUNCE_MS = 400
"""The longest a burst of changes is grouped before it is handled anyway."""
TIMEOUT_MS = 1000
"""How long one wait in the watcher thread lasts before it checks in again."""


HARNESS_DIR = Path(__file__).resolve().parent
"""harness's own files: a change there needs a restart, and is only reported."""


@dataclass
class ReloadReport:
    """What one hot reload did, as ``reload/done`` and ``reload/failed`` carry it."""

    files: list[Path]
    config: bool = False
    """The config (or a patch, or .env) changed and was reconciled."""
    entries: list[str] = field(default_factory=list)
    """Entries whose sources changed and were reloaded."""
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    """Tools whose definition was replaced."""
    errors: list[Problem] = field(default_factory=list)
    ignored: list[Path] = field(default_factory=list)
    """Changed files of harness itself (a restart is needed to use them)."""

    @property
    def ok(self) -> bool:
        """True when nothing failed."""
        return not self.errors

    def summary(self) -> str:
        """One line for the log."""
        parts = []
        if self.config:
            parts.append("config reconciled")
        if self.entries:
            parts.append("reloaded " + ", ".join(self.entries))
        for label, names in (
            ("added", self.added),
            ("removed", self.removed),
            ("changed", self.changed),
        ):
            if names:
                parts.append(f"tools {label}: {', '.join(names)}")
        return "; ".join(parts) or "nothing to do"


class Reloader(Service):
    """The ``reload`` service: watches the host's files and reloads on change."""

    name = "reload"
    inject = ("host",)

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx, "reload")
        self.host: Host = ctx.host
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
        self._watched = self._watched_files()
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

    def _watched_files(self) -> set[Path]:
        """The config files, and every local source file of plugins loaded by path."""
        return self.host.config_files().union(*self.host.sources().values())

    async def _transact(self, changed: set[Path]) -> ReloadReport:
        """Classify the changes and have the host apply them: config first, then sources."""
        host = self.host
        report = ReloadReport(files=sorted(changed))
        before = _tools(host)
        report.ignored = sorted(path for path in changed if _inside(path, HARNESS_DIR))
        config_files = host.config_files()
        if changed & config_files:
            report.config = True
            try:
                await _settle(changed & config_files)
                _check_not_emptied(host)
                await host.reload()
            except HarnessError as exc:
                report.errors.extend(
                    getattr(exc, "problems", ())
                    or [Problem.at(host.config_path, None, None, str(exc))]
                )
        sources = changed - config_files - set(report.ignored)
        if sources:
            report.entries = [
                entry_id for entry_id, files in host.sources().items() if files & sources
            ]
            if report.entries:
                report.errors.extend(await host.reload_entries(report.entries))
        after = _tools(host)
        report.added = [name for name in after if name not in before]
        report.removed = [name for name in before if name not in after]
        report.changed = [
            name for name in after if name in before and after[name] is not before[name]
        ]
        return report

    async def _reload(self, changed: set[Path]) -> None:
        ctx = self.ctx
        ctx.emit("reload/start", sorted(changed))
        try:
            report = await self._transact(changed)
        except Exception:
            _log.exception("reload failed unexpectedly")
            return
        self.reloads += 1
        watched = self._watched_files()
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


SETTLE_STEP = 0.05
SETTLE_MAX = 2.0


async def _settle(files: set[Path]) -> None:
    """Wait (up to SETTLE_MAX) until the files stop changing: an editor that saves in place
    (truncate, then write) is done before the config is read."""

    def stamp() -> list[tuple[int, int] | None]:
        out: list[tuple[int, int] | None] = []
        for file in sorted(files):
            try:
                info = file.stat()
                out.append((info.st_size, info.st_mtime_ns))
            except OSError:
                out.append(None)
        return out

    waited, last = 0.0, stamp()
    while waited < SETTLE_MAX:
        await anyio.sleep(SETTLE_STEP)
        waited += SETTLE_STEP
        now = stamp()
        if now == last:
            return
        last = now


def _check_not_emptied(host: Host) -> None:
    """An emptied config (a save caught half-way) keeps the running state, not no plugins."""
    try:
        text = host.config_path.read_bytes()
    except OSError:
        return
    if not text.strip() and host.loaded is not None and host.loaded.entries:
        raise ConfigError(
            f"{host.config_path} is empty (a save in progress?); keeping the running "
            "config until it holds entries again",
            problems=[
                Problem.at(
                    host.config_path,
                    None,
                    None,
                    "the config file is empty (a save in progress?); keeping the running "
                    "config until it holds entries again",
                )
            ],
        )


def _folders(files: set[Path]) -> list[Path]:
    return sorted({path.parent for path in files if path.parent.is_dir()})


def notifier(folders: list[Path]) -> RustNotify:
    """watchfiles' Rust notifier on ``folders`` (not recursive), watching once this returns.

    A private API of watchfiles, the only one hot reload uses: the public ``watch`` and
    ``awatch`` create this notifier inside their generator, on its first step, and say
    nothing once the OS watch is in place, so an edit made right after start-up could be
    missed. ``tests/test_private_apis.py`` fails when its constructor or ``watch`` change.
    Call ``notifier(...).watch(debounce_ms, step_ms, timeout_ms, stop_event)`` in a
    thread: it returns the ``(change, path)`` set, or ``"stop"`` / ``"timeout"``.
    """
    return RustNotify(
        [str(folder) for folder in folders],
        debug=False,
        force_polling=False,
        poll_delay_ms=300,
        recursive=False,
        ignore_permission_denied=False,
    )


def _tools(host: Host) -> dict[str, Any]:
    tools = host.ctx.get("tools")
    if tools is None:
        return {}
    return {name: tools.get(name) for name in tools.list()}


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder)
    except ValueError:
        return False
    return True
