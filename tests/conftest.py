from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from harness import Host

from .clean_tree import pytest_sessionfinish, pytest_sessionstart
from .helpers import ALL_ON, project_copy

__all__ = ["pytest_sessionfinish", "pytest_sessionstart"]  # the suite leaves the tree clean


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
def config(tmp_path: Path) -> Path:
    """A project of the test's own: the pristine template and the bundled plugins, copied."""
    return project_copy(tmp_path / "project")


@pytest.fixture
async def host(config: Path, workspace: Path) -> AsyncIterator[Host]:
    """The default project (:func:`config`), running, with its file and git tools on."""
    async with Host(config, overrides=ALL_ON) as running:
        yield running
