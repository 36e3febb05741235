"""The default project for benchmarks: the pristine ``harness init`` template in a folder of
its own, never the clone's ``cordis.yml`` (which is the user's and may say anything)."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "harness" / "templates" / "cordis.yml"


def default_project(folder: Path) -> Path:
    """Write the template into ``folder``; its ``plugins/`` links to the bundled ones (so the
    bytecode ``make`` compiled ahead is the one used). Returns the ``cordis.yml``."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(TEMPLATE, folder / "cordis.yml")
    link = folder / "plugins"
    if not link.exists():
        link.symlink_to(ROOT / "plugins", target_is_directory=True)
    return folder / "cordis.yml"
