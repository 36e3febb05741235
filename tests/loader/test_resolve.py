"""Name resolution: paths, packages, builtins, entry points, resolver hooks and modules."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import ToolsService
from harness.loader.resolve import ResolveError, Resolver

from ..helpers import write


@pytest.fixture
def resolver() -> Resolver:
    return Resolver()


@pytest.fixture
def on_path(tmp_path: Path) -> Iterator[Path]:
    """A folder put on sys.path (and taken off again)."""
    folder = tmp_path / "site"
    folder.mkdir()
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))
    for name in [n for n in sys.modules if n.startswith(("ep_dist", "resolver_dist", "plainmod"))]:
        del sys.modules[name]


def test_file_and_package_with_relative_imports(resolver: Resolver, tmp_path: Path) -> None:
    write(tmp_path / "plugins" / "helpers.py", "VALUE = 'helper'\n")
    write(tmp_path / "plugins" / "single.py", "from . import helpers\nname = helpers.VALUE\n")
    write(tmp_path / "plugins" / "pkg" / "__init__.py", "from .inner import name\n")
    write(tmp_path / "plugins" / "pkg" / "inner.py", "name = 'inner'\n")
    single = resolver.resolve("./plugins/single.py", tmp_path)
    package = resolver.resolve("./plugins/pkg/", tmp_path / "x" / "..")
    assert single.plugin.name == "helper"
    assert single.kind == "path"
    assert single.source == (tmp_path / "plugins" / "single.py").resolve()
    assert package.plugin.name == "inner"


def test_same_file_name_in_two_folders_does_not_collide(resolver: Resolver, tmp_path: Path) -> None:
    write(tmp_path / "a" / "echo.py", "name = 'a'\n")
    write(tmp_path / "b" / "echo.py", "name = 'b'\n")
    first = resolver.resolve("./a/echo.py", tmp_path)
    second = resolver.resolve("./b/echo.py", tmp_path)
    assert (first.plugin.name, second.plugin.name) == ("a", "b")
    assert first.module != second.module


def test_non_identifier_file_name(resolver: Resolver, tmp_path: Path) -> None:
    write(tmp_path / "my-tool.py", "name = 'dashed'\n")
    assert resolver.resolve("./my-tool.py", tmp_path).plugin.name == "dashed"


def test_path_errors(resolver: Resolver, tmp_path: Path) -> None:
    with pytest.raises(ResolveError, match=r"plugin file not found: \./nope\.py \(resolved to "):
        resolver.resolve("./nope.py", tmp_path)
    (tmp_path / "folder").mkdir()
    with pytest.raises(ResolveError, match=r"is a folder without __init__\.py"):
        resolver.resolve("./folder", tmp_path)
    write(tmp_path / "bad.py", "x = 1\ndef broken(:\n")
    with pytest.raises(ResolveError) as caught:
        resolver.resolve("./bad.py", tmp_path)
    assert str(caught.value).startswith("syntax error in plugin: ")
    assert str(caught.value).endswith(f"({tmp_path / 'bad.py'}:2)")
    write(tmp_path / "raises.py", "import os\nraise ValueError('at import')\n")
    with pytest.raises(ResolveError) as raised:
        resolver.resolve("./raises.py", tmp_path)
    assert str(raised.value) == (
        f"importing the plugin raised ValueError: at import ({tmp_path / 'raises.py'}:2)"
    )


def test_builtin(resolver: Resolver, tmp_path: Path) -> None:
    assert resolver.resolve("harness:tools", tmp_path).plugin is ToolsService
    with pytest.raises(
        ResolveError, match="unknown builtin harness:nope; builtins are harness:tools"
    ):
        resolver.resolve("harness:nope", tmp_path)


def test_entry_point_plugin_from_an_installed_distribution(
    resolver: Resolver, on_path: Path, tmp_path: Path
) -> None:
    write(on_path / "ep_dist_mod.py", "name = 'from-entry-point'\ndef apply(ctx): pass\n")
    write(
        on_path / "ep_dist-1.0.dist-info" / "METADATA",
        "Metadata-Version: 2.1\nName: ep-dist\nVersion: 1.0\n",
    )
    write(
        on_path / "ep_dist-1.0.dist-info" / "entry_points.txt",
        "[harness.plugins]\nshouty = ep_dist_mod\n",
    )
    found = resolver.resolve("shouty", tmp_path)
    assert found.kind == "entry-point"
    assert found.plugin.name == "from-entry-point"


def test_resolver_hook_from_an_installed_distribution(
    resolver: Resolver, on_path: Path, tmp_path: Path
) -> None:
    write(
        on_path / "resolver_dist_mod.py",
        """
        from harness.loader.resolve import hookimpl

        class Answer:
            name = "answered"

            @staticmethod
            def apply(ctx):
                pass

        @hookimpl
        def harness_resolve_plugin(name):
            return Answer if name.startswith("magic/") else None
        """,
    )
    write(
        on_path / "resolver_dist-1.0.dist-info" / "METADATA",
        "Metadata-Version: 2.1\nName: resolver-dist\nVersion: 1.0\n",
    )
    write(
        on_path / "resolver_dist-1.0.dist-info" / "entry_points.txt",
        "[harness.resolvers]\nmagic = resolver_dist_mod\n",
    )
    found = resolver.resolve("magic/anything", tmp_path)
    assert found.kind == "resolver"
    assert found.plugin.name == "answered"


def test_importable_module_and_attribute(resolver: Resolver, on_path: Path, tmp_path: Path) -> None:
    write(on_path / "plainmod" / "__init__.py", "")
    write(
        on_path / "plainmod" / "tools.py",
        "class Holder:\n    class plugin:\n        name = 'attr'\n",
    )
    assert resolver.resolve("plainmod.tools", tmp_path).kind == "module"
    assert resolver.resolve("plainmod.tools:Holder.plugin", tmp_path).plugin.name == "attr"
    with pytest.raises(ResolveError, match=r"module 'plainmod\.tools' has no attribute 'nope'"):
        resolver.resolve("plainmod.tools:nope", tmp_path)


def test_slashed_name_without_dot_slash_gets_a_hint(resolver: Resolver, tmp_path: Path) -> None:
    with pytest.raises(ResolveError, match=r"write a relative path as \./plugins/x\.yml"):
        resolver.resolve("plugins/x.yml", tmp_path)


def test_missing_module_names_what_was_tried(resolver: Resolver, tmp_path: Path) -> None:
    with pytest.raises(ResolveError) as caught:
        resolver.resolve("no_such_pkg.plugin", tmp_path)
    assert str(caught.value) == (
        "cannot resolve 'no_such_pkg.plugin': not a path, not harness:<builtin>, no "
        "'harness.plugins' entry point is named 'no_such_pkg.plugin', and no module "
        "'no_such_pkg' can be imported"
    )
