"""Which local files a plugin loaded by path depends on: its import graph.

The graph is read from the source (``ast``), not from what happens to be imported, so a
helper shared by two plugins counts for both even though Python imports it once. Only
relative imports lead to local files — the only kind that resolves inside a plugin folder
— and a package plugin depends on every file of its package.
"""

from __future__ import annotations

import ast
from pathlib import Path


def local_closure(source: Path) -> set[Path]:
    """The plugin's own files and every local file they import, transitively."""
    start = [*sorted(source.rglob("*.py"))] if source.is_dir() else [source]
    seen: set[Path] = set()
    pending = [path.resolve() for path in start]
    while pending:
        path = pending.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        pending.extend(relative_imports(path))
    return seen


def relative_imports(file: Path) -> set[Path]:
    """Files that ``file``'s relative imports load (a syntax error reads as no imports)."""
    try:
        tree = ast.parse(file.read_text(encoding="utf-8"), str(file))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return set()
    found: set[Path] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        base = file.parent
        for _ in range(node.level - 1):
            base = base.parent
        parts = node.module.split(".") if node.module else []
        folder = base
        for part in parts:
            found.update(_module_files(folder / part, package_only=True))
            folder = folder / part
        target = base.joinpath(*parts) if parts else base
        if parts:
            found.update(_module_files(target))
        for alias in node.names:
            found.update(_module_files(target / alias.name))
    return found


def _module_files(stem: Path, package_only: bool = False) -> set[Path]:
    init = stem / "__init__.py"
    if init.is_file():
        return {init.resolve()}
    module = stem.with_suffix(".py")
    if not package_only and module.is_file():
        return {module.resolve()}
    return set()
