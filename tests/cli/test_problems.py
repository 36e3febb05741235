"""Every problem of a config reaches ``harness check``, the ``harness run`` log and
``harness mcp``'s stderr log: each on one line with file, line, entry id and message,
then what to do — not just the first apply failure (issue 11, item 13)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
from pathlib import Path

from ..helpers import HARNESS, ROOT, run_harness, write

CONFIG = f"""\
insert:
  - id: echo
    name: {ROOT / "plugins" / "echo.py"}
  - id: apply-error
    name: ./apply_raises.py
  - id: missing-file
    name: ./not_there.py
  - id: grp
    config: {{ x: 1 }}
    colour: red
    insert:
      - id: greet
        name: {ROOT / "plugins" / "greet.py"}
  - id: missing-service
    name: ./plain.py
    inject: [database]
  - id: also-raises
    name: ./apply_raises.py
"""
EXPECTED = [  # (line, entry, the start of the message)
    (5, "apply-error", "apply raised RuntimeError: boom ("),
    (7, "missing-file", "plugin file not found: ./not_there.py"),
    (10, "grp", "unknown key 'colour'"),
    (9, "grp", "a group (an entry with 'insert') takes no 'config'"),
    (15, "missing-service", "waiting for service(s) 'database'"),
    (18, "also-raises", "apply raised RuntimeError: boom ("),
]


def project(folder: Path) -> Path:
    write(folder / "apply_raises.py", "def apply(ctx):\n    raise RuntimeError('boom')\n")
    write(folder / "plain.py", "def apply(ctx):\n    pass\n")
    config = folder / "cordis.yml"
    config.write_text(CONFIG)
    return config


def assert_every_problem_logged(text: str, config: Path) -> None:
    lines = text.splitlines()
    for line, entry, message in EXPECTED:
        wanted = f"problem: {config}:{line}: entry {entry!r}: {message}"
        assert any(seen.startswith(wanted) for seen in lines), (wanted, text)
    assert f"{len(EXPECTED)} problem(s): fix each one at its file and line" in text


def test_check_lists_every_problem_group_entries_included(tmp_path: Path) -> None:
    config = project(tmp_path)
    report = run_harness("check", "--json", cwd=tmp_path)
    assert report.returncode == 1
    problems = json.loads(report.stdout)["problems"]
    found = [(p["file"], p["line"], p["entry"]) for p in problems]
    assert found == [(str(config), line, entry) for line, entry, _ in EXPECTED]
    text = run_harness("check", cwd=tmp_path)
    assert text.returncode == 1
    assert_every_problem_logged(text.stderr, config)
    assert "run the command again (`harness check` lists every problem)" in text.stderr


def test_harness_mcp_logs_every_problem_on_stderr(tmp_path: Path) -> None:
    config = project(tmp_path)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    done = subprocess.run(  # stdin at its end: the MCP client has gone, the server stops
        [HARNESS, "mcp"],
        cwd=tmp_path,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # stdout is the protocol's alone
    assert_every_problem_logged(done.stderr, config)
    assert "save: hot reload applies the fix" in done.stderr


def test_harness_run_logs_every_problem(tmp_path: Path) -> None:
    config = project(tmp_path)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    seen: list[str] = []
    with subprocess.Popen(
        [HARNESS, "run", "--mcp", "none", "--no-watch"],
        cwd=tmp_path,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(
            target=lambda: [lines.put(line) for line in process.stderr or ()], daemon=True
        ).start()
        try:
            while "press Ctrl-C" not in (seen[-1] if seen else ""):
                seen.append(lines.get(timeout=30))
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=30) == 0
        finally:
            process.kill()
    assert_every_problem_logged("".join(seen), config)
    assert "then run the command again" in "".join(seen)
