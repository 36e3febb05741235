"""Which files hot reload watches, and which entries each one concerns, kept incrementally.

The :class:`SourceIndex` keeps each entry's import closure (its local files, and the
missing candidates of its relative imports, so creating or restoring one is seen) and the
reverse map from a file to the entries that depend on it. After a reload only the entries
whose files changed, or whose source the config changed, are walked again; the per-file
parse cache of :class:`~harness.loader.imports.ImportGraph` makes that walk a few ``stat``
calls. The watched set and its folders are counted, so they cost nothing when unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from ..loader.imports import GRAPH, ImportGraph


class SourceIndex:
    """Each entry's closure, the reverse map, and the watched files and folders."""

    def __init__(self, graph: ImportGraph = GRAPH) -> None:
        self.graph = graph
        self._roots: dict[str, Path | None] = {}
        self._closures: dict[str, frozenset[Path]] = {}
        self._users: dict[Path, set[str]] = {}
        self._config: frozenset[Path] = frozenset()
        self._folders: dict[Path, int] = {}
        self.walks = 0
        """How many entries' closures were walked (for tests and benchmarks)."""

    def is_watched(self, path: Path) -> bool:
        """True when a change to ``path`` concerns the config or an entry."""
        return path in self._users or path in self._config

    @property
    def watched(self) -> set[Path]:
        """Every watched file (a copy: the config files and each entry's closure)."""
        return set(self._config).union(self._users)

    def folders(self) -> list[Path]:
        """The existing folders of the watched files, what the watcher watches."""
        return sorted(folder for folder in self._folders if folder.is_dir())

    def entries_of(self, files: Iterable[Path]) -> list[str]:
        """The entries that depend on any of ``files``, in config order."""
        hit: set[str] = set()
        for file in files:
            hit |= self._users.get(file, set())
        return [entry_id for entry_id in self._roots if entry_id in hit]

    def update(
        self,
        config: Iterable[Path],
        roots: Mapping[str, Path | None] | None,
        changed: Iterable[Path],
    ) -> None:
        """Bring the index up to date after ``changed`` files changed (file work: may run in
        a thread). ``roots`` are the host's entry sources (None: the same entries as
        before); only the entries whose source is new or moved, or whose closure holds a
        changed file, are walked again."""
        changed = set(changed)
        self.graph.forget(changed)
        dirty = set(self.entries_of(changed))
        config = frozenset(config)
        for path in self._config - config:
            self._count(path, -1)
        for path in config - self._config:
            self._count(path, +1)
        self._config = config
        if roots is None:
            for entry_id in dirty:
                self._set(entry_id, self._walk(self._roots[entry_id]))
            return
        for entry_id in [entry_id for entry_id in self._roots if entry_id not in roots]:
            self._set(entry_id, frozenset())
            del self._roots[entry_id]
        old = self._roots
        self._roots = dict(roots)
        for entry_id, root in roots.items():
            if entry_id in dirty or entry_id not in old or old[entry_id] != root:
                self._set(entry_id, self._walk(root))

    def _walk(self, root: Path | None) -> frozenset[Path]:
        if root is None:
            return frozenset()
        self.walks += 1
        if not root.exists():  # watched, so that creating it is seen
            return frozenset({root})
        closure = self.graph.closure(root)
        return closure.files | closure.probes

    def _set(self, entry_id: str, files: frozenset[Path]) -> None:
        old = self._closures.get(entry_id, frozenset())
        if old == files:
            return
        for path in old - files:
            users = self._users[path]
            users.discard(entry_id)
            if not users:
                del self._users[path]
                self._count(path, -1)
        for path in files - old:
            users = self._users.setdefault(path, set())
            if not users:
                self._count(path, +1)
            users.add(entry_id)
        if files:
            self._closures[entry_id] = files
        else:
            self._closures.pop(entry_id, None)

    def _count(self, path: Path, step: int) -> None:
        # the config files and the closures may share a file: count each set's claim
        folder = path.parent
        count = self._folders.get(folder, 0) + step
        if count > 0:
            self._folders[folder] = count
        else:
            self._folders.pop(folder, None)
