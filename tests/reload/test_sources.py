"""Hot reload follows the import graph as edits change it, in constant work per edit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness import Host
from harness.reload import Reloader
from harness.service import unwrap

from .test_hot_reload import Reloads, call, plugin

pytestmark = pytest.mark.anyio


def reloader(host: Host) -> Reloader:
    service = unwrap(host.ctx.get("reload"))
    assert isinstance(service, Reloader)
    return service


async def test_same_size_edits_within_a_second_serve_the_new_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python's bytecode cache checks a source's time in whole seconds and its size: each
    version below has the same size and is written within the same second."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # as for most users
    source = tmp_path / "plugins" / "v.py"
    plugin(source, "v", "'v1'")
    (tmp_path / "cordis.yml").write_text("- { id: v, name: ./plugins/v.py }\n")
    async with Host(tmp_path / "cordis.yml") as host:
        assert list((tmp_path / "plugins" / "__pycache__").glob("v.*.pyc"))
        for version in range(2, 7):
            plugin(source, "v", f"'v{version}'")
            assert await host.reload_entries(["v"]) == []
            assert await call(host, "v") == f"v{version}"
    async with Host(tmp_path / "cordis.yml", watch=True) as host:
        reloads = Reloads(host)
        for version in range(7, 10):
            plugin(source, "v", f"'v{version}'")

            async def live(version: int = version) -> bool:
                return bool(await call(host, "v") == f"v{version}")

            await reloads.until(live)


async def test_an_added_import_is_watched_and_a_removed_one_is_not(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugin(plugins / "a.py", "a", "'plain'")
    (tmp_path / "cordis.yml").write_text("- { id: a, name: ./plugins/a.py }\n")
    helper = plugins / "helper.py"
    async with Host(tmp_path / "cordis.yml", watch=True) as host:
        reloads, index = Reloads(host), reloader(host).index
        assert helper.resolve() not in index.watched  # not a candidate of any import yet
        helper.write_text("VALUE = 'h1'\n")
        plugin(plugins / "a.py", "a", "helper.VALUE", "from . import helper")

        async def sees(value: str) -> bool:
            return bool(await call(host, "a") == value)

        await reloads.until(lambda: sees("h1"))
        assert helper.resolve() in index.watched
        helper.write_text("VALUE = 'h2'\n")  # the new import's file is watched
        report = await reloads.next()
        assert report.entries == ["a"]
        assert await call(host, "a") == "h2"
        plugin(plugins / "a.py", "a", "'plain again'")
        await reloads.until(lambda: sees("plain again"))
        assert helper.resolve() not in index.watched
        assert index.entries_of({helper.resolve()}) == []


async def test_a_deleted_helper_keeps_the_old_version_and_restoring_it_recovers(
    tmp_path: Path,
) -> None:
    plugins = tmp_path / "plugins"
    helper = plugins / "helper.py"
    plugin(plugins / "a.py", "a", "helper.VALUE", "from . import helper")
    helper.write_text("VALUE = 'h1'\n")
    (tmp_path / "cordis.yml").write_text("- { id: a, name: ./plugins/a.py }\n")
    async with Host(tmp_path / "cordis.yml", watch=True) as host:
        reloads = Reloads(host)
        helper.unlink()
        report = await reloads.next()
        assert report.entries == ["a"]
        assert not report.ok
        assert "helper" in report.errors[0].message
        assert await call(host, "a") == "h1"  # the old version keeps serving
        assert helper.resolve() in reloader(host).index.watched  # so restoring it is seen
        helper.write_text("VALUE = 'h2'\n")
        report = await reloads.next()
        assert report.ok, report.errors
        assert await call(host, "a") == "h2"
        assert host.problems() == []


async def test_a_renamed_helper_is_followed(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugin(plugins / "a.py", "a", "helper.VALUE", "from . import helper")
    (plugins / "helper.py").write_text("VALUE = 'h1'\n")
    (tmp_path / "cordis.yml").write_text("- { id: a, name: ./plugins/a.py }\n")
    async with Host(tmp_path / "cordis.yml", watch=True) as host:
        reloads, index = Reloads(host), reloader(host).index
        (plugins / "helper.py").rename(plugins / "renamed.py")
        plugin(plugins / "a.py", "a", "renamed.VALUE", "from . import renamed")

        async def renamed() -> bool:
            return bool(await call(host, "a") == "h1") and not host.problems()

        await reloads.until(renamed)
        (plugins / "renamed.py").write_text("VALUE = 'h2'\n")
        report = await reloads.next()
        assert report.entries == ["a"]
        assert await call(host, "a") == "h2"
        assert index.entries_of({(plugins / "helper.py").resolve()}) == []


async def test_an_edit_walks_only_the_edited_entry(tmp_path: Path) -> None:
    """Constant work per edit: with 40 plugins loaded, one edit walks one closure."""
    plugins = tmp_path / "plugins"
    lines = []
    for number in range(40):
        plugin(plugins / f"p{number}.py", f"t{number}", "'v1'")
        lines.append(f"- {{ id: p{number}, name: ./plugins/p{number}.py }}")
    (tmp_path / "cordis.yml").write_text("\n".join(lines) + "\n")
    async with Host(tmp_path / "cordis.yml", watch=True) as host:
        reloads, index = Reloads(host), reloader(host).index
        assert index.walks == 40
        plugin(plugins / "p7.py", "t7", "'v2'")
        report = await reloads.next()
        assert report.entries == ["p7"]
        assert index.walks == 41
        assert await call(host, "t7") == "v2"
        assert len(index.watched) == 40 + len(host.config_files())


async def test_entries_added_by_the_config_are_watched_and_removed_ones_not(
    tmp_path: Path,
) -> None:
    plugins = tmp_path / "plugins"
    plugin(plugins / "a.py", "a", "'a1'")
    plugin(plugins / "b.py", "b", "helper.VALUE", "from . import helper")
    (plugins / "helper.py").write_text("VALUE = 'h1'\n")
    config = tmp_path / "cordis.yml"
    config.write_text("- { id: a, name: ./plugins/a.py }\n")
    async with Host(config, watch=True) as host:
        reloads, index = Reloads(host), reloader(host).index
        assert (plugins / "helper.py").resolve() not in index.watched
        config.write_text("- { id: a, name: ./plugins/a.py }\n- { id: b, name: ./plugins/b.py }\n")
        assert (await reloads.next()).config
        assert index.entries_of({(plugins / "helper.py").resolve()}) == ["b"]
        (plugins / "helper.py").write_text("VALUE = 'h2'\n")
        assert (await reloads.next()).entries == ["b"]
        assert await call(host, "b") == "h2"
        config.write_text("- { id: b, name: ./plugins/b.py }\n")
        assert (await reloads.next()).removed == ["a"]
        assert (plugins / "a.py").resolve() not in index.watched
        assert index.entries_of({(plugins / "helper.py").resolve()}) == ["b"]
