"""The package's layers (:mod:`tests.layers`): each part of harness imports only what it may,
cycles stay inside the core runtime, and README's layout and the guide's architecture say
what the tree holds. A copy of the package with one planted upward import per layer shows
that the checker catches each, by module and arrow."""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import pytest

import harness

from ..helpers import ROOT
from ..layers import CORE, MAY_IMPORT, Package, cycles, layer_of, problems

PACKAGE = Path(harness.__file__).parent


def test_every_module_imports_only_what_its_layer_may() -> None:
    assert problems(PACKAGE) == []


def test_no_cycles_outside_the_core_runtime() -> None:
    assert cycles(PACKAGE) == []


def test_the_checker_reads_real_imports() -> None:
    """The checks above would pass on an empty graph: make sure they see the arrows, the
    lazy ones and the core's own cycle included."""
    edges = {(edge.source, edge.target) for edge in Package(PACKAGE).edges()}
    assert ("harness.reload", "harness.host") in edges
    assert ("harness.cli.serve_host", "harness.mcp") in edges  # inside a function
    assert ("harness.mcp.surface", "harness.mcp.http.fast_path") in edges
    assert ("harness.context", "harness.fiber") in edges  # the core's own cycle
    assert ("harness.fiber", "harness.context") in edges
    assert {layer_of(module) for module, _ in edges} >= set(MAY_IMPORT) - {"code"}


# layer → (file under harness/, planted lines, the module they import, how)
PLANTS = {
    "core": ("errors.py", "import harness.tools.calls", "harness.tools.calls", "import"),
    "tools": ("tools/calls.py", "from ..loader import config", "harness.loader.config", "from"),
    "search": ("search/text.py", "from ..tools import calls", "harness.tools.calls", "from"),
    "resources": (
        "resources/service.py",
        "from ..prompts import service",
        "harness.prompts.service",
        "from",
    ),
    "prompts": (
        "prompts/service.py",
        "import harness.mcp.results",
        "harness.mcp.results",
        "import",
    ),
    "helpers": ("helpers/lines.py", "from harness.host import Host", "harness.host", "from"),
    "loader": (
        "loader/config.py",
        'import importlib\nimportlib.import_module("harness.host")',
        "harness.host",
        "import_module",
    ),
    "host": ("host.py", '__import__("harness.reload")', "harness.reload", "__import__"),
    "reload": ("reload/__init__.py", "from harness.cli import main", "harness.cli", "from"),
    "llm": ("llm/base.py", "import harness.agent.session", "harness.agent.session", "import"),
    "gateway": (
        "gateway/mount.py",
        'from importlib import import_module\nimport_module(".surface", "harness.mcp")',
        "harness.mcp.surface",
        "import_module",
    ),
    "code": ("code/plugin.py", "from ..loader import resolve", "harness.loader.resolve", "from"),
    "store": ("store/journal.py", "from ..host import Host", "harness.host", "from"),
    "executor": (
        "executor/plugin.py",
        "from ..reload import index",
        "harness.reload.index",
        "from",
    ),
    "testing": ("testing/__init__.py", "from harness import tools", "harness.tools", "from"),
    "demo": ("demo/model.py", "from ..loader import config", "harness.loader.config", "from"),
    "mcp": (
        "mcp/http/fast_path.py",
        "from ...agent import history",
        "harness.agent.history",
        "from",
    ),
    "agent": ("agent/session.py", "from ..web import console", "harness.web.console", "from"),
    "web": (
        "web/routes.py",
        "def later():\n    import importlib\n    importlib.import_module('harness.agent.session')",
        "harness.agent.session",
        "import_module",
    ),
    "cli": ("cli/serve_host.py", "from ..code import plugin", "harness.code.plugin", "from"),
    "api": ("__init__.py", "from .mcp import surface", "harness.mcp.surface", "from"),
    "main": ("__main__.py", "import harness.web", "harness.web", "import"),
}


def planted(tmp_path: Path, relative: str, lines: str) -> Path:
    """A copy of the package with ``lines`` added to the end of ``relative`` (created, with
    its package, when the tree does not hold it yet)."""
    copy = tmp_path / "harness"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    (target.parent / "__init__.py").touch()
    with target.open("a", encoding="utf-8") as file:
        file.write("\n" + textwrap.dedent(lines) + "\n")
    return copy


