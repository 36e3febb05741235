"""``harness mcp``: a plugin writing to stdout cannot corrupt the protocol stream."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

from ..helpers import HARNESS, write

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


def request(number: int, method: str, params: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "id": number, "method": method, "params": params}
    return (json.dumps(message) + "\n").encode()


def test_plugin_output_goes_to_stderr_and_stdout_stays_json_rpc(tmp_path: Path) -> None:
    write(tmp_path / "plugins" / "noisy.py", NOISY)
    write(tmp_path / "cordis.yml", "insert:\n  - { id: noisy, name: ./plugins/noisy.py }\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    process = subprocess.Popen(
        [HARNESS, "mcp", "--no-watch"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    lines: queue.Queue[bytes] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in process.stdout or ()])
    reader.start()
    seen: list[str] = []

    def response(number: int) -> dict[str, Any]:
        while True:
            try:
                line = lines.get(timeout=30).decode()
            except queue.Empty:
                raise AssertionError(f"no response {number}; stdout was {seen}") from None
            seen.append(line)
            message = json.loads(line)  # every stdout line is JSON-RPC
            if message.get("id") == number:
                return dict(message)

    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        process.stdin.write(request(1, "initialize", hello))
        process.stdin.flush()
        assert "result" in response(1)
        process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        process.stdin.write(request(2, "tools/call", {"name": "shout", "arguments": {}}))
        process.stdin.flush()
        called = response(2)
        assert called["result"]["content"] == [{"type": "text", "text": "ok"}]
        process.stdin.close()
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        reader.join(timeout=30)
    errors = process.stderr.read().decode() if process.stderr is not None else ""
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()
    assert all(line.startswith('{"jsonrpc":"2.0"') for line in seen), seen
    noise = [line for line in errors.splitlines() if line.startswith("noisy:")]
    assert noise == [
        "noisy: imported",
        "noisy: applied",
        "noisy: called",
        "noisy: from a child process",
        "noisy: straight to fd 1",
    ]
