"""Code mode against calling tools one request at a time (DESIGN §14).

The seed question — which of the last 20 commits touched more than 3 files, and what were
their subjects? — asked of a real git repository (20 commits, every other one touching 4
files), with the model played by ``harness.testing.ScriptedServer`` on 127.0.0.1:

- *sequential*: the model calls ``git_log_reader``, then ``git_diff`` once per step, then
  answers: one request per step;
- *parallel calls*: the same, the 20 ``git_diff`` calls asked for in one step;
- *code mode*: ``harness:agent`` with ``code_mode: true``; the model writes one program that
  calls both tools, and answers from its output: two requests.

Per turn: model requests, the input tokens the model received (messages and tool schemas,
at four characters a token: the scripted server's count) and the wall time (best of the
rounds). Then the cost of one call from a program beyond a direct ``execute`` of the same
tool, and the cold and warm start of ``run_code``.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import yaml

from harness import Host, ToolCall
from harness.testing import Reply, Rule, ScriptedServer, call

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
QUESTION = "which of the last 20 commits touched more than 3 files, and what were their subjects?"
ROUNDS = 3
CALLS = 200
PROGRAM_ROUNDS = 12  # best of: a busy machine's noise is mostly slow outliers

PROGRAM = """
import asyncio
log = await git_log_reader(repoPath={repo!r}, maxCount=20)
lines = log["formatted"].splitlines()[1:]
hashes = [line.split(" | ")[0] for line in lines]
diffs = await asyncio.gather(*[git_diff(repoPath={repo!r}, commit=h) for h in hashes])
wide = [line.split(" | ")[3] for line, diff in zip(lines, diffs)
        if diff["diff"].count("diff --git ") > 3]
