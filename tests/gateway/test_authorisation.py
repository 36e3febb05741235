"""An HTTP upstream that answers 401: the entry's problem says the server requires authorisation.

The upstream is a real HTTP server on 127.0.0.1 speaking just enough streamable HTTP (JSON
answers) to be mounted; it answers 401 with a ``WWW-Authenticate`` challenge to every request
(``harness check`` reports the entry), or only to ``tools/call`` (a token that expired while
the entry was mounted: the call says so).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness import Host

from ..helpers import HARNESS
from .conftest import write_config

pytestmark = pytest.mark.anyio

CHALLENGE = 'Bearer realm="mcp", error="invalid_token", error_description="The token expired"'


class Upstream:
    """The server; ``refuse`` is the set of methods answered 401 (``"*"``: all)."""

    def __init__(self, refuse: set[str]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                message = json.loads(self.rfile.read(int(self.headers["content-length"])))
                method = message.get("method")
                if "*" in refuse or method in refuse:
                    self.answer(401, {"error": "invalid_token"}, CHALLENGE)
                elif "id" not in message:
                    self.answer(202, None)
                elif method == "initialize":
                    self.answer(200, self.result(message, INITIALIZED))
                elif method == "tools/list":
                    self.answer(200, self.result(message, {"tools": [ECHO]}))
                else:
                    self.answer(200, self.result(message, {"content": []}))

            def do_GET(self) -> None:
                self.answer(405, None)

            do_DELETE = do_GET

            def result(self, message: dict[str, object], result: object) -> object:
                return {"jsonrpc": "2.0", "id": message["id"], "result": result}

            def answer(self, status: int, body: object, challenge: str | None = None) -> None:
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                if challenge is not None:
                    self.send_header("www-authenticate", challenge)
                if data:
                    self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/mcp"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


INITIALIZED = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "guarded", "version": "1"},
}
ECHO = {"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}}
SAID = (
    "MCP server 'remote': the server requires authorisation: {url} answered HTTP 401 "
    f"({CHALLENGE}); for OAuth, set oauth: true on entry 'remote' and run "
    "`harness auth remote`; else set the credentials it expects in the entry's headers, e.g. "
    'headers: {{Authorization: "Bearer ${{TOKEN}}"}}'
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK's HTTP client


@pytest.fixture
def guarded() -> Iterator[Upstream]:
    running = Upstream({"*"})
    yield running
    running.close()


def entry(url: str) -> dict[str, object]:
    return {"id": "remote", "name": "harness:mcp-client", "config": {"url": url}}


def test_harness_check_says_the_server_requires_authorisation(
    tmp_path: Path, guarded: Upstream
) -> None:
    config = write_config(tmp_path, [entry(guarded.url)])
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    done = subprocess.run(
        [HARNESS, "check", "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 1
    lines = (done.stdout + done.stderr).splitlines()
    [problem] = [line for line in lines if line.startswith("problem: ")]
    assert problem.startswith(f"problem: {config}:3: entry 'remote': ")
    assert SAID.format(url=guarded.url) in problem
    assert "Server returned an error response" not in done.stdout + done.stderr


async def test_a_401_to_a_call_says_the_server_requires_authorisation(tmp_path: Path) -> None:
    upstream = Upstream({"tools/call"})
    try:
        async with Host(write_config(tmp_path, [entry(upstream.url)])) as host:
            assert host.tools.list() == ["remote_echo"]
            result = await host.tools.execute({"id": "1", "name": "remote_echo", "args": {}})
    finally:
        upstream.close()
    assert result.code == "tool_error"
    assert result.error == SAID.format(url=upstream.url)
