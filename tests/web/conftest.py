"""The web console's fixtures: a served project, and one headless Chromium per file.

The browser is Debian's ``chromium`` package, installed here when missing (never a browser
download); Playwright for Python drives it. Without the package and without a way to
install it, the browser tests fail saying what to install.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..chromium import CHROMIUM, FLAGS
from ..helpers import HARNESS, TEMPLATE

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "docs" / "images"


def ensure_chromium() -> str:
    """The path of Debian's Chromium, installing the package first when it is missing."""
    if Path(CHROMIUM).exists():
        return CHROMIUM
    apt = shutil.which("apt-get")
    if apt is None:
        pytest.fail(f"the browser tests need Debian's chromium package ({CHROMIUM}); install it")
    for command in (
        [apt, "update", "-qq"],
        [apt, "install", "-y", "-qq", "-o", "DPkg::Lock::Timeout=300", "chromium"],
    ):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            pytest.fail(
                f"could not install Debian's chromium package ({' '.join(command)}): "
                f"{done.stderr.strip()[-500:]}; install it with apt-get install chromium"
            )
    if not Path(CHROMIUM).exists():
        pytest.fail(f"apt-get installed chromium, but {CHROMIUM} is missing")
    return CHROMIUM


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium per test file.

    Not per session: Playwright's sync API keeps an asyncio loop marked running in this
    thread while it is open, and later files on the same pytest-xdist worker call
    ``anyio.run``.
    """
    from playwright.sync_api import sync_playwright

    path = ensure_chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=list(FLAGS))
        yield launched
        launched.close()


def make_project(folder: Path, extra: str = "", plugins: dict[str, str] | None = None) -> Path:
    """A copy of the default project (cordis.yml, plugins/, workspace/) with extra entries."""
    shutil.copytree(ROOT / "plugins", folder / "plugins", dirs_exist_ok=True)
    (folder / "workspace").mkdir(exist_ok=True)
    (folder / "workspace" / "notes.txt").write_text("hello from the workspace\n")
    for name, source in (plugins or {}).items():
        (folder / "plugins" / name).write_text(source)
    config = folder / "cordis.yml"
    text = TEMPLATE.read_text().replace("${HARNESS_WORKSPACE:-./workspace}", "./workspace")
    # the tests add their own model and agent entries: not the template's (switched off)
    text = text[: text.index("  # The model and the agent loop,")]
    # the file and git tools are off by default: the console's tests use them
    text = re.sub(r"(- id: (files|git) .*\n)    enabled: false\n", r"\1", text)
    if re.search(r"- id: (model|agent)\b", extra):  # the test's own model replaces the template's
        text = re.sub(r"\n  - id: assistant\n(?:    .*\n|\n)*", "\n", text)
    config.write_text(text + extra)
    return config


class Served:
    """``harness run`` on a free port, its console URL read from its stderr."""

    def __init__(self, config: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.config = config
        environment = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
        environment.update(env or {})
        self.process = subprocess.Popen(
            [HARNESS, "run", "-c", str(config), "--port", "0", *extra],
            cwd=config.parent,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=environment,
        )
        self.url = ""
        self.lines: list[str] = []
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)
            found = re.search(r"web console at (\S+)", line)
            if found:
                self.url = found.group(1)
                break
        assert self.url, "harness run printed no console URL:\n" + "".join(self.lines)
        self.base = self.url.split("?")[0]
        # keep reading stderr so the server never blocks on a full pipe
        self._drain = threading.Thread(target=self._read, daemon=True)
        self._drain.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)
        self._drain.join(timeout=5)
        if self.process.stderr is not None:
            self.process.stderr.close()
