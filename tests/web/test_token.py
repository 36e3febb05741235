"""The console's token: its redirect, its throttle, its scheme, and where it is shown.

Against a real ``harness run`` on 127.0.0.1: raw sockets where an HTTP client would tidy
the request up, and headless Chromium to read a redirect target as a browser does.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

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
