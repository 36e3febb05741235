from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from harness import Host

from .helpers import ALL_ON, CONFIG


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run every async test on both of anyio's backends."""
    return str(request.param)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty workspace the bundled file tools are pointed at (``HARNESS_WORKSPACE``)."""
    folder = tmp_path / "workspace"
    folder.mkdir()
    monkeypatch.setenv("HARNESS_WORKSPACE", str(folder))
    return folder


@pytest.fixture
async def host(workspace: Path) -> AsyncIterator[Host]:
    """The repository's own cordis.yml, running, with its file and git tools switched on."""
    async with Host(CONFIG, overrides=ALL_ON) as running:
        yield running
