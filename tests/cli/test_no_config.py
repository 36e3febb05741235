"""No ``cordis.yml`` where a command looks: it says to run ``harness init`` there (issue 29,
item 20), and the suggestion works as written. A missing patch file, or a config named
otherwise, gets no such advice. The real ``harness`` each time."""

from __future__ import annotations

import json
from pathlib import Path

from ..helpers import run_harness, write

INIT = "run `harness init{}` to write a starter project {} (cordis.yml, plugins/, workspace/)"


def test_check_in_an_empty_folder_says_to_run_harness_init(tmp_path: Path) -> None:
    config = tmp_path / "cordis.yml"
    done = run_harness("check", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"problem: {config}: config file not found: {config}; {INIT.format('', 'here')}, or "
        "pass -c FILE",
        "1 problem(s): the config could not be read, so nothing was loaded: fix it, then run "
        "the command again",
    ]
    report = json.loads(run_harness("check", "--json", cwd=tmp_path).stdout)
    assert "`harness init`" in report["problems"][0]["message"]

    init = run_harness("init", cwd=tmp_path, env={"OPENAI_API_KEY": ""})
    assert init.returncode == 0, init.stderr
    again = run_harness("check", cwd=tmp_path)
    assert (again.returncode, again.stdout.splitlines()[-1]) == (0, "ok: no problems")


def test_every_command_says_it_and_names_the_folder(tmp_path: Path) -> None:
    tools = run_harness("tools", cwd=tmp_path)
    assert tools.returncode == 2
    assert tools.stderr.rstrip("\n").endswith(f"; {INIT.format('', 'here')}, or pass -c FILE")
    other = tmp_path / "other" / "cordis.yml"
    elsewhere = run_harness("-c", "other/cordis.yml", "call", "add", cwd=tmp_path)
    assert elsewhere.returncode == 2
    assert elsewhere.stderr == (
        f"ConfigError: config file not found: {other}; "
        f"{INIT.format(' other', f'in {other.parent}')}, or pass -c FILE\n"
    )
    enable = run_harness("enable", "echo", cwd=tmp_path)
    assert enable.returncode == 1
    assert INIT.format("", "here") in enable.stderr


def test_a_missing_patch_or_an_other_name_gets_no_init_advice(tmp_path: Path) -> None:
    named = run_harness("-c", "mine.yml", "plugins", cwd=tmp_path)
    assert named.returncode == 2
    assert named.stderr == (
        f"ConfigError: config file not found: {tmp_path / 'mine.yml'}; check the path "
        "(-c FILE, or $HARNESS_CONFIG)\n"
    )
    write(tmp_path / "cordis.yml", "insert: []\n")
    patch = run_harness("--patch", "missing.yml", "plugins", cwd=tmp_path)
    assert patch.returncode == 2
    assert patch.stderr == f"ConfigError: config file not found: {tmp_path / 'missing.yml'}\n"
