"""harness:ray-executor against a real local Ray cluster (one per test module, 1 CPU).

Every test drives a real Host (or the real ``harness`` command) whose config ships some
tools to Ray executors: other processes, each a harness Host loaded from the same cordis.yml.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from harness import Host, ToolResult

from ..helpers import HARNESS, write

PLUGIN = """
import os
import threading
from pathlib import Path

import anyio

from harness import define_tool, tool

inject = ["tools"]


def apply(ctx, config):
    marks = Path(config["marks"])

    async def tell(port):
        # Tell the test this body is running, and where: a real TCP connection on loopback.
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(str(os.getpid()).encode())

    @tool
    async def where() -> int:
        "The id of the process running this body."
        return os.getpid()

    @tool
    def where_sync() -> int:
        "The id of the process running this sync body."
        return os.getpid()

    @tool
    async def where_local() -> int:
        "The id of the process running this body (never shipped)."
        return os.getpid()

    async def wait_marked(port: int, mark: str) -> None:
        "Say it started, then wait until cancelled, leaving a mark when it stops."
        try:
            await tell(port)
            await anyio.sleep_forever()
        finally:
            (marks / mark).write_text(str(os.getpid()))

    hang = tool(name="hang")(wait_marked)
    # three seconds: room for a loaded machine to start the body before its deadline
    slow = tool(name="slow", timeout=3)(wait_marked)

    @tool(timeout=3)
    def stuck(port: int) -> int:
        "A sync body that never returns by itself (its executor may be killed)."
        import socket

        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(str(os.getpid()).encode())
        threading.Event().wait()
        return 0

    @tool
    def stuck_where() -> int:
        "The process of the executor that runs stuck."
        return os.getpid()

    @tool
    def risky(note: str) -> int:
        "Append a note to the log (the policy asks first), return the process id."
        with open(marks / "risky.log", "a") as log:
            log.write(note + "\\n")
        return os.getpid()

    @tool
    async def relay(note: str) -> dict:
        "Call risky from inside this body: a nested call, through this host's pipeline."
        result = await ctx.tools.execute({"id": "nested", "name": "risky", "args": {"note": note}})
        return {"code": result.code, "error": result.error, "pid": os.getpid()}

    @tool
    async def traceparent() -> dict:
        "The W3C trace context this body runs in (empty outside a trace)."
        from opentelemetry.propagate import inject

        carrier = {}
        inject(carrier)
        return carrier

    tools = (
        where, where_sync, where_local, hang, slow, stuck, stuck_where, risky, relay, traceparent
    )
    for definition in tools:
        ctx.tools.register(definition)
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A real local Ray cluster on loopback, shared by this module; its GCS address."""
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # before Ray's import
    import ray

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cordis.yml with the probe tools, a policy and the executor entry."""
    folder = tmp_path_factory.mktemp("executor")
    (folder / "marks").mkdir()
    write(folder / "probe.py", PLUGIN)
    write(
        folder / "cordis.yml",
        f"""
        insert:
          - id: policy
            name: {Path(__file__).resolve().parents[2] / "plugins" / "policy.py"}
            config: {{ rules: {{ risky: ask }} }}
          - id: probe
            name: ./probe.py
            config: {{ marks: {folder / "marks"} }}
          - id: executor
            name: harness:ray-executor
            config:
              tools: [where, where_sync, hang, slow, risky, relay, "stuck*"]
              kill: ["stuck*"]
        """,
    )
    return folder


