"""The session record: the list with 1000 sessions on disk, and replaying a 1000-event session.

``harness run`` in its own process on a project whose sessions folder holds 1000 logs (one
turn each: a question, two tool calls, an answer; 12 events) and one log of 1000 events
(83 such turns). Measured over HTTP on 127.0.0.1 with httpx: ``GET /api/sessions`` (the list;
the first request after start reads every log, later ones only stat them) and
``GET /api/sessions/{id}`` of the long session (the first opens it from its log). Targets
(issue 24): the list under 200 ms, the replay under 300 ms. Then the same sessions moved
into the SQLite store (``harness sessions import``, #33) and measured again: the ratios
store / folder.
"""

from __future__ import annotations

import statistics
import subprocess
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import anyio.to_thread
import httpx2

from harness.agent.log import dumps
from harness.testing import Reply, Rule, ScriptedServer
from tests.agent.session_logs import yesterday_events
from tests.helpers import HARNESS

from .harness_run import harness_run

SESSIONS = 1000
LONG = "20261130-000000-long00"
REPEAT = 7


def write_project(folder: Path, url: str) -> Path:
    logs = folder / ".harness" / "sessions"
    logs.mkdir(parents=True)
    for number in range(SESSIONS):
        session_id = f"20261130-{number:06d}-bench0"
        text = "".join(dumps(e) + "\n" for e in yesterday_events(session_id, f"topic {number}"))
        (logs / f"{session_id}.jsonl").write_text(text)
    events: list[dict[str, Any]] = []
    while len(events) < 1000:
        turn = len(events) // 12 + 1
        for event in yesterday_events(LONG):
            if len(events) < 1000:
                events.append({**event, "seq": len(events) + 1, "turn": turn})
    (logs / f"{LONG}.jsonl").write_text("".join(dumps(e) + "\n" for e in events))
    config = folder / "cordis.yml"
    config.write_text(
        "insert:\n  - id: tools\n    name: harness:tools\n"
        f"  - id: model\n    name: harness:openai\n    config:\n      model: scripted\n"
        f"      base_url: {url}\n"
        "  - id: agent\n    name: harness:agent\n"
    )
    return config


def timed(client: httpx2.Client, url: str) -> float:
    started = time.perf_counter()
    answer = client.get(url)
    elapsed = (time.perf_counter() - started) * 1000
    assert answer.status_code == 200, answer.text
    return elapsed


def measure_project(config: Path, tmp: str, where: str) -> dict[str, float]:
    """The list, replay and search timings of one project, printed under ``where``."""
    with harness_run(config, cwd=tmp) as url, httpx2.Client(timeout=30) as client:
        base = url.split("?")[0]
        first = timed(client, f"{base}api/sessions")
        listed = len(client.get(f"{base}api/sessions").json())
        warm = [timed(client, f"{base}api/sessions") for _ in range(REPEAT)]
        open_first = timed(client, f"{base}api/sessions/{LONG}")
        events = len(client.get(f"{base}api/sessions/{LONG}").json()["events"])
        replay = [timed(client, f"{base}api/sessions/{LONG}") for _ in range(REPEAT)]
        search = [timed(client, f"{base}api/sessions?q=topic%20999") for _ in range(3)]
    figures = {
        "list": statistics.median(warm),
        "replay": statistics.median(replay),
        "search": statistics.median(search),
    }
    print(
        f"{where}: list of {listed} sessions: first {first:.0f} ms, then median "
        f"{figures['list']:.0f} ms (target < 200 ms)"
    )
    print(
        f"{where}: replay of {events} events: first {open_first:.0f} ms, then median "
        f"{figures['replay']:.0f} ms (target < 300 ms)"
    )
    print(f"{where}: search of {listed} sessions for one word: median {figures['search']:.0f} ms")
    return figures


def measure() -> None:
    with TemporaryDirectory() as tmp, ScriptedServer([Rule(Reply.say("ok"), user="")]) as model:
        config = write_project(Path(tmp), model.url)
        folder = measure_project(config, tmp, "folder")
        # the same sessions in the SQLite store (agent.sessions: sqlite:///...), imported
        text = config.read_text().replace(
            "name: harness:agent\n",
            "name: harness:agent\n    config:\n      sessions: sqlite:///.harness/harness.db\n",
        )
        config.write_text(text)
        started = time.perf_counter()
        done = subprocess.run(
            [HARNESS, "sessions", "--config", str(config), "import", ".harness/sessions"],
            cwd=tmp,
            capture_output=True,
            text=True,
            check=False,
        )
        took = time.perf_counter() - started
        assert done.returncode == 0, done.stdout + done.stderr
        print(f"harness sessions import: {took:.2f} s ({done.stdout.strip()})")
        store = measure_project(config, tmp, "SQLite store")
        print(
            "store / folder: "
            + ", ".join(f"{name} x{store[name] / folder[name]:.2f}" for name in folder)
        )


async def main() -> None:
    await anyio.to_thread.run_sync(measure)
