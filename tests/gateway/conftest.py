"""Helpers for the gateway tests: a real upstream (the official SDK), real configs."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from harness import Host, ToolResult
from harness.fiber import Fiber

SERVER = Path(__file__).with_name("upstream_server.py")
PYTHON = sys.executable


def stdio_entry(entry_id: str = "up", mark: Path | None = None, **config: Any) -> dict[str, Any]:
    """A cordis.yml entry mounting the SDK upstream over stdio."""
    body: dict[str, Any] = {"command": PYTHON, "args": [str(SERVER), "stdio"], **config}
    if mark is not None:
        body.setdefault("env", {})["UPSTREAM_MARK"] = str(mark)
    return {"id": entry_id, "name": "harness:mcp-client", "config": body}


def text_of(result: ToolResult) -> str:
    """The text a mounted tool answered, for a server that sent no structuredContent (its
    result then has no value: DESIGN §12)."""
    assert result.ok, result
    assert result.result is None, result
    return "\n".join(block["text"] for block in result.content if block["type"] == "text")


def write_config(folder: Path, entries: list[dict[str, Any]]) -> Path:
    path = folder / "cordis.yml"
    path.write_text(yaml.safe_dump({"insert": entries}, sort_keys=False))
    return path


def fiber_of(host: Host, entry_id: str) -> Fiber:
    slot = host._entries.by_id[entry_id]
    assert slot.fiber is not None
    return slot.fiber


class Watch:
    """Wait, with a timeout, until a registry or fiber event satisfies a predicate."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.events: list[tuple[str, Any, Any]] = []
        self._changed = anyio.Event()
        host.ctx.on("tools/change", lambda kind, name: self._add("tools", kind, name))
        host.ctx.on("fiber/status", lambda fiber, previous: self._add("fiber", fiber, previous))
        host.ctx.on("mcp-client/retry", lambda entry, message: self._add("retry", entry, message))

    def _add(self, topic: str, a: Any, b: Any) -> None:
        self.events.append((topic, a, b))
        self._changed.set()

    async def until(self, predicate: Callable[[], bool], seconds: float = 30) -> None:
        with anyio.fail_after(seconds):
            while not predicate():
                await self._changed.wait()
                self._changed = anyio.Event()


@pytest.fixture
def mark(tmp_path: Path) -> Path:
    folder = tmp_path / "mark"
    folder.mkdir()
    return folder
