"""Fixtures of the fast-path tests: the twin apps (:mod:`.twin`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from .twin import Twin, serve_twin


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn runs on asyncio


@pytest.fixture
async def twin(config: Path, workspace: Path) -> AsyncIterator[Twin]:
    async for served in serve_twin(config, workspace):
        yield served
