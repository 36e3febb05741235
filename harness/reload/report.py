"""What one hot reload did: the :class:`ReloadReport` its events carry, and its log lines."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..context import Context
from ..loader.config_problems import Problem

FIX_HINT = (
    "fix it and save again (the other entries keep running); `harness check` lists every problem"
)
"""What to do about a problem a reload brought: said once after the problems in the log."""


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
    """Why the reload (or part of it) was refused: the previous version keeps serving."""
    problems: list[Problem] = field(default_factory=list)
    """Every problem this reload brought that was not there before it, errors included
    (an entry the edit added broken, say): what ``reload/problems`` carries."""
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
        new = len(self.problems) - len(self.errors)
        if new > 0:
            parts.append(f"{new} new problem{'s' if new > 1 else ''}")
        return "; ".join(parts) or "nothing to do"


def new_problems(before: list[Problem], after: list[Problem]) -> list[Problem]:
    """The problems of ``after`` not in ``before`` (a problem that only moved lines, because
    lines were added above it, is the same problem)."""
    seen = {(problem.file, problem.entry, problem.message) for problem in before}
    out: list[Problem] = []
    for problem in after:
        key = (problem.file, problem.entry, problem.message)
        if key not in seen:
            seen.add(key)
            out.append(problem)
    return out


class ToolLedger:
    """The tools' definitions, kept from ``tools/change``, and what one reload changed in
    them: no pass over every tool, however many are loaded."""

    def __init__(self, root: Context) -> None:
        self._root = root
        tools = root.get("tools")
        get = tools.get if tools is not None else None  # once: a view's attribute is a look-up
        self._definitions: dict[str, Any] = (
            {name: get(name) for name in tools.list()} if tools is not None and get else {}
        )
        self._before: dict[str, Any] | None = None

    def on_change(self, kind: str, name: str) -> None:
        """The ``tools/change`` listener."""
        if self._before is not None and name not in self._before:
            self._before[name] = self._definitions.get(name)
        tools = self._root.get("tools")
        definition = tools.get(name) if kind == "added" and tools is not None else None
        if definition is not None:
            self._definitions[name] = definition
        else:
            self._definitions.pop(name, None)

    def begin(self) -> None:
        """Start recording what changes."""
        self._before = {}

    def end(self, report: ReloadReport) -> None:
        """Fill the report's tools ``added``, ``removed`` and ``changed``; stop recording."""
        before, self._before = self._before or {}, None
        for name, old in before.items():
            new = self._definitions.get(name)
            if old is None and new is not None:
                report.added.append(name)
            elif old is not None and new is None:
                report.removed.append(name)
            elif new is not old:
                report.changed.append(name)