@pytest.fixture(scope="module", params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Both backends, one Host each for the whole module (executors start once per host)."""
    return str(request.param)


@pytest.fixture(scope="module")
async def host(cluster: str, project: Path, anyio_backend: str) -> AsyncIterator[Host]:
    async with Host(project / "cordis.yml") as running:
        yield running


async def call(host: Host, name: str, args: Any = None, **options: Any) -> ToolResult:
    result: ToolResult = await host.tools.execute(
        {"id": "c1", "name": name, "args": args or {}}, **options
    )
    return result


class Answer:
    """An approval service that answers every question the same way."""

    def __init__(self, approve: bool) -> None:
        self.approve = approve

    async def request(self, call: Any, reason: str) -> bool:
        return self.approve


@asynccontextmanager
async def listening() -> AsyncIterator[tuple[Any, int]]:
    """A TCP listener on loopback, and its port, for bodies to say they run."""
    multi = await anyio.create_tcp_listener(local_host="127.0.0.1")
    async with multi:
        listener = multi.listeners[0]
        yield listener, listener.extra(anyio.abc.SocketAttribute.local_port)


async def started(listener: Any) -> int:
    """Wait (up to a minute) for a body to say it runs; the id of its process."""
    with anyio.fail_after(60):
        stream = await listener.accept()
        async with stream:
            return int((await stream.receive()).decode())


@pytest.mark.anyio
async def test_a_shipped_call_runs_in_an_executor_process(host: Host) -> None:
    shipped = await call(host, "where")
    assert shipped.ok, shipped.error
    assert shipped.result != os.getpid()
    assert shipped.to_dict() == {
        "id": "c1",
        "name": "where",
        "ok": True,
        "result": shipped.result,
        "content": [{"type": "text", "text": str(shipped.result)}],
        "error": None,
        "code": None,
    }
    threaded = await call(host, "where_sync")
    assert threaded.ok
    assert threaded.result == shipped.result


@pytest.mark.anyio
async def test_tools_not_shipped_run_in_the_host(host: Host) -> None:
    local = await call(host, "where_local")
    assert local.ok
    assert local.result == os.getpid()
    unknown = await call(host, "nowhere")
    assert unknown.code == "unknown_tool"
    assert unknown.error == "Tool nowhere not found"


@pytest.mark.anyio
async def test_invalid_arguments_fail_as_they_would_locally(host: Host) -> None:
    result = await call(host, "hang", {"port": "x", "mark": "m"})
    assert result.code == "invalid_args"
    assert result.error is not None
    assert "port" in result.error


@pytest.mark.anyio
async def test_a_timeout_stops_the_remote_body(host: Host, project: Path) -> None:
    mark = project / "marks" / "slow"
    mark.unlink(missing_ok=True)
    async with listening() as (listener, port), anyio.create_task_group() as group:
        results: list[ToolResult] = []

        async def run() -> None:
            results.append(await call(host, "slow", {"port": port, "mark": "slow"}))

        group.start_soon(run)
        pid = await started(listener)
    assert pid != os.getpid()
    assert results[0].code == "timeout"
    assert results[0].error == "Tool slow timed out after 3 seconds"
    assert mark.read_text() == str(pid)  # the body's finally ran, before the result came back


@pytest.mark.anyio
async def test_cancelling_the_caller_cancels_the_remote_body(host: Host, project: Path) -> None:
    mark = project / "marks" / "hang"
    mark.unlink(missing_ok=True)
    async with listening() as (listener, port):
        results: list[ToolResult] = []
        async with anyio.create_task_group() as group:

            async def run() -> None:
                results.append(await call(host, "hang", {"port": port, "mark": "hang"}))

            group.start_soon(run)
            pid = await started(listener)
            group.cancel_scope.cancel()
    assert results[0].code == "cancelled"
    assert results[0].error == "Tool hang was cancelled"
    assert mark.read_text() == str(pid)


@pytest.mark.anyio
async def test_an_executor_that_dies_mid_call_is_an_internal_result(host: Host) -> None:
    async with listening() as (listener, port):
        results: list[ToolResult] = []
        async with anyio.create_task_group() as group:

            async def run() -> None:
                results.append(await call(host, "hang", {"port": port, "mark": "died"}))

            group.start_soon(run)
            pid = await started(listener)
            os.kill(pid, signal.SIGKILL)
    assert results[0].code == "internal"
    assert results[0].error == (
        "Tool hang did not finish: its Ray executor died during the call; it is restarted "
        "for the next calls (see the host log)"
    )
    again = await call(host, "where")  # a new executor process takes the calls
    assert again.ok
    assert again.result not in (pid, os.getpid())


@pytest.mark.anyio
async def test_a_killable_sync_body_is_stopped_by_killing_its_executor(host: Host) -> None:
    before = await call(host, "stuck_where")
    assert before.ok
    assert before.result != os.getpid()
    async with listening() as (listener, port):
        results: list[ToolResult] = []
        async with anyio.create_task_group() as group:

            async def run() -> None:
                results.append(await call(host, "stuck", {"port": port}))

            group.start_soon(run)
            pid = await started(listener)
    assert pid == before.result
    assert results[0].code == "timeout"
    after = await call(host, "stuck_where")  # the killed executor was replaced
    assert after.ok
    assert after.result not in (pid, os.getpid())
    shared = await call(host, "where")  # the shared executor was not touched
    assert shared.ok
    assert shared.result != pid


@pytest.mark.anyio
async def test_a_denied_call_never_leaves_the_host(host: Host, project: Path) -> None:
    log = project / "marks" / "risky.log"
    log.unlink(missing_ok=True)
    denied = await call(host, "risky", {"note": "no"}, approval=Answer(False))
    assert denied.code == "denied"
    assert not log.exists()
    approved = await call(host, "risky", {"note": "yes"}, approval=Answer(True))
    assert approved.ok
    assert approved.result != os.getpid()
    assert log.read_text() == "yes\n"


@pytest.mark.anyio
async def test_an_ask_on_the_executor_side_fails_closed(host: Host, project: Path) -> None:
    log = project / "marks" / "risky.log"
    log.unlink(missing_ok=True)
    relayed = await call(host, "relay", {"note": "nested"}, approval=Answer(True))
    assert relayed.ok, relayed.error
    assert relayed.result["pid"] != os.getpid()
    assert relayed.result["code"] == "denied"
    assert relayed.result["error"] == (
        "Tool denied: the policy asks before risky runs (rule 'risky'); approvals are asked "
        "only in the host, never on an executor"
    )
    assert not log.exists()


def harness_call(project: Path, *args: str) -> tuple[int, int, dict[str, Any], str]:
    """Run the real ``harness call ... --json``: its pid, exit code, result and stderr."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    process = subprocess.Popen(
        [HARNESS, "call", *args, "--json"],
        cwd=project,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = process.communicate(timeout=120)
    return process.pid, process.returncode, json.loads(out), err


def test_the_cli_ships_a_call_to_a_running_cluster(cluster: str, project: Path) -> None:
    pid, code, result, err = harness_call(project, "where", "--set", f"executor.address={cluster}")
    assert code == 0, err
    assert result["ok"] is True
    assert result["result"] not in (pid, os.getpid())
    pid, code, result, err = harness_call(project, "where_local")
    assert code == 0, err
    assert result["result"] == pid


def test_an_unreachable_cluster_is_an_internal_result(project: Path) -> None:
    with socket.socket() as closed:  # bound, never listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        _pid, code, result, err = harness_call(
            project, "where", "--set", f"executor.address=127.0.0.1:{port}"
        )
    assert code == 1
    assert result["code"] == "internal"
    assert result["error"] == (
        f"Tool where could not run: its Ray executor is unavailable: nothing answers at "
        f"127.0.0.1:{port} (Connection refused) (entry 'executor' at {project / 'cordis.yml'}:9)"
    )
    assert "Traceback" not in err


@pytest.mark.anyio
async def test_a_shipped_call_runs_in_its_calls_trace(host: Host) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from harness.tools import traces

    untraced = await call(host, "traceparent")
    assert untraced.result == {}  # no trace, nothing sent along
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    traces.use(provider)
    try:
        shipped = await call(host, "traceparent")
    finally:
        traces.use(None)
    assert shipped.ok, shipped.error
    [span] = exporter.get_finished_spans()
    assert span.name == "execute_tool traceparent"
    context = span.get_span_context()
    assert context is not None
    # the body, in the executor's process, runs under the host's execute_tool span
    version, trace_id, parent_id, _flags = shipped.result["traceparent"].split("-")
    assert (version, trace_id, parent_id) == (
        "00",
        f"{context.trace_id:032x}",
        f"{context.span_id:016x}",
    )
