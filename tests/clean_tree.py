"""The suite leaves the working tree as it found it: a check around the whole run.

At the start of a run (in the controlling process, not in pytest-xdist's workers) the state
of the git working tree under the rootdir is noted: every path ``git status`` lists, with a
hash of its content, and the ignored paths that are not caches (a test writing
``.harness/``, ``workspace/`` or ``cordis.yml`` into the clone is caught though they are
ignored). At the end the state is taken again; any difference fails the run, naming the
paths. Outside a git checkout (a source tarball) there is nothing to compare and no check.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

CACHES = (".venv", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis")
"""Ignored folders of tools, not of tests: their changes are not the suite's doing."""
STATE = pytest.StashKey[dict[str, str] | None]()


def tree_state(root: Path) -> dict[str, str] | None:
    """``path → status and content hash`` of what git reports under ``root``, or None."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain=v1", "-z", "--ignored"],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if listed.returncode != 0:
        return None
    state: dict[str, str] = {}
    fields = listed.stdout.decode("utf-8", "surrogateescape").split("\0")
    index = 0
    while index < len(fields):
        field = fields[index]
        index += 1
        if len(field) < 4:
            continue
        status, path = field[:2], field[3:]
        if status[0] in "RC":  # a rename names its source next
            index += 1
        if status == "!!" and _is_cache(path):
            continue
        state[path] = f"{status} {_digest(root / path)}"
    return state


def _is_cache(path: str) -> bool:
    parts = Path(path).parts
    return (
        "__pycache__" in parts
        or (bool(parts) and parts[0] in CACHES)
        or any(part.endswith(".egg-info") for part in parts)
    )


def _digest(path: Path) -> str:
    if path.is_symlink():
        return "link:" + str(path.readlink())
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    if not path.is_dir():
        return "gone"
    # an untracked or ignored folder is listed as one path: note what it holds
    digest = hashlib.sha256()
    for item in sorted(path.rglob("*")):
        if "__pycache__" not in item.parts and item.is_file():
            stat = item.stat()
            digest.update(f"{item.relative_to(path)} {stat.st_size} {stat.st_mtime_ns}\n".encode())
    return "folder:" + digest.hexdigest()[:16]


def changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """What differs between two states, one line per path."""
    lines = []
    for path in sorted(before.keys() | after.keys()):
        if before.get(path) != after.get(path):
            was = before.get(path, "clean")
            now = after.get(path, "clean")
            lines.append(f"  {path}: {was} -> {now}")
    return lines


def pytest_sessionstart(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):
        session.config.stash[STATE] = tree_state(session.config.rootpath)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    before = session.config.stash.get(STATE, None)
    if before is None:
        return
    after = tree_state(session.config.rootpath)
    if after is None:
        return
    lines = changes(before, after)
    if not lines:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = (
        "the test run changed the working tree (tests must write only to their temporary "
        "folders; if you edited these files during the run, run the suite again):\n"
        + "\n".join(lines)
    )
    if reporter is not None:
        reporter.write_line(message, red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
