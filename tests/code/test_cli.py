"""``harness call run_code``: the program, its calls and its output in the terminal; the
inner calls' approvals are the command's (``--yes``, or denied without a terminal)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..helpers import run_harness
from .conftest import project

PROGRAM = (
    "x = await add(a=1, b=2)\nprint(x)\ntry:\n    await greet(name='Ada')\n"
    "except Exception as e:\n    print(e)\nx * 2"
)


def test_harness_call_shows_the_program_its_calls_and_its_output(tmp_path: Path) -> None:
    project(tmp_path)
    args = json.dumps({"code": PROGRAM})
    done = run_harness("call", "run_code", args, "--yes", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    shown = re.sub(r"· \d+ ms", "· N ms", done.stdout)
    assert shown.splitlines() == [
        *PROGRAM.splitlines(),
        "  ↳ add · done · N ms",
        "    3",
        "  ↳ greet · done · N ms",
        "    Hello, Ada!",
        "3",
        "",
        "→ 6",
    ]
    refused = run_harness("call", "run_code", args, cwd=tmp_path)
    assert refused.returncode == 0, refused.stderr
    assert re.search(r"  ↳ greet · denied · \d+ ms", refused.stdout)
    assert "denied: Tool denied: the policy asks before greet runs" in refused.stdout
    as_json = run_harness("call", "run_code", args, "--yes", "--json", cwd=tmp_path)
    value = json.loads(as_json.stdout)["result"]
    assert value["value"] == 6
    assert [c["name"] for c in value["calls"]] == ["add", "greet"]
