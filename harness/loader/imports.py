"""Which local files a plugin loaded by path depends on: its import graph.

The graph is read from the source (``ast``), not from what happens to be imported, so a
helper shared by two plugins counts for both even though Python imports it once. Only
relative imports lead to local files — the only kind that resolves inside a plugin folder
— and a package plugin depends on every file of its package.

Each file's imports are parsed once and cached by the file's stamp (modification time,
size, inode, change time): walking a plugin's closure again costs a ``stat`` per file, not a
parse. A file whose modification time is too recent to trust (:data:`RACY_NS`) is parsed
again on every look-up, since a second write of the same size within the file system's
timestamp granularity leaves the stamp unchanged; hot reload also :meth:`forgets
<ImportGraph.forget>` every file the watcher reports, whatever its stamp says.
"""

from __future__ import annotations

import ast
import os
import re
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

Stamp = tuple[int, int, int, int]
"""``(st_mtime_ns, st_size, st_ino, st_ctime_ns)`` of a file."""

Spec = tuple[int, tuple[str, ...], tuple[str, ...]]
"""One relative import as written: its level, its module's parts, the names it imports."""

RACY_NS = 2_000_000_000
"""How long after its last change a file's stamp is not trusted (FAT keeps 2 s times)."""


@dataclass(frozen=True, slots=True)
class Closure:
    """A plugin's local files, and the files its imports would load if they existed."""

    files: frozenset[Path]
    probes: frozenset[Path]
    """Missing candidates of its relative imports: creating one changes what it loads."""


class ImportGraph:
    """Relative imports of local files, parsed once per version of each file."""

    def __init__(self, racy_ns: int = RACY_NS) -> None:
        self.racy_ns = racy_ns
        """Files changed less than this long ago are parsed on every look-up."""
        self._specs: dict[Path, tuple[Stamp, tuple[Spec, ...]]] = {}
        self.parses = 0
        """How many files were parsed (for tests and benchmarks)."""

    def forget(self, files: Iterable[Path]) -> None:
        """Read these files again on their next look-up (they were reported changed)."""
        for file in files:
            self._specs.pop(file, None)

    def specs(self, file: Path, info: os.stat_result | None = None) -> tuple[Spec, ...]:
        """``file``'s relative imports as written (none when unreadable or invalid);
        ``info``: its ``os.stat`` when the caller has just taken it."""
        if info is None:
            try:
                info = os.stat(file)
            except OSError:
                self._specs.pop(file, None)
                return ()
        stamp = (info.st_mtime_ns, info.st_size, info.st_ino, info.st_ctime_ns)
        cached = self._specs.get(file)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        specs = _parse(file)
        self.parses += 1
        if time.time_ns() - max(info.st_mtime_ns, info.st_ctime_ns) >= self.racy_ns:
            self._specs[file] = (stamp, specs)
        else:  # may be rewritten with the same stamp: read it again next time
            self._specs.pop(file, None)
        return specs

    def imports(
        self, file: Path, info: os.stat_result | None = None
    ) -> tuple[set[Path], set[Path]]:
        """The files ``file``'s relative imports load, and the missing candidates."""
        found: set[Path] = set()
        missing: set[Path] = set()
        for level, parts, names in self.specs(file, info):
            base = file.parent
            for _ in range(level - 1):
                base = base.parent
            folder = base
            for part in parts:
                folder = folder / part
                _candidates(folder, found, missing, package_only=True)
            target = base.joinpath(*parts) if parts else base
            if parts:
                _candidates(target, found, missing)
            for name in names:
                if name != "*":
                    _candidates(target / name, found, missing)
        return found, missing

    def closure(self, source: Path) -> Closure:
        """The plugin's own files and every local file they import, transitively."""
        return self._walk(source, False, {})

    def stamped_closure(self, source: Path, is_package: bool) -> dict[Path, int]:
        """:meth:`closure`'s files of the resolved plugin file or package folder
        ``source``, each with its modification time (ns) read on the walk: a ``stat`` per
        file, once."""
        mtimes: dict[Path, int] = {}
        self._walk(source, not is_package, mtimes)
        return mtimes

    def _walk(self, source: Path, resolved: bool, mtimes: dict[Path, int]) -> Closure:
        if resolved:
            pending = [source]
        else:
            start = sorted(source.rglob("*.py")) if source.is_dir() else [source]
            pending = [path.resolve() for path in start]
        seen: set[Path] = set()
        probes: set[Path] = set()
        while pending:
            path = pending.pop()
            if path in seen:
                continue
            try:
                info = os.stat(path)
            except OSError:
                info = None
            if info is None or not stat.S_ISREG(info.st_mode):
                probes.add(path)
                continue
            seen.add(path)
            mtimes[path] = info.st_mtime_ns
            found, missing = self.imports(path, info)
            pending.extend(found)
            probes |= missing
        return Closure(frozenset(seen), frozenset(probes - seen))


GRAPH = ImportGraph()
"""The process's graph: plugins' files are the same files whoever asks."""


def local_closure(source: Path) -> set[Path]:
    """The plugin's own files and every local file they import, transitively."""
    return set(GRAPH.closure(source).files)


def relative_imports(file: Path) -> set[Path]:
    """Files that ``file``'s relative imports load (a syntax error reads as no imports)."""
    return GRAPH.imports(file)[0]


_MAY_IMPORT_RELATIVELY = re.compile(rb"\bfrom[\s\\]+\.")
"""``from`` then blanks or line continuations then a dot: every relative import has it."""


def _parse(file: Path) -> tuple[Spec, ...]:
    try:
        source = file.read_bytes()
        if not _MAY_IMPORT_RELATIVELY.search(source):
            return ()  # no relative import: nothing to parse for (most plugin files)
        tree = ast.parse(source, str(file))
    except (OSError, SyntaxError, ValueError):
        return ()
    return tuple(
        (
            node.level,
            tuple(node.module.split(".")) if node.module else (),
            tuple(alias.name for alias in node.names),
        )
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level > 0
    )


def _candidates(
    stem: Path, found: set[Path], missing: set[Path], package_only: bool = False
) -> None:
    init = stem / "__init__.py"
    if init.is_file():
        found.add(init.resolve())
        return
    module = stem.with_suffix(".py")
    if not package_only and module.is_file():
        found.add(module.resolve())
        return
    missing.add(init)
    if not package_only:
        missing.add(module)
