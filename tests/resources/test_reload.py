"""Hot reload: resources and prompts follow their plugin's file and its entry."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness import Host

from .conftest import DOCS, docs_project

pytestmark = pytest.mark.anyio


class Changes:
    """Counts ``resources/change`` and ``prompts/change`` events; waits for more."""

    def __init__(self, host: Host) -> None:
        self.count = 0
        self._arrived = anyio.Event()
        host.ctx.on("resources/change", self._add)
        host.ctx.on("prompts/change", self._add)

    def _add(self, kind: str, key: str) -> None:
        self.count += 1
        self._arrived.set()

    async def until(self, check: object, seconds: float = 20) -> None:
        with anyio.fail_after(seconds):
            while not check():  # type: ignore[operator]
                await self._arrived.wait()
                self._arrived = anyio.Event()


async def test_editing_the_plugin_updates_them_and_dropping_its_entry_removes_them(
    tmp_path: Path,
) -> None:
    config = docs_project(tmp_path)
    async with Host(config, watch=True) as host:
        resources, prompts = host.ctx.resources, host.ctx.prompts
        changes = Changes(host)
        assert resources.list() == ["docs://readme", "docs://logo"]
        edited = DOCS.replace('"# Readme"', '"# Readme, edited"').replace(
            "for item in (readme, page, logo):", "for item in (readme,):"
        )
        edited = edited.replace("    ctx.prompts.register(look)\n", "")
        (tmp_path / "plugins" / "docs.py").write_text(edited)
        await changes.until(lambda: resources.list() == ["docs://readme"])
        assert resources.templates() == []
        assert prompts.list() == ["summarize"]
        assert (await resources.read("docs://readme"))[0].text == "# Readme, edited"

        config.write_text("insert: []\n")
        await changes.until(lambda: resources.list() == [] and prompts.list() == [])


async def test_a_read_or_get_while_its_entry_reloads_waits_for_the_new_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old version is gone and the new one has not applied yet (it waits at a gate the
    test opens): a read and a get made then wait for the transaction, never finding nothing."""
    gate = types.SimpleNamespace(opened=anyio.Event())
    monkeypatch.setitem(sys.modules, "primitives_gate", gate)
    slow = DOCS.replace('"# Readme"', '"# Readme, v2"').replace(
        "def apply(ctx):\n",
        "async def apply(ctx):\n    import primitives_gate\n\n"
        "    await primitives_gate.opened.wait()\n",
    )
    async with Host(docs_project(tmp_path)) as host:
        gone = anyio.Event()

        def removed(kind: str, key: str) -> None:
            if (kind, key) == ("removed", "docs://readme"):
                gone.set()

        host.ctx.on("resources/change", removed)
        (tmp_path / "plugins" / "docs.py").write_text(slow)
        found: dict[str, Any] = {}

        async def read() -> None:
            found["read"] = await host.ctx.resources.read("docs://readme")

        async def get() -> None:
            found["get"] = await host.ctx.prompts.render("summarize", {"topic": "x"})

        async with anyio.create_task_group() as group:
            group.start_soon(host.reload_entries, ["docs"])
            with anyio.fail_after(10):
                await gone.wait()
            assert host.ctx.resources.list() == []
            group.start_soon(read)
            group.start_soon(get)
            await anyio.wait_all_tasks_blocked()
            assert found == {}
            gate.opened.set()
    assert found["read"][0].text == "# Readme, v2"
    assert found["get"][0]["content"]["text"] == "Summarize x, dry."
