"""Forwarded headers (``X-Forwarded-For``, ``X-Forwarded-Proto``) are believed only from the
proxies the operator lists with ``harness run --trust-proxy``; by default from nobody, so a
local process cannot pose as many clients to the wrong-token throttle or to the sessions
limit. Against a real ``harness run`` over HTTP on 127.0.0.1."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx2

from harness.mcp.http.limits import HttpLimits

from ..helpers import HARNESS
from .conftest import Served, make_project

TOKEN = "the-forwarded-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


def forwarded(number: int) -> dict[str, str]:
    """What a client sends to pose as another machine (``number`` below 250)."""
    return {"X-Forwarded-For": f"203.0.113.{number + 1}"}


def opens_session(client: httpx2.Client, url: str, headers: dict[str, str]) -> int:
    answer = client.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **BEARER, **headers})
    if answer.status_code == 200:
        assert answer.headers["mcp-session-id"]
    return answer.status_code


def test_forwarded_headers_are_not_believed_by_default(tmp_path: Path) -> None:
    server = Served(make_project(tmp_path), "--token", TOKEN)
    try:
        mcp = server.base + "mcp"
        api = server.base + "api/tools"
        limit = HttpLimits().sessions_per_client
        with httpx2.Client(timeout=10) as client:
            entry = client.get(server.base + f"?token={TOKEN}")
            cookie = entry.headers["set-cookie"].split(";")[0]
            client.cookies.clear()
            # a new X-Forwarded-For for each session: still one client, held to its share
            opened = [opens_session(client, mcp, forwarded(number)) for number in range(limit)]
            assert opened == [200] * limit
            refused = client.post(
                mcp, json=INITIALIZE, headers={**MCP_HEADERS, **BEARER, **forwarded(limit)}
            )
            assert refused.status_code == 429, refused.text
            assert f"already holds {limit} MCP sessions" in refused.text
            # a new X-Forwarded-For for each guess: still one client, throttled
            answers = [
                client.get(
                    api, headers={"Authorization": f"Bearer guess-{number}", **forwarded(number)}
                ).status_code
                for number in range(11)
            ]
            assert answers == [401] * 10 + [429]
            locked = client.get(api, headers={**BEARER, **forwarded(99)})
            assert locked.status_code == 429
        # X-Forwarded-Proto is not believed either: the page's origin stays http
        with httpx2.Client(timeout=10) as page:
            host = server.base.split("/")[2]
            change = page.post(
                server.base + "api/plugins/echo/disable",
                json={},
                headers={
                    "Cookie": cookie,  # a page open before the lock-out
                    "Origin": f"https://{host}",
                    "X-Forwarded-Proto": "https",
                },
            )
            assert change.status_code == 403, change.text
            assert f"cross-origin request from https://{host} refused" in change.text
        log = "".join(server.lines)
        assert "10 wrong tokens from loopback" in log
        assert "203.0.113" not in log
    finally:
        server.close()


def test_a_listed_proxy_is_believed(tmp_path: Path) -> None:
    server = Served(
        make_project(tmp_path),
        "--token",
        TOKEN,
        "--trust-proxy",
        "10.0.0.0/8, 127.0.0.1",
        "--sessions-per-client",
        "2",
        "--no-watch",
    )
    try:
        mcp = server.base + "mcp"
        api = server.base + "api/tools"
        first = {"X-Forwarded-For": "203.0.113.7"}
        second = {"X-Forwarded-For": "203.0.113.8"}
        with httpx2.Client(timeout=10) as client:
            # each client behind the proxy has its own share of sessions...
            assert [opens_session(client, mcp, first) for _ in range(3)] == [200, 200, 429]
            assert [opens_session(client, mcp, second) for _ in range(2)] == [200, 200]
            assert opens_session(client, mcp, {}) == 200  # and the proxy itself its own
            # ...and its own count of wrong tokens
            for number in range(10):
                wrong = {"Authorization": f"Bearer guess-{number}", **first}
                assert client.get(api, headers=wrong).status_code == 401
            assert client.get(api, headers={**BEARER, **first}).status_code == 429
            assert client.get(api, headers={**BEARER, **second}).status_code == 200
            assert client.get(api, headers=BEARER).status_code == 200
        # behind a TLS-terminating proxy the page's origin is https
        host = server.base.split("/")[2]
        with httpx2.Client(timeout=10) as page:
            change = page.post(
                server.base + "api/plugins/echo/disable",
                json={},
                headers={
                    **BEARER,
                    **second,
                    "Origin": f"https://{host}",
                    "X-Forwarded-Proto": "https",
                },
            )
            assert change.status_code == 200, change.text
        assert "10 wrong tokens from 203.0.113.7" in "".join(server.lines)
    finally:
        server.close()


def test_trust_proxy_takes_addresses_only(tmp_path: Path) -> None:
    config = make_project(tmp_path)
    done = subprocess.run(
        [HARNESS, "run", "-c", str(config), "--port", "0", "--trust-proxy", "proxy.example"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert (
        "--trust-proxy 'proxy.example' is not an IP address or network: give the address "
        "your reverse proxy connects from, say 127.0.0.1 or 10.0.0.0/8"
    ) in done.stderr
    assert "Traceback" not in done.stderr
