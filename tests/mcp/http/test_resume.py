"""Resumable SSE streams on handshake-era sessions, over real HTTP (``harness run``): each
stream begins with a priming event (an ``id``, empty data, ``retry``), a client that lost a
stream gets its later events again with ``Last-Event-ID``, and a session never gets another
session's events that way."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from ...helpers import write
from ..test_surface import Served

pytestmark = pytest.mark.anyio
ERA = "2025-11-25"
PLUGIN = """
from harness import define_tool

inject = ["tools"]
echo = define_tool(
    name="echo",
    description="Echo the text.",
    parameters={"text": {"type": "string", "required": True}},
    execute=lambda args: args["text"],
)


def apply(ctx):
    ctx.tools.register(echo)
"""
CONFIG = """
insert:
  - id: echo
    name: ./echo.py
"""
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn runs on asyncio


@pytest.fixture
def url(tmp_path: Path) -> Any:
    write(tmp_path / "echo.py", PLUGIN)
    config = write(tmp_path / "cordis.yml", CONFIG)
    served = Served("run", "-c", str(config), "--port", "0", "--no-web", cwd=tmp_path)
    yield served.url
    served.close()


async def events(response: httpx2.Response, count: int) -> list[dict[str, str]]:
    """The first ``count`` SSE events of ``response``, each as its fields."""
    found: list[dict[str, str]] = []
    event: dict[str, str] = {}
    with anyio.fail_after(20):
        async for line in response.aiter_lines():
            if line == "":
                if event:
                    found.append(event)
                    event = {}
                    if len(found) == count:
                        break
                continue
            key, _, value = line.partition(":")
            event[key] = event.get(key, "") + value.removeprefix(" ")
    return found


async def session(client: httpx2.AsyncClient, url: str) -> dict[str, str]:
    """A new handshake-era session: the headers its later requests carry."""
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": ERA,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    async with client.stream("POST", url, json=hello, headers=ACCEPT) as response:
        assert response.status_code == 200
        headers = {**ACCEPT, "mcp-session-id": response.headers["mcp-session-id"]}
        await events(response, 2)  # the priming event, then the result
    headers["mcp-protocol-version"] = ERA
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await client.post(url, json=note, headers=headers)).status_code == 202
    return headers


@pytest.fixture
async def client() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(timeout=20) as http:
        yield http


async def test_streams_are_primed_and_resume_within_their_session(
    url: str, client: httpx2.AsyncClient
) -> None:
    headers = await session(client, url)
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}},
    }
    async with client.stream("POST", url, json=call, headers=headers) as response:
        priming, result = await events(response, 2)
    assert priming["data"] == ""
    assert priming["retry"] == "1000"
    assert priming["id"]
    assert result["id"]
    assert priming["id"] != result["id"]
    assert json.loads(result["data"])["result"]["content"] == [{"type": "text", "text": "hi"}]

    # the stream was lost after its priming event: resuming replays the result
    resume = {**headers, "Last-Event-ID": priming["id"]}
    async with client.stream("GET", url, headers=resume) as replay:
        assert replay.status_code == 200
        (again,) = await events(replay, 1)
    assert again == result

    # another session cannot read this session's stream with its event id
    other = await session(client, url)
    async with client.stream(
        "GET", url, headers={**other, "Last-Event-ID": priming["id"]}
    ) as foreign:
        assert foreign.status_code == 200
        leaked = await events(foreign, 1)  # the stream ends: nothing of this id here
    assert leaked == []
