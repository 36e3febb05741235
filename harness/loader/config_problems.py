"""A problem found while loading ``cordis.yml``: what, in which file, on which line, which entry."""

from __future__ import annotations

import os
import shlex
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Problem:
    """One located problem; ``entry`` is the entry id when one is concerned."""

    file: str
    line: int | None
    entry: str | None
    message: str

    @classmethod
    def at(cls, file: Path | str, line: int | None, entry: str | None, message: str) -> Problem:
        """A problem in ``file`` (kept as given, made absolute)."""
        return cls(str(Path(file).absolute()), line, entry, message)

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        who = f" entry {self.entry!r}:" if self.entry else ""
        return f"{where}:{who} {self.message}"

    def to_dict(self) -> dict[str, Any]:
        """``{"file", "line", "entry", "message"}``."""
        return asdict(self)


def fix_hint(live: bool) -> str:
    """What to do about the problems a command reports: ``live`` when hot reload is on."""
    if live:
        return (
            "fix each one at its file and line and save: hot reload applies the fix, and the "
            "other entries keep running meanwhile"
        )
    return (
        "fix each one at its file and line, then run the command again (`harness check` "
        "lists every problem); the other entries load meanwhile"
    )


def missing_config(file: Path) -> str:
    """What to do when there is no config file ``file``: ``harness init`` its folder (the
    folder as the person would type it), unless the file has a name init does not write."""
    if file.name != "cordis.yml":
        return "check the path (-c FILE, or $HARNESS_CONFIG)"
    folder = os.path.relpath(file.parent)
    if folder == ".":
        where, there = "", "here"
    else:
        shown = folder if not folder.startswith("..") else str(file.parent)
        where, there = f" {shlex.quote(shown)}", f"in {file.parent}"
    return (
        f"run `harness init{where}` to write a starter project {there} (cordis.yml, plugins/, "
        "workspace/), or pass -c FILE"
    )
