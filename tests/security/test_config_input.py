"""Item: hostile config input cannot hang or crash ``check``: each is a problem with file,
line and entry, within bounded time and memory (an address-space limit on the process),
while the healthy entries load."""

from __future__ import annotations

import json
import resource
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import HARNESS, PLUGINS

ECHO = f"- id: echo\n  name: {PLUGINS / 'echo.py'}\n"
GREET = f"  name: {PLUGINS / 'greet.py'}\n"
LEVELS = "".join(
    f"    {name}: &{name} [{', '.join([f'*{prev}'] * 10)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)
BOMB = '    a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]\n' + LEVELS
CASES: dict[str, tuple[bytes, int, str]] = {
    "alias bomb": (
        (ECHO + "- id: bad\n" + GREET + "  config:\n" + BOMB).encode(),
        11,  # the first alias past the budget
        "an alias bomb?",
    ),
    "control character": (
        (ECHO + "- id: bad\n" + GREET + '  config: { x: "a\x01b" }\n').encode(),
        5,
        "control character U+0001 is not allowed in YAML",
    ),
    "invalid UTF-8": (
        ECHO.encode() + b"- id: bad\n" + GREET.encode() + b"  config:\n    x: caf\xe9\n",
        6,
        "invalid UTF-8 (bytes e9)",
    ),
    "deep nesting": (
        (ECHO + "- id: bad\n" + GREET + "  config: " + "[" * 20_000 + "]" * 20_000 + "\n").encode(),
        5,
        "nested deeper than 64 levels",
    ),
    "a module that is not a plugin": (
        (ECHO + "- id: bad\n  name: harness\n").encode(),
        4,
        "harness is not a plugin",
    ),
    "sys.exit at import": (
        (ECHO + "- id: bad\n  name: ./exits.py\n").encode(),
        4,
        "importing the plugin raised SystemExit: 3",
    ),
}
MEMORY = 1 << 30  # 1 GiB of address space for the whole harness process


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def harness_limited(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HARNESS, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limited,
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_check_reports_hostile_input_as_a_located_problem(tmp_path: Path, case: str) -> None:
    content, line, shown = CASES[case]
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(3)\n")
    config = tmp_path / "cordis.yml"
    config.write_bytes(content)
    done = harness_limited("check", "--json", "-c", str(config), cwd=tmp_path)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["ok"] is False
    (problem,) = report["problems"]
    assert (problem["file"], problem["line"], problem["entry"]) == (str(config), line, "bad")
    assert shown in problem["message"]
    listed = harness_limited("plugins", "--json", "-c", str(config), cwd=tmp_path)
    states = {item["id"]: item["state"] for item in json.loads(listed.stdout)}
    assert states == {"echo": "active", "bad": "failed"}


def test_bad_text_in_a_comment_is_a_file_problem_and_nothing_is_lost(tmp_path: Path) -> None:
    config = tmp_path / "cordis.yml"
    config.write_bytes(b"# caf\xe9 \x02\n" + ECHO.encode())
    done = harness_limited("check", "--json", "-c", str(config), cwd=tmp_path)
    (problem,) = json.loads(done.stdout)["problems"]
    assert (problem["line"], problem["entry"]) == (1, None)
    assert "invalid UTF-8" in problem["message"]
    listed = harness_limited("plugins", "--json", "-c", str(config), cwd=tmp_path)
    assert [item["state"] for item in json.loads(listed.stdout)] == ["active"]


def test_anchors_and_aliases_within_the_budget_still_work(tmp_path: Path) -> None:
    config = tmp_path / "cordis.yml"
    config.write_text(
        "- id: greet\n"
        + GREET
        + "  config: &shared {}\n"
        + "- id: greet2\n"
        + f"  name: {PLUGINS / 'echo.py'}\n"
    )
    done = harness_limited("check", "--json", "-c", str(config), cwd=tmp_path)
    assert json.loads(done.stdout) == {"ok": True, "problems": []}
