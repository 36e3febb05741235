"""The call journal across a real ``kill -9`` of ``harness run`` (SQLite beside cordis.yml),
over MCP (the SDK's client, ``_meta["harness/idempotency-key"]``) and over the console's
HTTP API (``Idempotency-Key``): a charge cut off inside its body is answered
``interrupted`` after the restart and happened once; a finished call repeated is answered
from the journal without running; an idempotent call cut off runs again, once."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from ..helpers import ROOT, write
from ..processes import start_harness_run, stop

pytestmark = pytest.mark.anyio
HERE = Path(__file__).parent
Call = Callable[[str, int, str], Coroutine[Any, Any, tuple[bool, str]]]
"""``(tool, amount, key)`` → (whether it failed, its text)."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK's HTTP client runs on asyncio


def project(folder: Path, url: str = "sqlite:///.harness/harness.db", ask: bool = False) -> Path:
    """A project with the store at ``url`` and the effect tools (``ask``: charge asks for
    approval first)."""
    shutil.copyfile(HERE / "effects_plugin.py", folder / "effects_plugin.py")
    policy = f"""
          - id: policy
            name: {ROOT / "plugins" / "policy.py"}
            config: {{ rules: {{ charge: ask }} }}"""
    write(
        folder / "cordis.yml",
        f"""
        insert:
          - id: tools
            name: harness:tools
          - id: store
            name: harness:store
            config: {{ url: "{url}" }}
          - id: effects
            name: ./effects_plugin.py{policy if ask else ""}
        """,
    )
    return folder


def environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}


def effects(folder: Path) -> list[str]:
    path = folder / "effects.txt"
    return path.read_text().splitlines() if path.exists() else []


async def written(folder: Path, line: str) -> None:
    """Wait (10 s at most) until a tool body has written ``line``: it is inside its body."""
    with anyio.fail_after(10):
        while True:
            if line in effects(folder):
                return
            await anyio.sleep(0.02)


def kill_9(process: subprocess.Popen[Any]) -> None:
    process.kill()  # SIGKILL: nothing of the process runs after this
    process.wait()
    stop(process)


@contextlib.asynccontextmanager
async def over_mcp(port: int) -> AsyncIterator[Call]:
    http = httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=60))
    url = f"http://127.0.0.1:{port}/mcp"
    async with http, Client(streamable_http_client(url, http_client=http), cache=None) as client:

        async def call(tool: str, amount: int, key: str) -> tuple[bool, str]:
            meta: Any = {"harness/idempotency-key": key}
            result = await client.call_tool(tool, {"amount": amount}, meta=meta)
            text = "".join(getattr(block, "text", "") for block in result.content)
            return bool(result.is_error), text

        yield call


@contextlib.asynccontextmanager
async def over_http(port: int) -> AsyncIterator[Call]:
    async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:

        async def call(tool: str, amount: int, key: str) -> tuple[bool, str]:
            response = await http.post(
                f"/api/tools/{tool}/call",
                json={"args": {"amount": amount}},
                headers={"Idempotency-Key": key},
            )
            assert response.status_code == 200, response.text
            body = response.json()
            return not body["ok"], "".join(block.get("text", "") for block in body["content"])

        yield call


SURFACES = {"mcp": over_mcp, "http": over_http}


async def cut_off(surface: Any, process: subprocess.Popen[Any], port: int, folder: Path) -> None:
    """Through ``surface``: charge 7 (finished), then charge 5 and reserve 3 held inside
    their bodies, and ``kill -9`` of the process while they are."""
    async with surface(port) as call:
        assert await call("charge", 7, "order-7") == (False, "charged 7")
    (folder / "hold").touch()
    # the client of the held calls fails as its server dies (the next assertions say
    # whether both bodies had begun)
    with contextlib.suppress(Exception):
        async with surface(port) as call, anyio.create_task_group() as group:
            group.start_soon(call, "charge", 5, "order-5")
            group.start_soon(call, "reserve", 3, "seat-3")
            try:
                await written(folder, "charge 5")
                await written(folder, "reserve 3")
            finally:
                kill_9(process)
                group.cancel_scope.cancel()  # the process died under them: stop waiting


@pytest.mark.parametrize("surface", SURFACES)
async def test_a_call_cut_off_by_kill_9_is_interrupted_and_a_finished_one_is_not_rerun(
    tmp_path: Path, surface: str
) -> None:
    folder = project(tmp_path)
    web = surface == "http"
    process, port = start_harness_run(folder, environment(), web=web)
    try:
        await cut_off(SURFACES[surface], process, port, folder)
    finally:
        kill_9(process)
    (folder / "hold").unlink()
    # charge 5 and reserve 3 ran at once: their lines come in either order
    assert sorted(effects(folder)) == ["charge 5", "charge 7", "reserve 3"]

    process, port = start_harness_run(folder, environment(), web=web)
    try:
        async with SURFACES[surface](port) as call:
            for _ in range(2):  # the answer is the journal's, every time
                failed, text = await call("charge", 5, "order-5")
                assert failed
                assert text == (
                    "interrupted: the host stopped while this call ran; it may or may not "
                    "have taken effect"
                )
                assert await call("charge", 7, "order-7") == (False, "charged 7")
                assert await call("reserve", 3, "seat-3") == (False, "reserved 3")
            reused = await call("charge", 6, "order-5")
    finally:
        stop(process)
    assert reused == (
        True,
        "Invalid arguments for tool charge: the idempotency key 'order-5' was used for other "
        "arguments; a key names one call: use a new key for a new call",
    )
    # charge 5 and charge 7 happened once; reserve 3 (idempotent) ran again, once
    assert sorted(effects(folder)) == ["charge 5", "charge 7", "reserve 3", "reserve 3"]


async def test_an_mcp_key_that_is_not_a_string_is_refused(tmp_path: Path) -> None:
    folder = project(tmp_path)
    process, port = start_harness_run(folder, environment())
    try:
        http = httpx2.AsyncClient(timeout=30)
        url = f"http://127.0.0.1:{port}/mcp"
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            meta: Any = {"harness/idempotency-key": 7}
            result = await client.call_tool("charge", {"amount": 1}, meta=meta)
    finally:
        stop(process)
    assert result.is_error
    assert [getattr(block, "text", "") for block in result.content] == [
        "_meta['harness/idempotency-key'] must be a string of 1 to 200 characters"
    ]
    assert effects(folder) == []
