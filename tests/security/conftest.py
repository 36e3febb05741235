"""Shared set-up of the attack tests: a copy of the default project and its tools (the
``workspace`` and ``host`` fixtures are in tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ..helpers import ALL_ON, HARNESS, ROOT, git, run

__all__ = ["ALL_ON", "HARNESS", "PLUGINS", "ROOT", "git", "harness", "run"]

PLUGINS = ROOT / "plugins"


def harness(
    *args: str, cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run the real ``harness`` executable."""
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [HARNESS, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
