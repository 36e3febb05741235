"""The console's token: its redirect, its throttle, its scheme, and where it is shown.

Against a real ``harness run`` on 127.0.0.1: raw sockets where an HTTP client would tidy
the request up, and headless Chromium to read a redirect target as a browser does.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import pty
import re
import select
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from ..helpers import HARNESS
from .conftest import Served, make_project

TOKEN = "the-console-token"
HOSTILE = [
    "//evil.example/",
    "///evil.example/",
    "////evil.example/x",
    "/\\evil.example/",
    "/\\\\evil.example/",
    "/%5Cevil.example/",
    "/%5C%5Cevil.example/",
    "/%2F%2Fevil.example/",
    "/%2F/evil.example/",
    "//%2Fevil.example/",
    "/%09/evil.example/",
    "/%0A/evil.example/",
    "/%0D%0A/evil.example/",
    "/%09%09//evil.example/",
    "/%20//evil.example/",
    "/https://evil.example/",
    "/https:evil.example",
    "/%68ttps://evil.example/",
    "/.//evil.example/",
    "/..//evil.example/",
    "/./%2F/evil.example/",
    "/%2E%2E//evil.example/",
    "/%00//evil.example/",
    "/%E2%80%8B//evil.example/",
    "/%EF%BC%8F%EF%BC%8Fevil.example/",  # fullwidth solidus
    "/javascript:alert(1)",
    "/@evil.example",
    "/%40evil.example",
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    server = Served(make_project(tmp_path_factory.mktemp("token")), "--token", TOKEN)
    yield server
    server.close()


def port_of(served: Served) -> int:
    return int(served.base.rsplit(":", 1)[1].split("/")[0])


def raw_get(port: int, target: str, headers: str = "") -> tuple[int, dict[str, str]]:
    """One ``GET target`` written byte for byte; the status and headers of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        request = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{headers}"
        connection.sendall(request.encode("latin-1") + b"Connection: close\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = connection.recv(65536)
            if not chunk:
                break
            data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    status = int(head[0].split(" ")[1])
    fields = {}
    for line in head[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return status, fields


def test_the_token_redirect_stays_on_this_server(browser: Any, served: Served) -> None:
    port = port_of(served)
    origin = f"127.0.0.1:{port}"
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"http://{origin}/static/app.css")  # any page of ours, to resolve URLs in
        for path in HOSTILE:
            status, fields = raw_get(port, f"{path}?token={TOKEN}&keep=1")
            assert status == 303, path
            location = fields["location"]
            assert location.startswith("/"), location
            assert location[1:2] not in ("/", "\\"), location
            assert location.isascii(), location
            assert location.isprintable(), location
            assert location.endswith("?keep=1"), location
            assert TOKEN not in location
            # how Chromium reads it: the WHATWG URL parser, relative to this server
            resolved = page.evaluate("(target) => new URL(target, location.href).host", location)
            assert resolved == origin, (path, location, resolved)
        # and a browser following one lands here, with the cookie set
        page.goto(f"http://{origin}//evil.example/?token={TOKEN}")
        assert page.url == f"http://{origin}/evil.example/"
        assert '"error"' in page.content()  # our own 404, in JSON
    finally:
        context.close()


def test_the_redirect_keeps_an_ordinary_path_and_query(served: Served) -> None:
    status, fields = raw_get(port_of(served), f"/?token={TOKEN}&x=1&y=a%20b")
    assert status == 303
    assert fields["location"] == "/?x=1&y=a+b"
    status, fields = raw_get(port_of(served), f"/static/app.css?token={TOKEN}")
    assert fields["location"] == "/static/app.css"


def client_from(address: str, **options: Any) -> httpx2.Client:
    """An HTTP client whose connections come from ``address`` (any of 127.0.0.0/8)."""
    return httpx2.Client(transport=httpx2.HTTPTransport(local_address=address), **options)


MCP_PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


ELSEWHERE = {"X-Forwarded-For": "203.0.113.7"}
"""A client on another machine, as the listed proxy on loopback forwards it."""
NEIGHBOUR = {"X-Forwarded-For": "198.51.100.1"}


def test_wrong_tokens_are_throttled_per_client(tmp_path: Path) -> None:
    server = Served(make_project(tmp_path), "--token", TOKEN, "--trust-proxy", "127.0.0.1")
    try:
        api = server.base + "api/tools"
        mcp = server.base + "mcp"
        right = {**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}"}
        with httpx2.Client(timeout=10) as loopback:
            entry = loopback.get(server.base + f"?token={TOKEN}", headers=ELSEWHERE)
            assert entry.status_code == 303
            name, value = entry.headers["set-cookie"].split(";")[0].split("=", 1)
            loopback.cookies.clear()  # sent only where a test says so
            for guess in range(10):  # the free ones: a plain 401 each, on either surface
                url = mcp if guess % 2 else api
                wrong = {**MCP_HEADERS, **ELSEWHERE, "Authorization": f"Bearer guess-{guess}"}
                answer = (
                    loopback.post(url, json=MCP_PING, headers=wrong)
                    if url == mcp
                    else loopback.get(url, headers=wrong)
                )
                assert answer.status_code == 401, (guess, answer.text)
            for attempt in (
                {"Authorization": "Bearer guess-10"},
                {"Authorization": f"Bearer {TOKEN}"},  # not even checked now
                {"Cookie": f"{name}={'0' * len(value)}"},  # nor a made-up cookie
            ):
                locked = loopback.get(api, headers={**attempt, **ELSEWHERE})
                assert locked.status_code == 429, locked.text
                assert 1 <= int(locked.headers["retry-after"]) <= 60
                assert "too many wrong tokens" in locked.json()["error"]
            token_url = server.base + f"?token={TOKEN}"
            assert loopback.get(token_url, headers=ELSEWHERE).status_code == 429
            locked_mcp = loopback.post(mcp, json=MCP_PING, headers={**right, **ELSEWHERE})
            assert locked_mcp.status_code == 429
            # no credentials at all is no guess: still a plain 401
            assert loopback.get(api, headers=ELSEWHERE).status_code == 401
            # the right token from another client works, on both surfaces: from another
            # machine, and from this one (loopback, not through the proxy)
            for other in (NEIGHBOUR, {}):
                bearer = {"Authorization": f"Bearer {TOKEN}", **other}
                assert loopback.get(api, headers=bearer).status_code == 200, other
                past = loopback.post(mcp, json=MCP_PING, headers={**right, **other})
                assert past.status_code not in (401, 403, 429), other  # MCP answers
                assert loopback.get(token_url, headers=other).status_code == 303, other
                loopback.cookies.clear()
            # and a page already holding the cookie keeps working from the locked client
            page = loopback.get(api, headers={"Cookie": f"{name}={value}", **ELSEWHERE})
            assert page.status_code == 200
        log = "".join(server.lines)
        assert "10 wrong tokens from 203.0.113.7: its token attempts are refused for 60 s" in log
        assert TOKEN not in log
    finally:
        server.close()


def test_a_cookie_cannot_be_made_from_a_guess_and_wrong_ones_are_throttled(
    tmp_path: Path,
) -> None:
    server = Served(make_project(tmp_path), "--token", TOKEN)
    try:
        api = server.base + "api/tools"
        with httpx2.Client(timeout=10) as client:
            entry = client.get(server.base + f"?token={TOKEN}")
            name, value = entry.headers["set-cookie"].split(";")[0].split("=", 1)
            client.cookies.clear()

            def with_cookie(cookie: str) -> httpx2.Response:
                return client.get(api, headers={"Cookie": f"{name}={cookie}"})

            # what anyone could compute from a guessed token opens nothing
            made = hmac.new(TOKEN.encode(), b"harness web console", hashlib.sha256).hexdigest()
            assert with_cookie(made).status_code == 401
            answers = [with_cookie(f"{guess:064x}").status_code for guess in range(10)]
            assert answers == [401] * 9 + [429]  # the tenth wrong cookie locks the client
            assert with_cookie(f"{99:064x}").status_code == 429
            assert client.get(api, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 429
            assert with_cookie(value).status_code == 200  # the server's own cookie still works
    finally:
        server.close()


def test_a_stale_token_retried_locks_nobody_out(served: Served) -> None:
    """A client configured with an old token retries it forever: that is one wrong token,
    not a lock-out of the right token sent from the same machine."""
    api = served.base + "api/tools"
    stale = {"Authorization": "Bearer the-token-of-last-week"}
    with httpx2.Client(timeout=10) as client:
        assert [client.get(api, headers=stale).status_code for _ in range(30)] == [401] * 30
        ping = client.post(served.base + "mcp", json=MCP_PING, headers={**MCP_HEADERS, **stale})
        assert ping.status_code == 401
        assert client.get(api, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_every_loopback_address_is_one_client(tmp_path: Path) -> None:
    """This machine may connect from any of 127.0.0.0/8: rotating them gains no guesses."""
    server = Served(make_project(tmp_path), "--token", TOKEN)
    try:
        api = server.base + "api/tools"
        answers = []
        for number in range(11):
            with client_from(f"127.0.0.{number + 1}", timeout=10) as client:
                wrong = {"Authorization": f"Bearer guess-{number}"}
                answers.append(client.get(api, headers=wrong).status_code)
        assert answers == [401] * 10 + [429]
        assert "10 wrong tokens from loopback: its token attempts" in "".join(server.lines)
    finally:
        server.close()


def test_the_bearer_scheme_is_read_in_any_case(served: Served) -> None:
    api = served.base + "api/tools"
    for header in (
        f"Bearer {TOKEN}",
        f"bearer {TOKEN}",
        f"BEARER {TOKEN}",
        f"bEaReR {TOKEN}",
        f"Bearer   {TOKEN}",
        f"Bearer\t{TOKEN}",
    ):
        assert httpx2.get(api, headers={"Authorization": header}).status_code == 200, header
        mcp = httpx2.post(
            served.base + "mcp", json=MCP_PING, headers={**MCP_HEADERS, "Authorization": header}
        )
        assert mcp.status_code not in (401, 403, 429), (header, mcp.text)
    for header in (f"Basic {TOKEN}", f"Bearer{TOKEN}", TOKEN, "Bearer"):
        assert httpx2.get(api, headers={"Authorization": header}).status_code == 401, header


class Terminal:
    """``harness run`` with its stderr on a real pseudo-terminal, as in a person's shell."""

    def __init__(self, *args: str, cwd: Path) -> None:
        self.master, slave = pty.openpty()
        environment = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
        self.process = subprocess.Popen(
            [HARNESS, "run", *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=slave,
            env=environment,
        )
        os.close(slave)
        self.text = ""

    def read_until(self, marker: str) -> str:
        deadline = time.monotonic() + 60
        while marker not in self.text:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.master], [], [], max(left, 0))
            assert ready, f"no {marker!r} on the terminal in 60 s:\n{self.text}"
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # the process closed the terminal
                chunk = b""
            assert chunk, f"harness run ended before {marker!r}:\n{self.text}"
            self.text += chunk.decode(errors="replace")
        return self.text

    def close(self) -> None:
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=20)
        os.close(self.master)


def test_a_given_token_shows_on_a_terminal_only(tmp_path: Path) -> None:
    config = make_project(tmp_path)
    # stderr to a pipe (a log): the URL without the token, and where the token is
    logged = Served(config, "--token", TOKEN)
    try:
        assert logged.url == logged.base
        assert not logged.url.endswith("?token=")
        line = next(line for line in logged.lines if "web console at" in line)
        assert "the token is the value of --token / HARNESS_MCP_TOKEN" in line
    finally:
        logged.close()
    assert TOKEN not in "".join(logged.lines)
    # stderr on a terminal: a person reads it, and can click the URL
    terminal = Terminal("-c", str(config), "--port", "0", "--token", TOKEN, cwd=tmp_path)
    try:
        text = terminal.read_until("press Ctrl-C")
        assert re.search(rf"web console at http://127\.0\.0\.1:\d+/\?token={TOKEN}\s", text)
    finally:
        terminal.close()


def test_a_public_bind_without_a_token_gets_a_generated_one(tmp_path: Path) -> None:
    config = make_project(tmp_path)
    token_file = tmp_path / ".harness" / "token"
    logged = Served(config, "--host", "0.0.0.0")
    try:
        token = token_file.read_text().strip()
        assert len(token) >= 43  # secrets.token_urlsafe(32)
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        line = next(line for line in logged.lines if "web console at" in line)
        assert f"the token this run made is in {token_file} (readable by you only)" in line
        base = logged.base.replace("0.0.0.0", "127.0.0.1")
        assert httpx2.get(base + "api/tools").status_code == 401
        bearer = {"Authorization": f"Bearer {token}"}
        assert httpx2.get(base + "api/tools", headers=bearer).status_code == 200
        ping = httpx2.post(base + "mcp", json=MCP_PING, headers={**MCP_HEADERS, **bearer})
        assert ping.status_code not in (401, 403, 429)
    finally:
        logged.close()
    assert token not in "".join(logged.lines)
    assert not token_file.exists()  # the token ends with the run
    terminal = Terminal("-c", str(config), "--port", "0", "--host", "0.0.0.0", cwd=tmp_path)
    try:
        text = terminal.read_until("press Ctrl-C")
        made = re.search(r"so this run made one: (\S+) \(MCP clients send", text)
        assert made, text
        assert len(made.group(1)) >= 43
        assert f"/?token={made.group(1)}" in text
        assert not token_file.exists()  # shown to the person, written nowhere
    finally:
        terminal.close()
