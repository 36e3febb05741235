"""Turning an entry's ``name`` into a plugin object.

In order: a path (``./``, ``../``, ``/`` or ending in ``.py``; a folder with ``__init__.py``
is a package) relative to the declaring file; ``harness:<builtin>``; a plugin named in the
``harness.plugins`` entry-point group of installed distributions (loaded through pluggy,
which also lets distributions in the ``harness.resolvers`` group answer
``harness_resolve_plugin(name)``: :mod:`harness.loader.hooks`, imported only when a name
gets that far); else an importable module ``pkg.mod`` or ``pkg.mod:attr``.

Plugins loaded by path are imported as modules of a synthetic package per folder
(``harness_local_<hash>``): module names are unique, two ``echo.py`` in different folders
never collide, and relative imports (``from . import helpers``) work in plugin files and
plugin packages alike.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import re
import stat
import traceback
import types
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import HarnessError, PluginError
from ..plugin import check_plugin
from .builtin import BUILTINS
from .imports import GRAPH
from .modules import (
    NotLoadable,
    forget_modules,
    import_file,
    is_imported,
    local_module_name,
    local_modules_in,
)

if TYPE_CHECKING:
    import pluggy

    from .hooks import hookimpl as hookimpl
    from .hooks import hookspec as hookspec

PLUGIN_GROUP = "harness.plugins"
RESOLVER_GROUP = "harness.resolvers"


def __getattr__(name: str) -> Any:
    """``hookimpl`` and ``hookspec``, still importable from here (they live in hooks)."""
    if name in ("hookimpl", "hookspec"):
        from . import hooks

        return getattr(hooks, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ResolveError(HarnessError):
    """Raised when an entry's name cannot be turned into a plugin."""

    def __init__(self, message: str, location: tuple[str, int] | None = None) -> None:
        self.location = location
        if location:
            message = f"{message} ({location[0]}:{location[1]})"
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class Resolved:
    """A resolved plugin and where its code lives (``files`` for hot reload)."""

    plugin: Any
    kind: str
    """``path``, ``builtin``, ``entry-point``, ``resolver`` or ``module``."""
    module: str | None = None
    """The module name it was imported as."""
    source: Path | None = None
    """The plugin file or package folder, for plugins loaded by path."""


def is_path(name: str) -> bool:
    """True when ``name`` is written as a path."""
    return name.startswith(("./", "../", "/", "~")) or name.endswith(".py")


