"""A problem found while loading ``cordis.yml``: what, in which file, on which line, which entry."""

from __future__ import annotations

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
