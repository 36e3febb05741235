"""Two ``harness run`` replicas behind a real HAProxy, round-robin on 127.0.0.1 (DESIGN §13).

The replicas share ``HARNESS_SECRET`` and ``HARNESS_STATE_DIR`` and the same ``cordis.yml``;
HAProxy (Debian's package, installed by the test set-up when missing) balances every request
in turn and names the replica that answered in an ``X-Replica`` header, so the test can see
an approval asked through one replica answered through the other, a replay refused by both,
and every replica's clients told about a config edit that each replica hot-reloads.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from harness.mcp import APPROVAL_KEY

from ..gateway.system import ensure_debian_packages
from ..helpers import HARNESS, ROOT, Elicitor, write
from ..processes import start_harness_run, stop

pytestmark = pytest.mark.anyio
ACCEPT = types.ElicitResult(action="accept", content={"approve": True})
REVISION = "harness/revision"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK's HTTP client and uvicorn run on asyncio


def config_text(echo: bool = True) -> str:
    plugins = ROOT / "plugins"
    return f"""
        insert:
          - id: policy
            name: {plugins / "policy.py"}
            config: {{ default: allow, rules: {{ write_text_file: ask }} }}
          - id: echo
            name: {plugins / "echo.py"}
            enabled: {"true" if echo else "false"}
          - id: add
            name: {plugins / "add.py"}
          - id: write_text_file
            name: {plugins / "write_text_file.py"}
            config: {{ root: "${{HARNESS_WORKSPACE}}" }}
        """


def haproxy_config(ports: list[int], fd: int) -> str:
    servers = "\n".join(
        f"  server {name} 127.0.0.1:{port}" for name, port in zip("ab", ports, strict=True)
    )
    return f"""
global
  maxconn 256
defaults
  mode http
  timeout connect 5s
  timeout client 120s
  timeout server 120s
frontend mcp
  bind fd@{fd}
  default_backend replicas
backend replicas
  balance roundrobin
  stick-table type string len 64 size 10k expire 30m
  stick on req.hdr(mcp-session-id)
  stick store-response res.hdr(mcp-session-id)
  http-response set-header X-Replica %[srv_name]
{servers}
"""


@dataclass
class Cluster:
    url: str
    folder: Path
    workspace: Path


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    ensure_debian_packages("haproxy", commands=("haproxy",))
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    write(tmp_path / "cordis.yml", config_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env.update(
        HARNESS_SECRET="the replicas' shared secret",
        HARNESS_STATE_DIR=str(tmp_path / "state"),
        HARNESS_WORKSPACE=str(workspace),
    )
    processes: list[subprocess.Popen[Any]] = []
    try:
        ports = []
        for _ in range(2):
            process, port = start_harness_run(tmp_path, env)
            processes.append(process)
            ports.append(port)
        # HAProxy inherits a listening socket, so it is reachable before it even starts
        listener = socket.create_server(("127.0.0.1", 0))
        fd = listener.fileno()
        (tmp_path / "haproxy.cfg").write_text(haproxy_config(ports, fd))
        balancer = subprocess.Popen(
            ["haproxy", "-db", "-f", str(tmp_path / "haproxy.cfg")],
            pass_fds=(fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        processes.append(balancer)
        port = listener.getsockname()[1]
        listener.close()  # HAProxy holds its own copy
        yield Cluster(f"http://127.0.0.1:{port}/mcp", tmp_path, workspace)
    finally:
        for process in reversed(processes):
            stop(process)


class Replicas:
    """Which replica answered each request, from HAProxy's ``X-Replica`` header."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    async def __call__(self, response: httpx2.Response) -> None:
        method = response.request.headers.get("mcp-method", "")
        self.seen.append((method, response.headers.get("x-replica", "?")))

    def last(self, method: str) -> str:
        return [replica for name, replica in self.seen if name == method][-1]


@contextlib.asynccontextmanager
async def client(
    url: str, replicas: Replicas, mode: str = "2026-07-28", on_message: Any = None
) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(
        timeout=httpx2.Timeout(30, read=120), event_hooks={"response": [replicas]}
    )
    async with (
        http,
        Client(
            streamable_http_client(url, http_client=http),
            mode=mode,
            elicitation_callback=Elicitor(),
            message_handler=on_message,
            cache=None,
        ) as connected,
    ):
        yield connected


def text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def test_an_approval_asked_on_one_replica_is_answered_on_the_other(
    cluster: Cluster,
) -> None:
    replicas = Replicas()
    args = {"path": "approved.txt", "content": "through two replicas"}
    async with client(cluster.url, replicas) as connected:
        asked = await connected.session.call_tool(
            "write_text_file", args, allow_input_required=True
        )
        assert isinstance(asked, types.InputRequiredResult), asked
        asked_on = replicas.last("tools/call")
        assert not (cluster.workspace / "approved.txt").exists()
        responses: types.InputResponses = {APPROVAL_KEY: ACCEPT}
        done = await connected.session.call_tool(
            "write_text_file", args, input_responses=responses, request_state=asked.request_state
        )
        answered_on = replicas.last("tools/call")
        assert {asked_on, answered_on} == {"a", "b"}  # round-robin: one each
        assert done.is_error is False, text(done)
        assert (cluster.workspace / "approved.txt").read_text() == "through two replicas"
        (cluster.workspace / "approved.txt").unlink()

        replayed_on = set()
        for _ in range(2):  # once through each replica
            with pytest.raises(MCPError) as replayed:
                await connected.session.call_tool(
                    "write_text_file",
                    args,
                    input_responses=responses,
                    request_state=asked.request_state,
                )
            replayed_on.add(replicas.last("tools/call"))
            assert replayed.value.code == INVALID_PARAMS
            assert replayed.value.message.endswith("was already used; call the tool again")
        assert replayed_on == {"a", "b"}
        assert not (cluster.workspace / "approved.txt").exists()


