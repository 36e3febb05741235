"""Item: write-back keeps the file the user has, and hot reload keeps the last good state."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from harness import Host
from harness.errors import ConfigError
from harness.loader import writeback
from harness.loader.writeback import set_enabled, write_atomically

from .conftest import PLUGINS, harness

CONFIG = (
    "# my config\r\n"
    f"- id: echo\r\n  name: {PLUGINS / 'echo.py'}\r\n"
    f"- {{ id: greet, name: {PLUGINS / 'greet.py'} }}   # keep me\r\n"
)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_crlf_layout_and_comments_are_kept(tmp_path: Path) -> None:
    config = tmp_path / "cordis.yml"
    config.write_bytes(CONFIG.encode())
    assert set_enabled(config, "echo", False)
    assert set_enabled(config, "greet", False)
    expected = (
        "# my config\r\n"
        f"- id: echo\r\n  name: {PLUGINS / 'echo.py'}\r\n  enabled: false\r\n"
        f"- {{ id: greet, name: {PLUGINS / 'greet.py'}, enabled: false }}   # keep me\r\n"
    )
    assert config.read_bytes().decode() == expected
    assert b"\n" not in config.read_bytes().replace(b"\r\n", b"")
    assert set_enabled(config, "echo", True)
    assert set_enabled(config, "greet", True)
    assert config.read_bytes().decode() == CONFIG  # a round trip gives the CRLF file back


def test_symlinked_config_edits_the_target_and_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "cordis.yml"
    real.parent.mkdir()
    real.write_bytes(CONFIG.encode())
    real.chmod(0o640)
    link = tmp_path / "cordis.yml"
    link.symlink_to(real)
    done = harness("disable", "echo", "-c", str(link))
    assert done.returncode == 0, done.stderr
    assert link.is_symlink()
    assert os.readlink(link) == str(real)
    assert "enabled: false" in real.read_text()
    assert oct(real.stat().st_mode & 0o777) == oct(0o640)
    assert leftovers(real.parent) == []
    assert leftovers(tmp_path) == []


def test_a_save_between_read_and_replace_is_merged_not_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The editor's save lands exactly between harness's read and its replace."""
    config = tmp_path / "cordis.yml"
    config.write_bytes(CONFIG.encode())
    real_read = writeback._read
    saves = iter(["# the user's save 1\r\n", "# the user's save 2\r\n"])
    calls = {"n": 0}

    def read_then_editor_saves(file: Path, *shown: Path) -> str:
        text = real_read(file)
        calls["n"] += 1
        if calls["n"] in (2, 4):  # the re-read before replacing: the editor saved first
            config.write_bytes((real_read(file) + next(saves)).encode())
            return real_read(file)
        return text

    monkeypatch.setattr(writeback, "_read", read_then_editor_saves)
    assert set_enabled(config, "echo", False)
    text = config.read_bytes().decode()
    assert "# the user's save 1\r\n" in text
    assert "# the user's save 2\r\n" in text
    assert "enabled: false" in text
    assert leftovers(tmp_path) == []


def test_a_file_that_never_settles_is_refused_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "cordis.yml"
    config.write_bytes(CONFIG.encode())
    real_read = writeback._read
    count = {"n": 0}

    def always_changing(file: Path, *shown: Path) -> str:
        count["n"] += 1
        if count["n"] % 2 == 0:
            config.write_bytes((real_read(file) + f"# save {count['n']}\r\n").encode())
        return real_read(file)

    monkeypatch.setattr(writeback, "_read", always_changing)
    with pytest.raises(ConfigError, match="kept changing while it was being edited"):
        set_enabled(config, "echo", False)
    text = config.read_bytes().decode()
    assert "enabled: false" not in text
    assert text.count("# save") == writeback.ATTEMPTS
    assert leftovers(tmp_path) == []


def test_temp_files_of_a_killed_write_are_cleaned_up(tmp_path: Path) -> None:
    config = tmp_path / "cordis.yml"
    config.write_bytes(CONFIG.encode())
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    stale = tmp_path / f".cordis.yml.{dead.stdout.strip()}.0123456789ab.tmp"
    stale.write_text("half a write from a process killed with SIGKILL\n")
    mine = tmp_path / ".cordis.yml.notours.tmp"
    mine.write_text("someone else's file\n")
    write_atomically(config, CONFIG.replace("my config", "edited"))
    assert leftovers(tmp_path) == [".cordis.yml.notours.tmp"]
    assert "edited" in config.read_text()


def test_sigterm_during_write_back_leaves_no_temp_file(tmp_path: Path) -> None:
    config = tmp_path / "cordis.yml"
    config.write_bytes(CONFIG.encode())
    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from harness.loader import writeback\n"
        "real = writeback._read\n"
        "def read(file, *shown):\n"
        "    if file.name == 'cordis.yml' and any(\n"
        "        n.endswith('.tmp') for n in os.listdir(file.parent)):\n"
        "        os.kill(os.getpid(), signal.SIGTERM)  # mid-write: the temp file exists\n"
        "    return real(file, *shown)\n"
        "writeback._read = read\n"
        "writeback.set_enabled(Path(sys.argv[1]), 'echo', False)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(config)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 128 + 15, done.stderr
    assert "Traceback" not in done.stderr
    assert leftovers(tmp_path) == []
    assert config.read_bytes().decode() == CONFIG


@pytest.mark.anyio
async def test_hot_reload_keeps_the_last_good_state_on_an_emptied_config(
    tmp_path: Path,
) -> None:
    config = tmp_path / "cordis.yml"
    config.write_bytes(CONFIG.encode())
    async with Host(config, watch=True) as host:
        failed = anyio.Event()
        done = anyio.Event()
        reports: list[object] = []

        def on_failed(report: object) -> None:
            reports.append(report)
            failed.set()

        host.ctx.on("reload/failed", on_failed)
        host.ctx.on("reload/done", lambda report: done.set())
        assert host.tools.list() == ["echo", "greet"]
        with config.open("wb"):
            pass  # an in-place save, caught after the truncation
        with anyio.fail_after(30):
            await failed.wait()
        assert host.tools.list() == ["echo", "greet"]
        (report,) = reports
        assert "the config file is empty" in report.errors[0].message  # type: ignore[attr-defined]
        assert [p.message for p in host.problems() if "is empty" in p.message] == [
            "the config file is empty (a save in progress?); keeping the running config "
            "until it holds entries again"
        ]
        config.write_bytes(
            CONFIG.replace("- { id: greet", "- { id: greet, enabled: false").encode()
        )
        with anyio.fail_after(30):
            await done.wait()
        assert host.tools.list() == ["echo"]
        assert not [p for p in host.problems() if "is empty" in p.message]
