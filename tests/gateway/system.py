"""System packages and the npm reference server for the gateway tests (installed once).

Node and npm come from Debian's packages (installed here when missing); the reference server
``@modelcontextprotocol/server-everything`` comes from the npm registry, installed once into
a cache folder the tests reuse (``$HARNESS_TEST_CACHE``, default ``~/.cache/harness-tests``).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

EVERYTHING = "@modelcontextprotocol/server-everything"
EVERYTHING_VERSION = "2026.8.31"


def cache_dir() -> Path:
    base = os.environ.get("HARNESS_TEST_CACHE") or str(Path.home() / ".cache" / "harness-tests")
    folder = Path(base)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def ensure_debian_packages(*packages: str, commands: tuple[str, ...]) -> None:
    """Install Debian packages when one of ``commands`` is missing; fail saying what to do."""
    if all(shutil.which(command) for command in commands):
        return
    with (cache_dir() / "apt.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if all(shutil.which(command) for command in commands):
            return
        steps = [
            ["apt-get", "update"],
            ["apt-get", "install", "-y", "-o", "DPkg::Lock::Timeout=300", *packages],
        ]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, timeout=900, check=False)
            if done.returncode != 0:
                pytest.fail(
                    f"{' '.join(step)} failed ({done.stderr.strip()[-500:]}); install the Debian "
                    f"packages {', '.join(packages)} and run the tests again"
                )
    missing = [command for command in commands if not shutil.which(command)]
    if missing:
        pytest.fail(f"{', '.join(missing)} still missing; install {', '.join(packages)}")


def npm_install(folder: Path, packages: list[str], installed: list[Path]) -> None:
    """``npm install`` of ``packages`` into ``folder``, once (under a lock, so parallel test
    workers install it once), unless every path of ``installed`` exists already."""
    if all(path.exists() for path in installed):
        return
    ensure_debian_packages("nodejs", "npm", commands=("node", "npm"))
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if all(path.exists() for path in installed):
            return
        done = subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(folder),
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--engine-strict=false",
                *packages,
            ],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if done.returncode != 0 or not all(path.exists() for path in installed):
            pytest.fail(
                f"npm install {' '.join(packages)} failed ({done.stderr.strip()[-800:]}); "
                "check that the npm registry is reachable"
            )


def everything_server() -> Path:
    """The ``mcp-server-everything`` executable, installed from npm on first use."""
    folder = cache_dir() / f"server-everything-{EVERYTHING_VERSION}"
    binary = folder / "node_modules" / ".bin" / "mcp-server-everything"
    npm_install(folder, [f"{EVERYTHING}@{EVERYTHING_VERSION}"], [binary])
    return binary