print(len(wide), "of", len(lines), "commits touched more than 3 files")
wide
"""


def make_repo(folder: Path) -> tuple[Path, list[str]]:
    """20 commits, the even ones touching 4 files; their short hashes, newest first."""
    repo = folder / "repo"
    repo.mkdir()
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "HOME": str(folder), "PATH": "/usr/bin:/bin"}

    def git(*args: str) -> str:
        done = subprocess.run(
            [
                "git",
                "-C",
                str(repo),
                "-c",
                "user.name=Ada",
                "-c",
                "user.email=a@example.com",
                *args,
            ],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        )
        return done.stdout

    git("init", "-q")
    for number in range(20):
        for index in range(4 if number % 2 == 0 else 1):
            (repo / f"f{index}.txt").write_text(f"{number}\n")
        git("add", "-A")
        git("commit", "-q", "-m", f"change {number}")
    hashes = git("log", "--max-count=20", "--pretty=format:%h").split()
    return repo, hashes


def answer(text: str) -> str:
    try:
        value = json.loads(text)
        return "More than 3 files: " + ", ".join(value["value"])
    except (ValueError, KeyError, TypeError):
        return "Done."


def rules(case: str, repo: Path, hashes: list[str]) -> list[Rule]:
    where = str(repo)
    log = call("git_log_reader", {"repoPath": where, "maxCount": 20})
    diffs = [call("git_diff", {"repoPath": where, "commit": h}) for h in hashes]
    if case == "code mode":
        return [
            Rule(Reply.program(PROGRAM.format(repo=where)), user=QUESTION),
            Rule(Reply.answer(answer), tool="run_code"),
        ]
    if case == "parallel calls":
        return [
            Rule(Reply.calls(log), user=QUESTION),
            Rule(Reply.calls(*diffs), tool="git_log_reader"),
            Rule(Reply.say("More than 3 files: the even changes."), tool="git_diff"),
        ]
    steps = [
        Rule(Reply.calls(log), user=QUESTION),
        Rule(Reply.calls(diffs[0]), tool="git_log_reader"),
    ]
    steps += [Rule(Reply.calls(d), tool="git_diff", times=1) for d in diffs[1:]]
    steps.append(Rule(Reply.say("More than 3 files: the even changes."), tool="git_diff"))
    return steps


def config(folder: Path, url: str, code_mode: bool) -> Path:
    entries: list[dict[str, Any]] = [
        {"id": "tools", "name": "harness:tools"},
        {"id": "git_log_reader", "name": str(PLUGINS / "git_log_reader.py")},
        {"id": "git_diff", "name": str(PLUGINS / "git_diff.py")},
        {"id": "add", "name": str(PLUGINS / "add.py")},
        {"id": "model", "name": "harness:openai", "config": {"model": "scripted", "base_url": url}},
        {
            "id": "agent",
            "name": "harness:agent",
            "config": {"sessions": None, "code_mode": code_mode, "max_steps": 50},
        },
    ]
    if code_mode:
        entries.append({"id": "code", "name": "harness:code", "config": {"max_calls": 1000}})
    path = folder / ("code.yml" if code_mode else "plain.yml")
    path.write_text(yaml.safe_dump({"insert": entries}))
    return path


async def turn(case: str, folder: Path, repo: Path, hashes: list[str]) -> dict[str, Any]:
    best: dict[str, Any] = {}
    for _ in range(ROUNDS):
        with ScriptedServer(rules(case, repo, hashes), chunk_size=64) as server:
            async with Host(config(folder, server.url, case == "code mode")) as host:
                session = host.ctx.agent.session()
                began = time.perf_counter()
                events = [event async for event in session.send(QUESTION)]
                wall = time.perf_counter() - began
            assert events[-1]["reason"] == "done", events[-1]
            tool_calls = sum(1 for e in events if e["type"] == "tool/call")
            found = {
                "requests": len(server.requests),
                "input_tokens": sum(server.input_tokens),
                "wall_ms": wall * 1000,
                "calls": tool_calls,
            }
        if not best or found["wall_ms"] < best["wall_ms"]:
            best = found
    return best


async def per_call(host: Host) -> tuple[float, float, float]:
    """µs per direct execute of add; per call from a program, in a loop and gathered."""
    tools = host.ctx.tools

    async def program(code: str) -> float:
        best = float("inf")
        for _ in range(PROGRAM_ROUNDS):
            began = time.perf_counter()
            result = await tools.execute(ToolCall("b", "run_code", {"code": code}))
            assert result.ok, result.error
            best = min(best, time.perf_counter() - began)
        return best

    direct = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        for number in range(CALLS):
            await tools.execute(ToolCall(str(number), "add", {"a": number, "b": 1}))
        direct = min(direct, (time.perf_counter() - began) / CALLS)
    empty = await program("x = 0\nfor i in range(200):\n    x = x + i\nx")
    loop = await program("x = 0\nfor i in range(200):\n    x = await add(a=i, b=1)\nx")
    gathered = await program(
        "import asyncio\nawait asyncio.gather(*[add(a=i, b=1) for i in range(200)])"
    )
    return direct * 1e6, (loop - empty) / CALLS * 1e6, (gathered - empty) / CALLS * 1e6


async def starts(folder: Path) -> tuple[float, float, float]:
    """ms: the entry's start (pool up), the first run_code, a warm one (median of 20)."""
    path = folder / "start.yml"
    path.write_text(
        yaml.safe_dump(
            {
                "insert": [
                    {"id": "add", "name": str(PLUGINS / "add.py")},
                    {"id": "code", "name": "harness:code"},
                ]
            }
        )
    )
    async with AsyncExitStack() as stack:
        began = time.perf_counter()
        host = await stack.enter_async_context(Host(path))
        entry = time.perf_counter() - began
        began = time.perf_counter()
        first = await host.ctx.tools.execute(ToolCall("c", "run_code", {"code": "1 + 1"}))
        cold = time.perf_counter() - began
        assert first.ok, first.error
        warm = []
        for _ in range(20):
            began = time.perf_counter()
            await host.ctx.tools.execute(ToolCall("w", "run_code", {"code": "1 + 1"}))
            warm.append(time.perf_counter() - began)
        warm.sort()
    return entry * 1000, cold * 1000, warm[len(warm) // 2] * 1000


async def main() -> None:
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        repo, hashes = make_repo(folder)
        print(f"{QUESTION!r} over {len(hashes)} commits (best of {ROUNDS} turns)")
        found = {}
        for case in ("sequential", "parallel calls", "code mode"):
            found[case] = await turn(case, folder, repo, hashes)
        ours = found["code mode"]
        for case, row in found.items():
            ratio = ""
            if case != "code mode":
                ratio = (
                    f"  (code mode: x{ours['requests'] / row['requests']:.2f} requests, "
                    f"x{ours['input_tokens'] / row['input_tokens']:.2f} tokens, "
                    f"x{ours['wall_ms'] / row['wall_ms']:.2f} wall)"
                )
            print(
                f"  {case:15} {row['requests']:3} requests, {row['input_tokens']:6} input "
                f"tokens, {row['wall_ms']:7.1f} ms wall, {row['calls']} tool cards{ratio}"
            )
        async with Host(config(folder, "http://127.0.0.1:9/v1", True)) as host:
            direct, loop, gathered = await per_call(host)
        print(
            f"one call of add: direct execute {direct:.1f} µs; from a program +{loop:.1f} µs "
            f"each in a loop, +{gathered:.1f} µs each gathered ({CALLS} calls)"
        )
        entry, cold, warm = await starts(folder)
        print(
            f"run_code start: the entry (pool up) {entry:.1f} ms; first program {cold:.1f} ms; "
            f"warm program {warm:.1f} ms (median of 20; includes the type check)"
        )
