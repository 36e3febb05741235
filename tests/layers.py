"""The package's layers, read from its source: what each part of harness may import.

Every module of ``harness`` belongs to one layer (:func:`layer_of`), and :data:`MAY_IMPORT`
says which layers (or single modules of a layer) a layer's modules may import; a module may
always import the modules of its own layer, but never a package that contains it (a
package re-exports its children: ``harness.cli.serve_host`` importing ``harness.cli`` would
run the command line's imports from below it). The checker reads every kind of import a
module can make of another: ``import a.b``, ``from a import b``, relative ``from ..a import
b``, imports under ``if TYPE_CHECKING:`` and inside functions (a lazy import is still an
arrow), ``importlib.import_module("a.b")`` and ``__import__("a.b")`` with literal strings. A
dynamic import whose name is not a literal is allowed only in :data:`DYNAMIC`, the places
that load plugins by name (``harness:agent``, ``harness.reload:Reloader``: a plugin named in
a config is loaded the way any plugin is, not imported) and :mod:`harness.lazy`, the lazy
re-exports of a package's own modules.

Nothing here imports the package it checks: :func:`problems` reads the files under any
folder, so the tests can run it on a copy with a planted import.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

CORE = frozenset(
    {"context", "errors", "events", "fiber", "lazy", "plugin", "registry", "runtime", "service"}
)
"""The core runtime's modules (``harness/<name>.py``): the one layer allowed a cycle."""

MAY_IMPORT: dict[str, tuple[str, ...]] = {
    "core": (),
    "search": ("core",),
    "tools": ("core", "search"),
    "resources": ("core", "tools"),
    "prompts": ("core", "tools", "resources"),
    "helpers": ("core",),
    "loader": ("core", "tools"),
    "host": ("core", "tools", "resources", "prompts", "loader"),
    "reload": ("core", "tools", "loader", "host"),
    "llm": ("core", "tools"),
    "gateway": ("core", "tools", "resources", "prompts", "store"),
    "code": ("core", "tools", "store"),
    "store": ("core", "tools"),
    "executor": ("core", "tools", "host"),
    "testing": (),
    "demo": ("testing",),
    "mcp": ("core", "tools", "resources", "prompts"),
    "agent": ("core", "tools", "llm", "loader", "store"),
    "web": ("core", "tools", "loader", "host", "mcp.hosts", "mcp.auth"),
    "cli": (
        "core",
        "tools",
        "resources",
        "prompts",
        "helpers",
        "loader",
        "host",
        "reload",
        "mcp",
        "agent",
        "store",
        "web",
        "demo",
        "gateway.authorise",
    ),
    "api": ("core", "tools", "resources", "prompts", "host"),
    "main": ("cli",),
}
"""Layer → what its modules may import, bottom first: layers by name, or one module of a
layer by its dotted path under ``harness`` (the web console's Host and token checks use
``mcp.hosts`` and ``mcp.auth`` and nothing else of MCP; it reaches the agent only through
the ``agent`` service; ``harness auth`` uses ``gateway.authorise`` and nothing else of the
gateway). ``api`` is
``harness/__init__.py``, the public names; ``main`` is ``harness/__main__.py``. Only the
demo model (``demo``, served by ``--demo`` and ``python -m harness.demo``) imports
``testing``, whose scripted servers tests and users otherwise start beside a host; the CLI
imports the demo."""

DYNAMIC = frozenset({"harness.lazy", "harness.loader.builtin", "harness.loader.resolve"})
"""The modules that may import a name that is not a literal: a package's lazy re-exports of
its own modules (which the package also imports under ``TYPE_CHECKING``, so the arrows show)
and the loader, which loads plugins by name."""

VERSION_ONLY = frozenset({"__version__"})
"""``from harness import __version__`` is no arrow to the package's public names."""


@dataclass(frozen=True, order=True)
class Edge:
    """``source`` imports ``target`` at ``where`` (``path:line``), written as ``how``;
    ``typing`` when only type checkers see it (under ``if TYPE_CHECKING:``)."""

    source: str
    target: str
    where: str
    how: str
    typing: bool = False


def layer_of(module: str) -> str | None:
    """The layer of a module of ``harness``; None for one :data:`MAY_IMPORT` does not know."""
    parts = module.split(".")[1:]
    if not parts:
        return "api"
    head = parts[0]
    if head == "__main__":
        return "main"
    if head in CORE and len(parts) == 1:
        return "core"
    return head if head in MAY_IMPORT and head not in {"core", "api", "main"} else None


def may_import(source: str, target: str) -> bool:
    """Whether module ``source`` may import module ``target`` (both of known layers)."""
    if source.startswith(target + "."):
        return False  # a package that contains the importer
    mine, theirs = layer_of(source), layer_of(target)
    if mine == theirs:
        return True
    for allowed in MAY_IMPORT[mine or ""]:
        if "." in allowed:
            path = f"harness.{allowed}"
            if target == path or target.startswith(path + "."):
                return True
        elif allowed == theirs:
            return True
    return False


