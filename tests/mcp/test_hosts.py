"""``--host 0.0.0.0 --token T``: clients using the machine's own names get through, others 421."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import httpx2

from harness.mcp import allowed_hosts, machine_names

from ..helpers import run_harness
from .test_surface import ACCEPT, TOKEN, Served, project

HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def test_allowed_hosts_follow_the_bind_address() -> None:
    loopback = ["127.0.0.1:*", "[::1]:*", "localhost:*"]
    assert allowed_hosts("127.0.0.1") == loopback
    assert allowed_hosts("10.1.2.3") == sorted([*loopback, "10.1.2.3:*"])
    assert allowed_hosts("127.0.0.1", ["tools.example", "proxy.example:443", "::2"]) == sorted(
        [*loopback, "tools.example:*", "proxy.example:443", "[::2]:*"]
    )
    wildcard = allowed_hosts("0.0.0.0")
    for name in machine_names():
        assert (f"[{name}]:*" if ":" in name else f"{name}:*") in wildcard


def test_public_bind_accepts_the_machines_addresses_and_allowed_names(tmp_path: Path) -> None:
    served = Served(
        "run",
        "-c",
        str(project(tmp_path)),
        "--host",
        "0.0.0.0",
        "--port",
        "0",
        "--no-watch",
        "--token",
        "s3cret",
        "--allow-host",
        "tools.example",
        cwd=tmp_path,
    )
    try:
        port = int(re.search(r":(\d+)/mcp$", served.url).group(1))  # type: ignore[union-attr]
        headers = {**ACCEPT, **TOKEN}
        addresses = [name for name in machine_names() if re.fullmatch(r"[\d.]+", name)]
        assert addresses, "this machine has no IPv4 address to test with"
        for address in addresses:
            # a real connection to the machine's address, as another machine would make it
            reply = httpx2.post(f"http://{address}:{port}/mcp", json=HELLO, headers=headers)
            assert reply.status_code == 200, (address, reply.status_code, reply.text)
        local = f"http://127.0.0.1:{port}/mcp"
        named = httpx2.post(local, json=HELLO, headers={**headers, "Host": f"tools.example:{port}"})
        assert named.status_code == 200, named.text
        foreign = httpx2.post(
            local, json=HELLO, headers={**headers, "Host": f"evil.example:{port}"}
        )
        assert foreign.status_code == 421
        # the web console on the same port answers to the same names (--allow-host too)
        console = local.removesuffix("mcp")
        for name in [*addresses, "tools.example"]:
            page = httpx2.get(console, headers={**TOKEN, "Host": f"{name}:{port}"})
            assert page.status_code == 200, (name, page.status_code, page.text)
            assert "harness" in page.text
        refused = httpx2.get(console, headers={**TOKEN, "Host": "evil.example"})
        assert refused.status_code == 421
    finally:
        served.close()


def test_busy_port_prints_the_error_and_no_running_banner(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_harness(
            "run", "-c", str(project(tmp_path)), "--port", str(port), "--no-watch", cwd=tmp_path
        )
    assert result.returncode == 1, result.stderr
    assert f"cannot serve MCP on 127.0.0.1:{port} (is the port in use? try --port)" in result.stderr
    assert "Ctrl-C" not in result.stderr
    assert "serving MCP at" not in result.stderr
    assert "Traceback" not in result.stderr
