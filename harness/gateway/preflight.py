"""What is wrong with an entry before anything starts: a plain problem, never a restart loop.

A folder that does not exist, a command that is not installed or a URL that cannot be
parsed will not fix itself in half a second: retrying them with backoff would only repeat
the message and spend a process start each time. :func:`static_problem` finds them before
the first attempt; the entry then fails with what to do, and no restart is scheduled (the
user's fix, saved, is applied by hot reload). Only a server that started, or a URL that was
reached, and then failed is retried.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .config import GatewayConfig


def static_problem(config: GatewayConfig, base_dir: Path) -> str | None:
    """Why this config cannot work whatever happens later; None when it may."""
    if config.command is None:
        return None  # the URL was checked with the config
    cwd = server_cwd(config, base_dir)
    if cwd is not None and not cwd.is_dir():
        shown = config.cwd
        where = "" if Path(shown or "").is_absolute() else f" (relative to {base_dir}: {cwd})"
        return (
            f"cwd {shown!r} is not a folder{where}; create it, or set cwd to an existing "
            "folder (relative to the folder of cordis.yml), or remove cwd"
        )
    command = config.command
    if os.sep not in command:
        if shutil.which(command, path=search_path(config)) is None:
            return f"command {command!r} was not found on PATH; install it or give its full path"
        return None
    path = Path(command)
    if not path.is_absolute():
        path = (cwd or Path.cwd()) / path
    if not path.is_file():
        return f"command {command!r} does not exist ({path}); fix the path or install it"
    if not os.access(path, os.X_OK):
        return f"command {command!r} is not executable ({path}); chmod +x it or fix the path"
    return None


def server_cwd(config: GatewayConfig, base_dir: Path) -> Path | None:
    """The server's working folder: ``cwd`` relative to the folder of cordis.yml."""
    return (base_dir / config.cwd) if config.cwd else None


def search_path(config: GatewayConfig) -> str | None:
    """The PATH the command is looked up on: the entry's ``env`` one, else harness's."""
    return config.env.get("PATH") or os.environ.get("PATH")