class Resolver:
    """Resolves names; owns the pluggy manager of entry points and resolver hooks."""

    def __init__(self) -> None:
        self._manager: pluggy.PluginManager | None = None
        self.warnings: list[str] = []
        self._resolvers_loaded = False
        self._stamps: dict[str, dict[Path, int]] = {}

    @property
    def manager(self) -> pluggy.PluginManager:
        """The pluggy manager, made when a name first needs entry points or resolvers."""
        if self._manager is None:
            from .hooks import plugin_manager

            self._manager = plugin_manager()
        return self._manager

    def resolve_plugin(self, name: str, base: Path) -> Resolved:
        """:meth:`resolve`, and what it finds must be a plugin, else ResolveError.

        A module without ``apply`` (``name: harness``, or a plugin file whose apply was
        removed) is refused here, as an entry problem: a reload to it keeps the old version.
        """
        found = self.resolve(name, base)
        try:
            check_plugin(found.plugin)
        except PluginError as exc:
            source = found.source
            if source is not None and source.is_dir():
                source = source / "__init__.py"
            where = (str(source), 1) if source is not None else None
            detail = str(exc).split(" is not a plugin: ", 1)[-1]
            raise ResolveError(f"{name} is not a plugin: {detail}", where) from None
        return found

    def resolve(self, name: str, base: Path) -> Resolved:
        """Resolve ``name`` declared in a file in folder ``base``; raise ResolveError."""
        if is_path(name):
            return self._path(name, base)
        if name.startswith("harness:"):
            return self._builtin(name.removeprefix("harness:"))
        tried = []
        found = self._entry_point(name)
        if found is not None:
            return found
        tried.append(f"no {PLUGIN_GROUP!r} entry point is named {name!r}")
        found = self._hooks(name)
        if found is not None:
            return found
        if self.manager.hook.harness_resolve_plugin.get_hookimpls():
            tried.append("no installed resolver knew it")
        return self._module(name, tried)

    # -- kinds ---------------------------------------------------------------------------

    def invalidate(self, module_names: Iterable[str]) -> None:
        """Forget what was imported from these modules' files: the next resolve re-imports."""
        for name in module_names:
            self._stamps.pop(name, None)

    def _path(self, name: str, base: Path) -> Resolved:
        written = str(Path(name).expanduser()) if name.startswith("~") else name
        # what Path.resolve() gives, without its stat of the result (the one below will do)
        path = Path(os.path.realpath(os.path.join(base, written)))
        try:
            mode = os.stat(path).st_mode  # one call for what the checks below need
        except OSError:
            mode = 0
        is_package = stat.S_ISDIR(mode)
        if is_package:
            init = path / "__init__.py"
            if not init.is_file():
                raise ResolveError(
                    f"{name} is a folder without __init__.py (resolved to {path}); "
                    "a plugin package needs one"
                )
        elif not stat.S_ISREG(mode):
            raise ResolveError(f"plugin file not found: {name} (resolved to {path})")
        elif path.suffix != ".py":
            raise ResolveError(f"{name} is not a Python file (resolved to {path})")
        module_name = local_module_name(path, is_package)
        stamp = GRAPH.stamped_closure(path, is_package)  # the files, with their mtimes
        if is_imported(module_name) and self._stamps.get(module_name) != stamp:
            forget_modules(local_modules_in(set(stamp)))  # edited since imported: import anew
        module = import_path(module_name, path, is_package)
        self._stamps[module_name] = stamp
        return Resolved(module, "path", module_name, path)

    def _builtin(self, name: str) -> Resolved:
        plugin = BUILTINS.get(name)
        if plugin is None:
            raise ResolveError(
                f"unknown builtin harness:{name}; builtins are "
                + ", ".join(f"harness:{key}" for key in BUILTINS)
            )
        return Resolved(plugin, "builtin")

    def _entry_point(self, name: str) -> Resolved | None:
        manager = self.manager
        if manager.get_plugin(name) is None:
            try:
                manager.load_setuptools_entrypoints(PLUGIN_GROUP, name=name)
            except Exception as exc:
                raise ResolveError(
                    f"the {PLUGIN_GROUP!r} entry point {name!r} failed to load: "
                    f"{type(exc).__name__}: {exc}",
                    source_location(exc),
                ) from exc
        plugin = manager.get_plugin(name)
        return None if plugin is None else Resolved(plugin, "entry-point")

    def _hooks(self, name: str) -> Resolved | None:
        if not self._resolvers_loaded:
            self._resolvers_loaded = True
            try:
                self.manager.load_setuptools_entrypoints(RESOLVER_GROUP)
            except Exception as exc:
                self.warnings.append(f"a {RESOLVER_GROUP!r} entry point failed to load: {exc}")
        try:
            plugin = self.manager.hook.harness_resolve_plugin(name=name)
        except Exception as exc:
            raise ResolveError(
                f"a resolver raised for {name!r}: {type(exc).__name__}: {exc}",
                source_location(exc),
            ) from exc
        return None if plugin is None else Resolved(plugin, "resolver")

    def _module(self, name: str, tried: list[str]) -> Resolved:
        module_name, _, attribute = name.partition(":")
        if not re.fullmatch(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*", module_name):
            hint = f"; write a relative path as ./{name}" if "/" in name else ""
            raise ResolveError(
                f"cannot resolve {name!r}: it is not a path (./x.py), not harness:<builtin>, "
                f"and not a module name{hint}"
            )
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and module_name.startswith(exc.name):
                raise ResolveError(
                    f"cannot resolve {name!r}: not a path, not harness:<builtin>, "
                    + "; ".join(tried)
                    + f", and no module {exc.name!r} can be imported"
                ) from None
            raise ResolveError(
                f"importing {module_name!r} failed: {exc}", source_location(exc)
            ) from exc
        except BaseException as exc:  # SystemExit and KeyboardInterrupt at import too
            raise ResolveError(
                f"importing {module_name!r} failed: {type(exc).__name__}: {exc}",
                source_location(exc),
            ) from exc
        plugin: Any = module
        for part in filter(None, attribute.split(".")):
            try:
                plugin = getattr(plugin, part)
            except AttributeError:
                raise ResolveError(
                    f"module {module_name!r} has no attribute {attribute!r}"
                ) from None
        return Resolved(plugin, "module", module_name)


def import_path(module_name: str, path: Path, is_package: bool | None = None) -> types.ModuleType:
    """Import the plugin at ``path`` as ``module_name`` (once); report failures with a line.

    ``is_package``: whether ``path`` is a package folder, when the caller knows already.
    """
    if is_package is None:
        is_package = path.is_dir()
    file = path / "__init__.py" if is_package else path
    try:
        return import_file(module_name, path, is_package)
    except SyntaxError as exc:
        location = (exc.filename or str(file), exc.lineno or 0)
        raise ResolveError(f"syntax error in plugin: {exc.msg}", location) from exc
    except NotLoadable as exc:
        raise ResolveError(str(exc)) from None
    except BaseException as exc:  # SystemExit and KeyboardInterrupt at import too
        raise ResolveError(
            f"importing the plugin raised {type(exc).__name__}: {exc}", source_location(exc, path)
        ) from exc


def source_location(exc: BaseException, near: Path | None = None) -> tuple[str, int] | None:
    """The innermost traceback frame, preferring one inside ``near`` (a file or folder)."""
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return exc.filename, exc.lineno
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return None
    if near is not None:
        root = str(near if near.is_dir() else near.parent)
        inside = [frame for frame in frames if frame.filename.startswith(root)]
        if inside:
            return inside[-1].filename, inside[-1].lineno or 0
    frame = frames[-1]
    return frame.filename, frame.lineno or 0