def test_every_layer_has_a_plant() -> None:
    assert set(PLANTS) == set(MAY_IMPORT)


@pytest.mark.parametrize("layer", sorted(PLANTS))
def test_a_planted_upward_import_fails_by_module_and_arrow(tmp_path: Path, layer: str) -> None:
    relative, lines, target, how = PLANTS[layer]
    copy = planted(tmp_path, relative, lines)
    source = Package(copy).module_name(copy / relative)
    assert layer_of(source) == layer
    found = problems(copy)
    assert len(found) == 1, found
    assert f"harness/{relative}:" in found[0]
    assert f"{source} ({layer}) imports {target} ({layer_of(target)})" in found[0]
    assert f"with {how}" in found[0]


def test_a_module_may_not_import_its_own_package(tmp_path: Path) -> None:
    """``serve_host`` importing ``harness.cli`` would run the command line's imports below it."""
    copy = planted(tmp_path, "cli/serve_host.py", "from harness.cli import main")
    (found,) = problems(copy)
    assert "harness.cli.serve_host (cli) imports harness.cli (cli)" in found
    assert "a package that contains it" in found


def test_a_dynamic_import_outside_the_loader_fails(tmp_path: Path) -> None:
    copy = planted(tmp_path, "web/routes.py", "import importlib\nimportlib.import_module(NAME)")
    (found,) = problems(copy)
    assert re.search(r"harness/web/routes\.py:\d+: harness\.web\.routes calls import_module", found)


def test_a_module_without_a_layer_fails(tmp_path: Path) -> None:
    copy = planted(tmp_path, "stray.py", "import harness.tools")
    (found,) = problems(copy)
    assert found.startswith("harness/stray.py: harness.stray has no layer")


def test_a_planted_cycle_fails(tmp_path: Path) -> None:
    copy = planted(tmp_path, "tools/planted_a.py", "from . import planted_b")
    (copy / "tools" / "planted_b.py").write_text("from . import planted_a\n")
    assert "harness.tools.planted_a <-> harness.tools.planted_b" in cycles(copy)


def test_a_type_only_import_closes_no_cycle_but_counts_for_the_layers(tmp_path: Path) -> None:
    only_types = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import run"
    copy = planted(tmp_path / "cycle", "tools/planted_a.py", only_types.replace("run", "planted_b"))
    (copy / "tools" / "planted_b.py").write_text("from . import planted_a\n")
    assert cycles(copy) == []
    upward = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..host import Host"
    copy = planted(tmp_path / "upward", "tools/calls.py", upward)
    (found,) = problems(copy)
    assert "harness.tools.calls (tools) imports harness.host (host)" in found


def _block(path: Path, heading: str) -> str:
    """The first fenced block after ``heading`` in ``path``."""
    text = path.read_text(encoding="utf-8")
    start = text.index(heading)
    return text[start:].split("```", 2)[1]


def _tree() -> set[str]:
    """What harness/ holds at its top: packages as ``name/``, modules as ``name.py``."""
    return {
        f"{path.name}/" if path.is_dir() else path.name
        for path in PACKAGE.iterdir()
        if path.name != "__pycache__" and (path.suffix == ".py" or (path / "__init__.py").exists())
    }


def test_the_readme_layout_names_what_the_tree_holds() -> None:
    """Each entry under ``harness/`` starts its line, indented two spaces, with its names."""
    block = _block(ROOT / "README.md", "## Layout")
    package = block.split("\nplugins/", 1)[0]  # the harness/ part
    entries = re.findall(r"^  (\S.*?)(?:\s{2,}|$)", package, re.MULTILINE)
    named = {name for entry in entries for name in re.findall(r"[\w]+/|[\w]+\.py", entry)}
    assert named == _tree()


def test_the_guide_table_says_what_each_layer_may_import() -> None:
    section = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8").split("## 10.", 1)[1]
    rows = re.findall(r"^\| `(\w+)` \| (.+?) \| (.+?) \|$", section, re.MULTILINE)
    table = {layer: tuple(re.findall(r"`([\w.]+)`", allowed)) for layer, _, allowed in rows}
    assert table == MAY_IMPORT
    homes = {home for _, where, _ in rows for home in re.findall(r"`([\w./]+)`", where)}
    assert _tree() <= homes
    assert {f"{name}.py" for name in CORE} <= homes
