"""``harness init``: a starter project (``cordis.yml``, the bundled ``plugins/``, ``workspace/``).

``cordis.yml`` comes from the tracked template ``harness/templates/cordis.yml`` (package
data: the same file in a clone and in the wheel, whatever the clone's own ``cordis.yml``
says), with the model section for the provider :mod:`.providers` finds. The bundled plugins
ship inside the wheel (``harness/bundled/plugins``); in a clone they are the repository's
``plugins/``. Nothing that already exists is ever overwritten: a file that is there is kept
and reported.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import HarnessError
from .providers import Found, find_provider, model_section

PACKAGE = Path(__file__).resolve().parent.parent
TEMPLATE = PACKAGE / "templates" / "cordis.yml"
"""The pristine starter config (tracked; never the clone's own ``cordis.yml``)."""


@dataclass
class InitReport:
    """What ``init`` did, in order: ``(action, path)`` with action ``made``, ``wrote`` or
    ``kept`` (paths relative to the target folder)."""

    actions: list[tuple[str, str]] = field(default_factory=list)
    provider: Found | None = None
    """The model provider the written ``cordis.yml`` uses (None: none found, or kept)."""

    def of(self, action: str) -> list[str]:
        """The paths of one kind of action."""
        return [path for kind, path in self.actions if kind == action]

    def lines(self) -> list[str]:
        """The report as the CLI prints it."""
        words = {"made": "made {}/", "wrote": "wrote {}", "kept": "kept {} (it exists)"}
        lines = [words[kind].format(path) for kind, path in self.actions]
        if "cordis.yml" in self.of("wrote"):
            found = self.provider
            lines.append(
                f"model: {found.label}, because {found.what}"
                if found is not None
                else "model: none found (set OPENAI_API_KEY, DEEPSEEK_API_KEY or "
                "ANTHROPIC_API_KEY, or start Ollama); the model and agent entries are off, "
                "and `harness chat --demo` needs none"
            )
        return lines


def bundled_root() -> Path:
    """The folder holding the bundled ``plugins/``."""
    for candidate in (PACKAGE / "bundled", PACKAGE.parent):
        if (candidate / "plugins" / "echo.py").is_file() and TEMPLATE.is_file():
            return candidate
    raise HarnessError(
        f"the bundled plugins are missing from this installation ({PACKAGE}); "
        "reinstall cordis-harness"
    )


def starter_config(target: Path) -> tuple[str, Found | None]:
    """The ``cordis.yml`` ``init`` writes into ``target``, and the provider it names."""
    found = find_provider(target)
    return model_section(TEMPLATE.read_text(encoding="utf-8"), found), found


def init_project(target: Path) -> InitReport:
    """Write the starter files into ``target`` (created if missing), keeping existing ones."""
    source = bundled_root()
    report = InitReport()
    if target.exists() and not target.is_dir():
        raise HarnessError(f"{target} is a file, not a folder; give harness init a folder")
    config = target / "cordis.yml"
    if config.exists() or config.is_symlink():
        report.actions.append(("kept", "cordis.yml"))
    else:
        _make_folder(target, target, report)
        text, found = starter_config(target)
        try:
            with config.open("x", encoding="utf-8") as dst:  # "x": never replace a new file
                dst.write(text)
        except FileExistsError:
            report.actions.append(("kept", "cordis.yml"))
        else:
            report.actions.append(("wrote", "cordis.yml"))
            report.provider = found
    plugins = sorted(
        path.relative_to(source) for path in (source / "plugins").glob("*.py") if path.is_file()
    )
    for relative in plugins:
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
