"""Editing, disabling and reloading around a mounted server; floods of notifications."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from harness import Host
from harness.gateway.plugin import supervision

from .conftest import fiber_of, stdio_entry, write_config
from .test_faults import ECHO, pids

pytestmark = pytest.mark.anyio


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def edit(path: Path, entry_id: str, **changes: object) -> None:
    data = yaml.safe_load(path.read_text())
    for entry in data["insert"]:
        if entry["id"] == entry_id:
            entry.update(changes)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


async def test_reloading_other_entries_keeps_the_connection(tmp_path: Path, mark: Path) -> None:
    config = write_config(tmp_path, [stdio_entry("up", mark=mark)])
    async with Host(config) as host:
        (first,) = pids(mark)
        data = yaml.safe_load(config.read_text())
        data["insert"].append(ECHO)
        config.write_text(yaml.safe_dump(data, sort_keys=False))
        await host.reload()
        assert "echo" in host.tools.list()
        edit(config, "echo", enabled=False)
        await host.reload()
        assert "echo" not in host.tools.list()
        assert pids(mark) == {first}
        assert alive(first)
        result = await host.tools.execute({"id": "1", "name": "up_echo", "args": {"text": "a"}})
        assert result.ok


async def test_editing_and_disabling_the_entry_reconnects_cleanly(
    tmp_path: Path, mark: Path
) -> None:
    entry = stdio_entry("up", mark=mark)
    config = write_config(tmp_path, [entry])
    async with Host(config) as host:
        (first,) = pids(mark)
        edit(config, "up", config={**entry["config"], "include": ["echo"], "prefix": "u_"})
        await host.reload()
        assert host.tools.list() == ["u_echo"]
        assert not alive(first)
        (second,) = pids(mark) - {first}
        edit(config, "up", enabled=False)
        await host.reload()
        assert host.tools.list() == []
        assert not alive(second)
        edit(config, "up", enabled=True)
        await host.reload()
        assert host.tools.list() == ["u_echo"]
        result = await host.tools.execute({"id": "1", "name": "u_echo", "args": {"text": "b"}})
        assert result.ok


async def test_a_notification_flood_is_bounded(tmp_path: Path) -> None:
    config = write_config(tmp_path, [stdio_entry("up", max_notifications=20)])
    async with Host(config) as host:
        result = await host.tools.execute({"id": "1", "name": "up_flood", "args": {"count": 300}})
        assert result.result == {"result": "flooded"}
        state = supervision(fiber_of(host, "up"))
        assert state is not None
        assert state.connection is not None
        assert state.connection.dropped >= 300 - 20 * 10
