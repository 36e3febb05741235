"""The file side of hot reload: watchfiles' notifier, and waiting for a save to finish."""

from __future__ import annotations

from pathlib import Path

import anyio
from watchfiles._rust_notify import RustNotify  # private: see notifier()

SETTLE_STEP = 0.05
SETTLE_MAX = 2.0


def notifier(folders: list[Path]) -> RustNotify:
    """watchfiles' Rust notifier on ``folders`` (not recursive), watching once this returns.

    A private API of watchfiles, the only one hot reload uses: the public ``watch`` and
    ``awatch`` create this notifier inside their generator, on its first step, and say
    nothing once the OS watch is in place, so an edit made right after start-up could be
    missed. ``tests/repository/test_private_apis.py`` fails when its constructor or
    ``watch`` change.
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


async def settle(files: set[Path]) -> None:
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


def inside(path: Path, folder: Path) -> bool:
    """True when ``path`` (resolved) is inside ``folder``."""
    try:
        path.resolve().relative_to(folder)
    except ValueError:
        return False
    return True
