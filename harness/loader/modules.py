"""Which plugin modules are loaded from which files, in ``sys.modules``.

Plugins loaded by path are imported as modules of a synthetic package per folder
(``harness_local_<hash>.<stem>``), so two ``tools.py`` in different folders never collide
and relative imports work. Hot reload takes the modules of changed files out of the import
system (:class:`Stash`) so the next import reads the files anew, and puts them back when the
new version is refused; forgetting a module also drops its cached bytecode.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.machinery
import importlib.util
import os
import re
import sys
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

LOCAL_PREFIX = "harness_local_"


def is_imported(module_name: str) -> bool:
    """Whether ``module_name`` is in the import system now."""
    return module_name in sys.modules


class NotLoadable(ImportError):
    """The import system has no loader for a plugin file."""


def import_file(module_name: str, path: Path, is_package: bool) -> types.ModuleType:
    """Import the plugin file or package folder ``path`` as ``module_name``, once.

    The module is in ``sys.modules`` while its code runs (so its relative imports find their
    package) and taken out again when that raises; the exception propagates.
    """
    loaded = sys.modules.get(module_name)
    if loaded is not None:
        return loaded
    file = path / "__init__.py" if is_package else path
    spec = importlib.util.spec_from_file_location(
        module_name, file, submodule_search_locations=[str(path)] if is_package else None
    )
    if spec is None or spec.loader is None:
        raise NotLoadable(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def local_module_name(path: Path, is_package: bool | None = None) -> str:
    """The unique module name of a plugin file or package folder, in its folder's package.

    ``is_package``: whether ``path`` is a package folder, when the caller knows already.
    """
    folder = str(path.parent)
    package = _PACKAGES.get(folder)
    if package is None:
        package = LOCAL_PREFIX + hashlib.sha1(folder.encode()).hexdigest()[:12]
        _PACKAGES[folder] = package
    if package not in sys.modules:
        module = types.ModuleType(package)
        module.__path__ = [folder]
        module.__package__ = package
        spec = importlib.machinery.ModuleSpec(package, None, is_package=True)
        spec.submodule_search_locations = [folder]
        module.__spec__ = spec
        sys.modules[package] = module
    if is_package is None:
        is_package = path.is_dir()
    stem = path.name if is_package else path.stem
    safe = stem if stem.isidentifier() and stem.isascii() else re.sub(r"\W", "_", stem)
    return f"{package}.{safe if safe.isidentifier() else '_' + safe}"


_PACKAGES: dict[str, str] = {}
"""Each plugin folder's package name (a hash of the folder), made once per folder."""


def local_modules_in(files: set[Path]) -> dict[str, Any]:
    """The plugin modules loaded by path (not their folder packages) from ``files``.

    Plugin modules are imported from resolved paths, so their ``__file__`` compares as a
    string: no file-system call per module, however many plugins are loaded.
    """
    wanted = {str(file) for file in files}
    return {
        name: module
        for name, module in list(sys.modules.items())
        if name.startswith(LOCAL_PREFIX)
        and "." in name
        and getattr(module, "__file__", None) in wanted
    }


def forget_modules(modules: dict[str, Any]) -> None:
    """Drop modules from the import system, and from their parent package's attributes
    (``from . import helper`` would otherwise find the old module there), and their cached
    bytecode: a ``.pyc`` is checked against its source's modification time in whole
    seconds and its size, so an edit of the same size within that second would import the
    old code."""
    for name in modules:
        sys.modules.pop(name, None)
        parent, _, child = name.rpartition(".")
        package = sys.modules.get(parent)
        if package is not None and getattr(package, child, None) is modules[name]:
            delattr(package, child)
        forget_bytecode(getattr(modules[name], "__file__", None))


def forget_bytecode(source: str | None) -> None:
    """Remove the cached bytecode of ``source``, if any (the next import compiles it)."""
    if not source or not source.endswith(".py"):
        return
    try:
        cached = importlib.util.cache_from_source(source)
    except (NotImplementedError, ValueError):  # no cache tag, or an odd name
        return
    with contextlib.suppress(OSError):
        os.unlink(cached)


def _put_back(modules: dict[str, Any]) -> None:
    sys.modules.update(modules)
    for name, module in modules.items():
        parent, _, child = name.rpartition(".")
        package = sys.modules.get(parent)
        if package is not None:
            setattr(package, child, module)


class Stash:
    """The plugin modules of some files, taken out of the import system until put back."""

    def __init__(self, files: Iterable[Path]) -> None:
        self.files = set(files)
        self.modules = local_modules_in(self.files)
        """The modules taken out, by name."""
        forget_modules(self.modules)

    @property
    def names(self) -> set[str]:
        """The names of the modules taken out."""
        return set(self.modules)

    def restore(self) -> None:
        """Drop what was imported from the files since, and put the old modules back."""
        forget_modules(local_modules_in(self.files))
        _put_back(self.modules)
