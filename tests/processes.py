"""``harness run`` as a real process: started on a free port, stopped with Ctrl-C."""

from __future__ import annotations

import queue
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from .helpers import HARNESS

READERS: dict[int, threading.Thread] = {}
"""The thread reading each process's output, by process id."""
OUTPUT: dict[int, list[str]] = {}
"""Everything each process printed (stdout and stderr), by process id; see :func:`stop`."""


def start_harness_run(
    folder: Path, env: dict[str, str], *extra: str, web: bool = False
) -> tuple[subprocess.Popen[str], int]:
    """``harness run`` (with ``extra`` options; the web console and its API too when ``web``)
    on any free port; returns once it says where it serves."""
    process = subprocess.Popen(
        [
            HARNESS,
            "run",
            "--config",
            str(folder / "cordis.yml"),
            "--port",
            "0",
            *([] if web else ["--no-web"]),
            *extra,
        ],
        cwd=folder,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    printed = OUTPUT[process.pid] = []

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            printed.append(line)
            lines.put(line)
        lines.put("")

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    READERS[process.pid] = reader
    seen: list[str] = []
    while True:
        try:
            line = lines.get(timeout=60)
        except queue.Empty:
            process.kill()
            pytest.fail(f"harness run did not start in 60 s: {''.join(seen)}")
        seen.append(line)
        if not line:
            pytest.fail(f"harness run exited ({process.wait()}): {''.join(seen)}")
        if line.startswith("serving MCP at http://127.0.0.1:"):
            return process, int(line.rsplit(":", 1)[1].split("/")[0])


def stop(process: subprocess.Popen[Any]) -> str:
    """Stop ``process`` with Ctrl-C (killing it after 30 s); what it printed."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    reader = READERS.pop(process.pid, None)
    if reader is not None:
        reader.join(timeout=30)  # it reads to the end of the output, then stops
    if process.stdout is not None:
        process.stdout.close()
    return "".join(OUTPUT.pop(process.pid, []))
