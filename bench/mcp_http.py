"""MCP over streamable HTTP: ``harness run`` with the bundled config beside the SDK's MCPServer.

Both servers run as their own processes on 127.0.0.1 and serve ``add(a, b)``; the load
comes from this process: N keep-alive connections, each sending 2026-07-28 ``tools/call``
requests (the exact bytes the SDK's ``Client`` sends) one after another, over raw sockets so
that the client costs as little as possible. Rounds alternate between the servers.

Reported per server: requests per second and p50/p99 latency of its best round (wall time:
on a loaded machine these move with the load), and the server's own CPU time per request
(the scheduler's nanosecond count of every thread, read from /proc between rounds; the
median round), which other processes do not inflate: its inverse is what one server process
can serve on one core.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0.1.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def request_bytes(port: int, method: str, params: dict[str, object], name: str = "") -> bytes:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}},
        separators=(",", ":"),
    ).encode()
    headers = [
        "POST /mcp HTTP/1.1",
        f"host: 127.0.0.1:{port}",
        "accept: application/json, text/event-stream",
        "content-type: application/json",
        "mcp-protocol-version: 2026-07-28",
        f"mcp-method: {method}",
        *([f"mcp-name: {name}"] if name else []),
        f"content-length: {len(body)}",
    ]
    return ("\r\n".join(headers) + "\r\n\r\n").encode() + body


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    fields = {
        k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)
    }
    if "content-length" in fields:
        return status, await reader.readexactly(int(fields["content-length"]))
    body = b""  # chunked (an SSE stream)
    while True:
        size = int((await reader.readuntil(b"\r\n")).strip(), 16)
        chunk = await reader.readexactly(size + 2)
        if size == 0:
            return status, body
        body += chunk[:-2]


async def load(port: int, clients: int, per_client: int) -> tuple[float, list[float]]:
    """Requests per second and every latency (seconds) of one round."""
    payload = request_bytes(
        port, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, "add"
    )
    latencies: list[float] = []

    async def client() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for _ in range(per_client):
                start = time.perf_counter()
                writer.write(payload)
                status, body = await read_response(reader)
                latencies.append(time.perf_counter() - start)
                if status != 200 or b'"isError":false' not in body.replace(b" ", b""):
                    raise RuntimeError(f"bad answer {status}: {body[:200]!r}")
        finally:
            writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.perf_counter() - start
    return clients * per_client / elapsed, latencies


async def wait_ready(port: int, process: subprocess.Popen[bytes], within: float = 60) -> None:
    payload = request_bytes(port, "tools/list", {})
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server on {port} exited with {process.returncode}")
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.1)
            continue
        writer.write(payload)
        status, _ = await read_response(reader)
        writer.close()
        if status == 200:
            return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"server on {port} did not start")


@contextmanager
def servers() -> Iterator[dict[str, tuple[int, subprocess.Popen[bytes]]]]:
    """Start harness (bundled config) and the SDK peer; stop both at the end."""
    started: dict[str, tuple[int, subprocess.Popen[bytes]]] = {}
    from .project import default_project

    with tempfile.TemporaryDirectory() as workspace, tempfile.TemporaryDirectory() as folder:
        config = default_project(Path(folder))
        env = {**os.environ, "HARNESS_WORKSPACE": workspace, "PYTHONUNBUFFERED": "1"}
        harness_bin = Path(sys.executable).parent / "harness"
        port = free_port()
        started[HARNESS] = (
            port,
            subprocess.Popen(
                [
                    str(harness_bin),
                    "-c",
                    str(config),
                    "run",
                    "--no-watch",
                    "--port",
                    str(port),
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd=workspace,
            ),
        )
        port = free_port()
        started[PEER] = (
            port,
            subprocess.Popen(
                [sys.executable, "-m", "bench.mcp_peer", str(port)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd=ROOT,
            ),
        )
        try:
            yield started
        finally:
            for _, process in started.values():
                process.terminate()
            for _, process in started.values():
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()


def cpu_seconds(pid: int) -> float:
    """CPU time of a process (all its threads), in nanoseconds from the scheduler's
    /proc/PID/task/*/schedstat where the kernel keeps it, else user + system clock ticks."""
    try:
        total = 0
        for task in Path(f"/proc/{pid}/task").iterdir():
            total += int((task / "schedstat").read_text().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def measure(
    clients: int = 16, per_client: int = 40, rounds: int = 7
) -> dict[str, dict[str, float]]:
    with servers() as running:
        for port, process in running.values():
            await wait_ready(port, process)
        for port, _ in running.values():  # warm up
            await load(port, clients, 10)
        best: dict[str, dict[str, float]] = {}
        cpu: dict[str, list[float]] = {label: [] for label in running}
        for _ in range(rounds):
            for label, (port, process) in running.items():
                before = cpu_seconds(process.pid)
                rate, latencies = await load(port, clients, per_client)
                cpu[label].append((cpu_seconds(process.pid) - before) / len(latencies))
                if label not in best or rate > best[label]["rps"]:
                    best[label] = {
                        "rps": rate,
                        "p50": percentile(latencies, 0.50) * 1000,
                        "p99": percentile(latencies, 0.99) * 1000,
                    }
        for label, row in best.items():
            row["cpu_us"] = percentile(cpu[label], 0.5) * 1e6
        return best


async def main() -> None:
    load_average = os.getloadavg()[0]
    for clients, per_client in ((1, 300), (16, 40)):
        results = await measure(clients=clients, per_client=per_client)
        print(
            f"tools/call add over streamable HTTP, {clients} client(s), 7 alternating rounds "
            f"of {clients * per_client} (load average {load_average:.1f})"
        )
        for label, row in results.items():
            print(
                f"  {label:<34} {row['rps']:6.0f} req/s  p50 {row['p50']:6.2f} ms  "
                f"p99 {row['p99']:6.2f} ms  server CPU {row['cpu_us']:5.0f} µs/req"
            )
        ours, peer = results[HARNESS], results[PEER]
        print(
            f"  harness / SDK: requests per second x{ours['rps'] / peer['rps']:.2f}, p99 "
            f"x{ours['p99'] / peer['p99']:.2f}, requests per CPU second "
            f"x{peer['cpu_us'] / ours['cpu_us']:.2f}"
        )


HARNESS = "harness run (bundled cordis.yml)"
PEER = "MCP SDK MCPServer"