class Package:
    """The modules of the package at ``root`` (a folder named like the package)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.name = root.name
        self.files = {self.module_name(path): path for path in sorted(root.rglob("*.py"))}
        self.trees = {
            module: ast.parse(path.read_text(encoding="utf-8"), str(path))
            for module, path in self.files.items()
        }

    def module_name(self, path: Path) -> str:
        parts = [self.name, *path.relative_to(self.root).with_suffix("").parts]
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    def is_module(self, name: str) -> bool:
        return name in self.files

    def edges(self) -> list[Edge]:
        """Every import of one of the package's modules by another, with where it is."""
        found: list[Edge] = []
        for module, path in self.files.items():
            found.extend(self._edges_of(module, path))
        return sorted(set(found))

    def dynamic(self) -> list[str]:
        """``path:line`` of each import whose name is not a literal, outside :data:`DYNAMIC`."""
        found = []
        for module, path in self.files.items():
            if module in DYNAMIC:
                continue
            for node in ast.walk(self.trees[module]):
                if (how := _import_call(node)) is None or not isinstance(node, ast.Call):
                    continue
                if _literal(node) is None:
                    found.append(f"{self._where(path, node)}: {module} calls {how} on a name")
        return found

    def _where(self, path: Path, node: ast.AST) -> str:
        relative = path.relative_to(self.root.parent).as_posix()
        return f"{relative}:{getattr(node, 'lineno', 0)}"

    def _edges_of(self, module: str, path: Path) -> list[Edge]:
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found: list[tuple[str, ast.AST, str]] = []
        typing = _typing_only(self.trees[module])
        for node in ast.walk(self.trees[module]):
            if isinstance(node, ast.Import):
                found += [(alias.name, node, "import") for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                target = _absolute(node.module or "", node.level, package)
                names = [alias.name for alias in node.names]
                subs = [f"{target}.{name}" for name in names if self.is_module(f"{target}.{name}")]
                found += [(sub, node, "from-import") for sub in subs]
                if len(subs) < len(names) and not (
                    target == self.name and VERSION_ONLY.issuperset(names)
                ):
                    found.append((target, node, "from-import"))
            elif (how := _import_call(node)) is not None and isinstance(node, ast.Call):
                name = _literal(node)
                if name is not None:
                    found.append((_absolute_call(name, node, package), node, how))
        edges = []
        for target, node, how in found:
            while target and not self.is_module(target):  # ``import a.b.attr`` → a.b
                target = target.rpartition(".")[0]
            if target.split(".")[0] == self.name and target != module:
                where = self._where(path, node)
                edges.append(Edge(module, target, where, how, id(node) in typing))
        return edges


def _typing_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes under ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(sub) for stmt in node.body for sub in ast.walk(stmt))
    return inside


def _absolute(name: str, level: int, package: str) -> str:
    if not level:
        return name
    base = package.split(".")
    base = base[: len(base) - level + 1]
    return ".".join([*base, *([name] if name else [])])


def _import_call(node: ast.AST) -> str | None:
    """``import_module`` or ``__import__`` when ``node`` calls one of them."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    return name if name in {"import_module", "__import__"} else None


def _literal(call: ast.Call) -> str | None:
    first = call.args[0] if call.args else None
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


def _absolute_call(name: str, call: ast.Call, package: str) -> str:
    """The module an ``import_module(name, anchor)`` call imports; relative names resolved
    against a literal anchor, or the calling module's package for ``__name__``/``__package__``."""
    if not name.startswith("."):
        return name
    anchor: ast.expr | None = call.args[1] if len(call.args) > 1 else None
    for keyword in call.keywords:
        if keyword.arg == "package":
            anchor = keyword.value
    if isinstance(anchor, ast.Constant) and isinstance(anchor.value, str):
        package = anchor.value
    level = len(name) - len(name.lstrip("."))
    return _absolute(name[level:], level, package)


def problems(root: Path) -> list[str]:
    """Everything wrong with the layers of the package at ``root``, one line each."""
    package = Package(root)
    edges = package.edges()
    found = [
        f"{path.relative_to(root.parent).as_posix()}: {module} has no layer; give it one in "
        "tests/layers.py, README's layout and docs/guide.md §10"
        for module, path in package.files.items()
        if layer_of(module) is None
    ]
    for edge in edges:
        mine, theirs = layer_of(edge.source), layer_of(edge.target)
        if mine is None or theirs is None or may_import(edge.source, edge.target):
            continue
        if edge.source.startswith(edge.target + "."):
            why = "a package that contains it"
        else:
            why = f"{mine} may import {', '.join(MAY_IMPORT[mine]) or 'nothing of harness'}"
        found.append(
            f"{edge.where}: {edge.source} ({mine}) imports {edge.target} ({theirs}) "
            f"with {edge.how}; {why}"
        )
    found += package.dynamic()
    return found


def cycles(root: Path) -> list[str]:
    """Pairs of modules that reach each other when imported, outside the core runtime's own
    cycle (an import under ``if TYPE_CHECKING:`` never runs, so it closes no cycle; it
    still counts for the layers)."""
    graph: dict[str, set[str]] = {}
    for edge in Package(root).edges():
        if not edge.typing:
            graph.setdefault(edge.source, set()).add(edge.target)

    def reaches(start: str, goal: str) -> bool:
        seen, stack = set(), [start]
        while stack:
            module = stack.pop()
            if module == goal:
                return True
            if module not in seen:
                seen.add(module)
                stack.extend(graph.get(module, ()))
        return False

    return [
        f"{module} <-> {target}"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if not (layer_of(module) == layer_of(target) == "core") and reaches(target, module)
    ]
