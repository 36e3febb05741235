from __future__ import annotations

import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from harness.testing import ScriptedServer

from ..providers import PROVIDERS, model_entry, server_for

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "plugins"

# A tool whose body waits until it is cancelled, announcing that it runs.
SLOW_PLUGIN = """
import anyio
from harness import define_tool

inject = ["tools"]


def apply(ctx):
    async def wait(args):
        ctx.emit("test/started", args)
        await anyio.sleep_forever()

    ctx.tools.register(define_tool(
        name="slow", description="Wait forever.", parameters={}, execute=wait))
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def git_repo(path: Path, subjects: list[str]) -> Path:
    """A real git repository with one commit per subject."""
    path.mkdir(parents=True)
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "HOME": str(path), "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    for number, subject in enumerate(subjects):
        subprocess.run(
            [
                "git",
                "-C",
                str(path),
                "-c",
                "user.name=Ada",
                "-c",
                "user.email=ada@example.org",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                subject,
            ],
            check=True,
            env={**env, "GIT_COMMITTER_DATE": f"2026-01-0{number + 1}T10:00:00"},
        )
    return path


def config_file(
    folder: Path,
    server: ScriptedServer | str,
    entries: list[dict[str, Any]] | None = None,
    agent: dict[str, Any] | None = None,
    model: dict[str, Any] | None = None,
) -> Path:
    """A cordis.yml with the given tool entries, the scripted server's model and an agent.

    ``server`` may be a bare URL: a ``harness:openai`` model at that address.
    """
    items = list(entries or [])
    if isinstance(server, str):
        config = {"model": "scripted", "base_url": server, "retry_backoff": 0.01, **(model or {})}
        items.append({"id": "model", "name": "harness:openai", "config": config})
    else:
        items.append(model_entry(server, **(model or {})))
    items.append({"id": "agent", "name": "harness:agent", "config": agent or {}})
    path = folder / "cordis.yml"
    path.write_text(yaml.safe_dump({"insert": items}, sort_keys=False), encoding="utf-8")
    return path


def entry(entry_id: str, name: str | None = None, **config: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"id": entry_id, "name": name or str(PLUGINS / f"{entry_id}.py")}
    if config:
        item["config"] = config
    return item


async def turn(session: Any, text: str) -> list[dict[str, Any]]:
    """The events of one turn, deltas included."""
    return [event async for event in session.send(text)]


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events if event["type"] != "assistant/delta"]


ONE_TOOL_TURN = [
    "turn/start",
    "step/start",
    "assistant/message",
    "tool/call",
    "tool/result",
    "step/end",
    "step/start",
    "assistant/message",
    "step/end",
    "turn/end",
]
"""The events of a turn whose first step calls one tool and whose second answers."""

RESUMED_ROLES = ["user", "assistant", "tool", "assistant", "user"]
"""The messages sent when a session of one tool-calling turn gets its second message."""


async def send_cancelling(
    session: Any, text: str, tool: str, started: Any, cancel: Any
) -> list[dict[str, Any]]:
    """The events of one turn; once ``tool`` is called and ``started`` is set, ``cancel(id)``."""
    events = []
    with anyio.fail_after(20):
        async for event in session.send(text):
            events.append(event)
            if event["type"] == "tool/call" and event["name"] == tool:
                await started.wait()
                assert cancel(event["id"]) is True
    return events


@pytest.fixture(params=PROVIDERS)
def server(request: pytest.FixtureRequest) -> Iterator[ScriptedServer]:
    """A scripted server of each provider in turn (the tests read requests with ``sent``)."""
    with server_for(request.param) as running:
        yield running


@pytest.fixture
def anyio_backend() -> str:
    """asyncio only: the official SDKs leave async generators unfinished on trio.

    The loop itself runs on trio too; tests/agent/test_trio.py drives it there through a
    provider that does not use the SDK.
    """
    return "asyncio"
