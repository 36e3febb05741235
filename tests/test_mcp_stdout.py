"""``harness mcp``: a plugin writing to stdout cannot corrupt the protocol stream."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.text import TextReceiveStream

from .helpers import write

pytestmark = pytest.mark.anyio
HARNESS = str(Path(sys.executable).parent / "harness")

NOISY = """
import os
import subprocess

from harness import define_tool

print("noisy: imported")
inject = ["tools"]


def apply(ctx):
    print("noisy: applied")

    def shout(args):
        print("noisy: called")
        subprocess.run(["echo", "noisy: from a child process"], check=True)
        os.write(1, b"noisy: straight to fd 1\\n")
        return "ok"

    ctx.tools.register(define_tool(name="shout", description="Shout. Use to test.", execute=shout))
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def request(number: int, method: str, params: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "id": number, "method": method, "params": params}
    return (json.dumps(message) + "\n").encode()


async def test_plugin_output_goes_to_stderr_and_stdout_stays_json_rpc(tmp_path: Path) -> None:
    write(tmp_path / "plugins" / "noisy.py", NOISY)
    write(tmp_path / "cordis.yml", "insert:\n  - { id: noisy, name: ./plugins/noisy.py }\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    async with await anyio.open_process(
        [HARNESS, "mcp", "--no-watch"], cwd=tmp_path, env=env
    ) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        lines: list[str] = []
        buffered = ""

        async def response(number: int) -> dict[str, Any]:
            nonlocal buffered
            assert process.stdout is not None
            with anyio.fail_after(30):
                async for chunk in TextReceiveStream(process.stdout):
                    buffered += chunk
                    while "\n" in buffered:
                        line, buffered = buffered.split("\n", 1)
                        lines.append(line)
                        message = json.loads(line)  # every stdout line is JSON-RPC
                        if message.get("id") == number:
                            return dict(message)
            raise AssertionError(f"no response {number}; stdout was {lines}")

        hello = {"name": "t", "version": "1"}
        await process.stdin.send(
            request(
                1,
                "initialize",
                {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": hello},
            )
        )
        assert "result" in await response(1)
        await process.stdin.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        await process.stdin.send(request(2, "tools/call", {"name": "shout", "arguments": {}}))
        called = await response(2)
        assert called["result"]["content"] == [{"type": "text", "text": "ok"}]
        await process.stdin.aclose()
        with anyio.fail_after(30):
            await process.wait()
        errors = b""
        async for chunk in process.stderr:
            errors += chunk
    assert all(line.startswith('{"jsonrpc":"2.0"') for line in lines), lines
    noise = [line for line in errors.decode().splitlines() if line.startswith("noisy:")]
    assert noise == [
        "noisy: imported",
        "noisy: applied",
        "noisy: called",
        "noisy: from a child process",
        "noisy: straight to fd 1",
    ]
