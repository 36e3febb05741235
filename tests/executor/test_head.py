"""A Ray cluster head that goes away fails the shipped calls; the host process lives on.

A real head (``ray start --head``, its own ports and folder, on loopback) and a real Host
in a process of its own (one Ray connection per process: this test process's cluster is
``tests/executor/test_ray.py``'s). The head is killed, the host keeps calling past Ray's
own 60 s limit (after which a Ray driver ends its process by default), then a new head
starts on the same port and the next call ships again.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..helpers import write

RAY = str(Path(sys.executable).parent / "ray")

PLUGIN = """
import os

from harness import tool

inject = ["tools"]


def apply(ctx, config):
    @tool(timeout=20)
    async def where() -> int:
        "The id of the process running this body."
        return os.getpid()

    ctx.tools.register(where)
"""

# The host: one call per line read ("where"), its result as one JSON line.
HOST = """
import json
import sys

import anyio
import anyio.to_thread

from harness import Host


async def main():
    async with Host(sys.argv[1]) as host:
        print(json.dumps({"ready": True}), flush=True)
        while line := await anyio.to_thread.run_sync(sys.stdin.readline):
            result = await host.tools.execute({"id": "c", "name": line.strip(), "args": {}})
            print(json.dumps(result.to_dict()), flush=True)


anyio.run(main)
"""


def environment() -> dict[str, str]:
    """This process's environment without harness's or Ray's variables.

    A ``ray.init`` earlier in this process (another test file) left ``RAY_AUTH_MODE=token``
    here: a host with it fails against this head, which runs without authentication.
    """
    return {k: v for k, v in os.environ.items() if not k.startswith(("HARNESS_", "RAY_"))}


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


class Head:
    """``ray start --head --block`` on loopback with ports of its own; start, kill, again."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="rayhead", dir="/tmp")  # short: socket paths
        self.ports = free_ports(7)
        self.process: subprocess.Popen[str] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.ports[0]}"

    def start(self) -> None:
        gcs, listen, grpc, metrics, node, objects, runtime = self.ports
        variables = environment()
        variables["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
        variables["RAY_AUTH_MODE"] = "disabled"  # no token file written in the home folder
        # ray start --head never prompts; its last line says it blocks until signalled
        self.process = subprocess.Popen(
            [
                *(RAY, "start", "--head", "--block", "--disable-usage-stats"),
                *("--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--include-dashboard", "0"),
                *("--temp-dir", self.folder, "--port", str(gcs)),
                *("--dashboard-agent-listen-port", str(listen)),
                *("--dashboard-agent-grpc-port", str(grpc), "--metrics-export-port", str(metrics)),
                *("--node-manager-port", str(node), "--object-manager-port", str(objects)),
                *("--runtime-env-agent-port", str(runtime)),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=variables,
            start_new_session=True,  # its own process group: killed as a whole
        )
        assert self.process.stdout is not None
        seen: list[str] = []
        for line in self.process.stdout:
            seen.append(line)
            if "block forever" in line:
                break
        else:
            pytest.fail("ray start --head ended early:\n" + "".join(seen[-30:]))
        # keep draining its output, so that it never blocks on a full pipe
        self.drain = threading.Thread(target=self.process.stdout.read, daemon=True)
        self.drain.start()

    def kill(self, how: signal.Signals = signal.SIGKILL) -> None:
        """The head machine is lost: every process of the head, at once (SIGKILL)."""
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, how)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        self.drain.join(timeout=30)
        assert self.process.stdout is not None
        self.process.stdout.close()
        self.process = None


@pytest.fixture
def head() -> Iterator[Head]:
    made = Head()
    try:
        made.start()
        yield made
    finally:
        if made.process is not None:
            made.kill(signal.SIGTERM)
        shutil.rmtree(made.folder, ignore_errors=True)


class Hosted:
    """A Host in its own process, answering one call per line."""

    def __init__(self, config: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOST, str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment(),  # harness sets Ray's wait for a lost head itself
        )
        self.errors: list[str] = []
        self.logged = threading.Condition()
        assert self.process.stderr is not None
        self.drain = threading.Thread(target=self._drain, args=(self.process.stderr,))
        self.drain.start()
        assert self.read() == {"ready": True}

    def _drain(self, stream: Any) -> None:
        for line in stream:
            with self.logged:
                self.errors.append(line)
                self.logged.notify_all()

    def wait_logged(self, text: str) -> bool:
        """Wait (up to 30 s) until the host's stderr says ``text``: stderr and stdout are
        two pipes, so a line logged before a result may be read after it."""
        with self.logged:
            return self.logged.wait_for(lambda: text in "".join(self.errors), timeout=30)

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            pytest.fail(
                f"the host process ended (exit code {self.process.wait(timeout=30)}):\n"
                + "".join(self.errors[-40:])
            )
        data: dict[str, Any] = json.loads(line)
        return data

    def call(self, name: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(name + "\n")
        self.process.stdin.flush()
        return self.read()

    def close(self) -> int:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            code = self.process.wait(timeout=60)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(timeout=30)
            self.drain.join(timeout=30)
            for stream in (self.process.stdout, self.process.stderr):
                if stream is not None:
                    stream.close()
        return code


def test_a_lost_head_fails_the_calls_and_never_ends_the_host(head: Head, tmp_path: Path) -> None:
    write(tmp_path / "probe.py", PLUGIN)
    write(
        tmp_path / "cordis.yml",
        f"""
        insert:
          - id: probe
            name: ./probe.py
          - id: remote
            name: harness:ray-executor
            config: {{ address: "{head.address}", tools: [where], connect_timeout: 20 }}
        """,
    )
    config = tmp_path / "cordis.yml"
    hosted = Hosted(config)
    try:
        first = hosted.call("where")
        assert first["ok"] is True, first["error"]
        assert first["result"] != hosted.process.pid
        head.kill()
        with contextlib.suppress(ProcessLookupError):
            os.kill(first["result"], signal.SIGKILL)  # the executor went with its machine
        lost = f"nothing answers at {head.address} (Connection refused)"
        where = f"(entry 'remote' at {config}:5)"
        gone = hosted.call("where")
        assert gone["code"] == "internal"
        assert gone["error"] == (
            f"Tool where could not run: the Ray cluster's head is gone: {lost}; no call "
            "ships until it answers again (start the head again, or point `address` at a "
            f"running cluster): each call tries to reconnect {where}"
        )
        assert hosted.wait_logged(
            f"problem: {config}:5: entry 'remote': the Ray cluster's head is gone: {lost}"
        )
        # Past Ray's own limit (60 s), after which its driver would end the host: pacing,
        # one call every two seconds, each failing at once and saying why.
        killed = time.monotonic()
        while time.monotonic() - killed < 65:
            again = hosted.call("where")
            assert again["code"] == "internal"
            assert again["error"] == (
                f"Tool where could not run: its Ray executor is unavailable: {lost} {where}"
            )
            assert hosted.process.poll() is None
            time.sleep(2)
        head.start()  # a new cluster on the same port: the next call reconnects
        back = hosted.call("where")
        assert back["ok"] is True, back["error"]
        assert back["result"] not in (first["result"], hosted.process.pid)
    finally:
        code = hosted.close()
    assert code == 0, "".join(hosted.errors[-40:])
