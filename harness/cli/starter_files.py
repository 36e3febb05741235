"""``harness init``: a starter project (``cordis.yml``, the bundled ``plugins/``, ``workspace/``).

The bundled plugins and the default ``cordis.yml`` ship inside the wheel (``harness/bundled``);
in a clone they are the repository's own ``plugins/`` and ``cordis.yml``. Nothing that
already exists is ever overwritten: a file that is there is kept and reported.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import HarnessError

PACKAGE = Path(__file__).resolve().parent.parent


@dataclass
class InitReport:
    """What ``init`` did, in order: ``(action, path)`` with action ``made``, ``wrote`` or
    ``kept`` (paths relative to the target folder)."""

    actions: list[tuple[str, str]] = field(default_factory=list)

    def of(self, action: str) -> list[str]:
        """The paths of one kind of action."""
        return [path for kind, path in self.actions if kind == action]

    def lines(self) -> list[str]:
        """The report as the CLI prints it."""
        words = {"made": "made {}/", "wrote": "wrote {}", "kept": "kept {} (it exists)"}
        return [words[kind].format(path) for kind, path in self.actions]


def bundled_root() -> Path:
    """The folder holding the bundled ``cordis.yml`` and ``plugins/``."""
    for candidate in (PACKAGE / "bundled", PACKAGE.parent):
        if (candidate / "cordis.yml").is_file() and (candidate / "plugins").is_dir():
            return candidate
    raise HarnessError(
        f"the bundled plugins are missing from this installation ({PACKAGE}); "
        "reinstall cordis-harness"
    )


def init_project(target: Path) -> InitReport:
    """Write the starter files into ``target`` (created if missing), keeping existing ones."""
    source = bundled_root()
    report = InitReport()
    if target.exists() and not target.is_dir():
        raise HarnessError(f"{target} is a file, not a folder; give harness init a folder")
    files = [Path("cordis.yml")]
    files += sorted(
        path.relative_to(source) for path in (source / "plugins").glob("*.py") if path.is_file()
    )
    for relative in files:
        destination = target / relative
        if destination.exists() or destination.is_symlink():
            report.actions.append(("kept", relative.as_posix()))
            continue
        _make_folder(destination.parent, target, report)
        try:
            # "x": never replace a file that appeared meanwhile
            with (source / relative).open("rb") as src, destination.open("xb") as dst:
                shutil.copyfileobj(src, dst)
        except (FileExistsError, NotADirectoryError):
            report.actions.append(("kept", relative.as_posix()))
            continue
        report.actions.append(("wrote", relative.as_posix()))
    _make_folder(target / "workspace", target, report)
    return report


def _make_folder(folder: Path, target: Path, report: InitReport) -> None:
    if folder.is_dir():
        return
    if folder.exists() or folder.is_symlink():
        report.actions.append(("kept", folder.relative_to(target).as_posix()))
        return
    folder.mkdir(parents=True)
    if folder != target:
        report.actions.append(("made", folder.relative_to(target).as_posix()))
