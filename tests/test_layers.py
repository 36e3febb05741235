"""The package's layers: imports run only downward, and cycles stay inside the core runtime.

core <- tools, helpers and gateway <- loader and host <- reload <- serving (MCP, the CLI, the rest).
A module this test does not know yet counts as serving: it may import anything, and
nothing below may import it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import harness

PACKAGE = Path(harness.__file__).parent

CORE = {"errors", "events", "runtime", "fiber", "plugin", "context", "service"}
LAYERS = ["core", "tools", "loader", "reload", "serving"]


def layer(module: str) -> str:
    parts = module.split(".")[1:]
    if not parts or parts[0] in {"__init__", "__main__"}:
        return "serving"
    head = parts[0]
    if head in CORE:
        return "core"
    if head in {"tools", "helpers", "gateway"}:
        return "tools"
    if head in {"loader", "host"}:
        return "loader"
    if head == "reload":
        return "reload"
    return "serving"


def module_name(path: Path) -> str:
    parts = ["harness", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    rel = Path(*name.split(".")[1:])
    return (PACKAGE / rel).with_suffix(".py").is_file() or (PACKAGE / rel / "__init__.py").is_file()


def imports(path: Path) -> set[str]:
    """harness modules that ``path`` imports, lazily imported ones included."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "harness")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module and node.module.split(".")[0] == "harness":
                target = node.module
            else:
                continue
            submodules = {f"{target}.{a.name}" for a in node.names}
            submodules = {sub for sub in submodules if is_module(sub)}
            found.update(submodules)
            if len(submodules) < len(node.names):  # names taken from the module itself
                found.add(target)
    return {module for module in found if is_module(module) and module != name}


GRAPH = {module_name(path): imports(path) for path in PACKAGE.rglob("*.py")}


def test_imports_run_only_downward() -> None:
    upward = [
        f"{module} ({layer(module)}) imports {target} ({layer(target)})"
        for module, targets in sorted(GRAPH.items())
        for target in sorted(targets)
        if LAYERS.index(layer(target)) > LAYERS.index(layer(module))
    ]
    assert upward == []


def test_no_cycles_outside_the_core_runtime() -> None:
    def reaches(start: str, goal: str) -> bool:
        seen, stack = set(), [start]
        while stack:
            module = stack.pop()
            if module == goal:
                return True
            if module not in seen:
                seen.add(module)
                stack.extend(GRAPH.get(module, ()))
        return False

    cycles = [
        f"{module} <-> {target}"
        for module, targets in sorted(GRAPH.items())
        for target in sorted(targets)
        if not (layer(module) == layer(target) == "core") and reaches(target, module)
    ]
    assert cycles == []


def test_the_layer_map_reads_real_imports() -> None:
    """The checks above would pass on an empty graph: make sure they see the arrows."""
    assert "harness.host" in GRAPH["harness.reload"]
    assert "harness.tools.tools_service" in GRAPH["harness.loader.builtin"]
    assert "harness.context" in GRAPH["harness.fiber"]  # the core's own cycle
    assert "harness.fiber" in GRAPH["harness.context"]
