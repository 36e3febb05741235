"""An OTLP collector that does not answer: one line naming it, and a prompt exit.

``harness run`` is the real executable with the real SDK and OTLP/HTTP exporter, pointed at
a closed port on 127.0.0.1. A tool call makes spans; Ctrl-C ends the run, either before the
first batch went out (the exit's flush is the first try) or while the exporter retries a
batch that failed during the run.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from ..helpers import HARNESS, ROOT


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Run:
    """``harness run`` with its stderr read into lines as they come."""

    def __init__(self, folder: Path, env: dict[str, str], *extra: str) -> None:
        (folder / "cordis.yml").write_text(
            f"insert:\n  - {{id: echo, name: {ROOT / 'plugins' / 'echo.py'}}}\n",
            encoding="utf-8",
        )
        self.process = subprocess.Popen(
            [HARNESS, "run", "-c", str(folder / "cordis.yml"), "--port", "0", "--no-web", *extra],
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self.changed:
                self.lines.append(line)
                self.changed.notify_all()
        with self.changed:
            self.lines.append("")  # the end
            self.changed.notify_all()

    def wait_for(self, text: str, timeout: float = 60) -> str:
        def found() -> str | None:
            return next((line for line in self.lines if text in line), None)

        with self.changed:
            line = self.changed.wait_for(lambda: found() or "" in self.lines, timeout)
        seen = found()
        assert line, f"no line with {text!r} in {timeout} s: {''.join(self.lines)}"
        assert seen, f"harness run ended without a line with {text!r}: {''.join(self.lines)}"
        return seen

    def stop(self) -> float:
        """Ctrl-C; the seconds until the process has exited."""
        began = time.monotonic()
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=60)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        took = time.monotonic() - began
        self.reader.join(timeout=30)
        if self.process.stderr is not None:
            self.process.stderr.close()
        return took


async def call_echo(url: str) -> None:
    async with Client(url) as client:
        result = await client.call_tool("echo", {"text": "traced"})
        assert result.structured_content == {"text": "Echo: traced"}


@pytest.mark.parametrize("delay", ["5000", "50"], ids=["at-exit", "during-the-run"])
def test_an_unreachable_collector_is_one_line_and_no_wait(tmp_path: Path, delay: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARNESS_", "OTEL_"))}
    endpoint = f"http://127.0.0.1:{closed_port()}"
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    env["OTEL_BSP_SCHEDULE_DELAY"] = delay  # ms: the batch goes out at exit, or at once
    run = Run(tmp_path, env)
    try:
        url = run.wait_for("serving MCP at ").split(" at ", 1)[1].strip()
        anyio.run(call_echo, url)
        if delay == "50":  # the exporter is retrying that batch now
            run.wait_for("did not take the spans")
    finally:
        took = run.stop()
    output = "".join(run.lines)
    assert run.process.returncode == 0, output
    said = [line for line in run.lines if endpoint in line]
    assert said == [
        f"harness: the OpenTelemetry collector at {endpoint}/v1/traces did not take the spans "
        "(connection refused); they are dropped until it does\n"
    ], output
    for raw in ("Transient error", "Failed to export", "retry", "Traceback"):
        assert raw not in output
    # the bug: the exit waited about 7 s for the exporter's retries
    assert took < 5, f"harness run took {took:.1f} s to exit after Ctrl-C"


def test_under_debug_the_exporter_s_own_lines_show(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARNESS_", "OTEL_"))}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{closed_port()}"
    run = Run(tmp_path, env, "--debug")
    try:
        url = run.wait_for("serving MCP at ").split(" at ", 1)[1].strip()
        anyio.run(call_echo, url)
    finally:
        took = run.stop()
    output = "".join(run.lines)
    assert "Transient error" in output
    assert "did not take the spans" not in output
    assert took < 5, f"harness run --debug took {took:.1f} s to exit after Ctrl-C"