def notice(heard: anyio.Event) -> Any:
    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            heard.set()

    return on_message


async def revisions(connected: Client, replicas: Replicas) -> dict[str, tuple[str, list[str]]]:
    """Each replica's revision and tool names, listing until both have answered."""
    found: dict[str, tuple[str, list[str]]] = {}
    for _ in range(6):
        listing = await connected.list_tools()
        meta = listing.meta or {}
        found[replicas.last("tools/list")] = (meta[REVISION], [t.name for t in listing.tools])
        if len(found) == 2:
            break
    assert set(found) == {"a", "b"}
    return found


async def test_a_config_edit_reaches_the_clients_of_every_replica(cluster: Cluster) -> None:
    replicas = Replicas()
    async with client(cluster.url, replicas) as connected:
        before = await revisions(connected, replicas)
        assert before["a"] == before["b"]  # same config and plugins: the same revision
        assert before["a"][1] == ["echo", "add", "write_text_file"]

        async with contextlib.AsyncExitStack() as stack:
            # listeners until each replica holds one (HAProxy alternates requests)
            listening: dict[str, Any] = {}
            for _ in range(6):
                watcher = Replicas()
                listener = await stack.enter_async_context(client(cluster.url, watcher))
                subscription = await stack.enter_async_context(
                    listener.listen(tools_list_changed=True)
                )
                listening.setdefault(watcher.last("subscriptions/listen"), subscription)
                if len(listening) == 2:
                    break
            assert set(listening) == {"a", "b"}
            # handshake-era clients: a session lives in one replica (HAProxy sticks to it)
            told: dict[str, anyio.Event] = {}
            for _ in range(6):
                watcher, heard = Replicas(), anyio.Event()
                await stack.enter_async_context(
                    client(cluster.url, watcher, "legacy", on_message=notice(heard))
                )
                # every request of the session went to the replica that answered initialize
                assert len({replica for _, replica in watcher.seen}) == 1, watcher.seen
                told.setdefault(watcher.seen[0][1], heard)
                if len(told) == 2:
                    break
            assert set(told) == {"a", "b"}

            write(cluster.folder / "cordis.yml", config_text(echo=False))
            with anyio.fail_after(30):
                for subscription in listening.values():
                    event = await subscription.__anext__()
                    assert isinstance(event, ToolsListChanged)
                for heard in told.values():
                    await heard.wait()

        after = await revisions(connected, replicas)
        assert after["a"] == after["b"]
        assert after["a"][1] == ["add", "write_text_file"]
        assert after["a"][0] != before["a"][0]


def replica_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env.update(extra)
    return env


@pytest.mark.parametrize("command", ["run", "mcp"])
def test_a_secret_without_a_state_folder_refuses_to_start(tmp_path: Path, command: str) -> None:
    # each replica would remember used approvals in its own memory only: a state token
    # replayed through the other replica would approve once more
    write(tmp_path / "cordis.yml", config_text())
    args = ["--port", "0", "--no-web"] if command == "run" else []
    done = subprocess.run(
        [HARNESS, command, "--config", str(tmp_path / "cordis.yml"), *args],
        cwd=tmp_path,
        env=replica_env(HARNESS_SECRET="shared", HARNESS_WORKSPACE=str(tmp_path)),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(
        "ConfigError: HARNESS_SECRET is set but HARNESS_STATE_DIR is not: replicas sharing "
        "the secret would each accept a replayed approval once more"
    ), done.stderr
    assert "set HARNESS_STATE_DIR to a folder every replica can write" in done.stderr
    assert "Traceback" not in done.stderr
    assert "serving MCP" not in done.stderr
    assert done.stdout == ""  # nothing loaded: refused before the entries


def test_a_state_folder_that_cannot_be_written_refuses_to_start(tmp_path: Path) -> None:
    write(tmp_path / "cordis.yml", config_text())
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file")
    done = subprocess.run(
        [HARNESS, "run", "--config", str(tmp_path / "cordis.yml"), "--port", "0"],
        cwd=tmp_path,
        env=replica_env(
            HARNESS_SECRET="shared",
            HARNESS_STATE_DIR=str(blocker),
            HARNESS_WORKSPACE=str(tmp_path),
        ),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(
        f"ConfigError: HARNESS_STATE_DIR={str(blocker)!r} cannot hold the used approvals: "
        f"{blocker}/spent-approvals cannot be written (Not a directory)"
    ), done.stderr
    assert "Traceback" not in done.stderr
