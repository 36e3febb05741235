"""The suite leaves ``git status`` as it found it: the check of :mod:`tests.clean_tree` fails a
run whose tests wrote into the working tree, and passes one whose tests kept to tmp_path.

Each case is a real pytest run (under pytest-xdist, as ``make test`` runs) in a real git
repository holding the check and one test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers import git

TESTS = Path(__file__).resolve().parents[1]

CASES = {
    "writes_into_the_tree": (
        "def test_it():\n"
        "    from pathlib import Path\n"
        "    Path(__file__).with_name('pid-12345').write_text('12345')\n"
    ),
    "edits_a_dirty_file_again": (
        "def test_it():\n"
        "    from pathlib import Path\n"
        "    Path(__file__).with_name('notes.txt').write_text('changed by the test\\n')\n"
    ),
    "makes_an_ignored_folder": (
        "def test_it():\n"
        "    from pathlib import Path\n"
        "    (Path(__file__).parent / '.harness' / 'sessions').mkdir(parents=True)\n"
        "    (Path(__file__).parent / '.harness' / 'sessions' / 'a.jsonl').write_text('{}')\n"
    ),
    "keeps_to_tmp_path": ("def test_it(tmp_path):\n    (tmp_path / 'pid-1').write_text('1')\n"),
}


def repository(folder: Path, test: str) -> Path:
    folder.mkdir()
    shutil.copy(TESTS / "clean_tree.py", folder / "clean_tree.py")
    (folder / "conftest.py").write_text(
        "from clean_tree import pytest_sessionfinish, pytest_sessionstart\n"
        '__all__ = ["pytest_sessionfinish", "pytest_sessionstart"]\n'
    )
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / ".gitignore").write_text("__pycache__/\n.harness/\n")
    (folder / "notes.txt").write_text("one\n")
    (folder / "test_case.py").write_text(test)
    git(folder, "init", "-q")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "start")
    (folder / "notes.txt").write_text("edited by the user before the run\n")
    return folder


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_run_fails_when_a_test_dirties_the_tree(tmp_path: Path, case: str) -> None:
    folder = repository(tmp_path / "repo", CASES[case])
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(folder)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "1", "-p", "no:cacheprovider"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = run.stdout + run.stderr
    if case == "keeps_to_tmp_path":
        assert run.returncode == 0, output
        assert "changed the working tree" not in output
        return
    assert run.returncode == 1, output
    assert "1 passed" in output  # the test itself passed: the check failed the run
    assert "the test run changed the working tree" in output
    changed = {"writes_into_the_tree": "pid-12345", "edits_a_dirty_file_again": "notes.txt"}
    assert f"  {changed.get(case, '.harness/')}: " in output
