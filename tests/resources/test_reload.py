"""Hot reload: resources and prompts follow their plugin's file and its entry."""

from __future__ import annotations

from pathlib import Path

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
