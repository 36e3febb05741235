"""A real PostgreSQL for the store's tests: Debian's ``postgresql`` (installed by the set-up
when missing), its own cluster on a temporary data directory and a free port, started with
``initdb`` and ``pg_ctl`` (as the ``postgres`` user when the tests run as root, which
PostgreSQL refuses to run as), stopped when the tests end."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..gateway.system import ensure_debian_packages

USER = "harness"


def server_bin() -> Path:
    """The folder of ``initdb`` and ``pg_ctl`` (the newest installed major version)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        ensure_debian_packages("postgresql", commands=("pg_lsclusters", "pg_ctlcluster"))
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        pytest.fail(
            "Debian's postgresql is installed but no /usr/lib/postgresql/*/bin/initdb was "
            "found: apt-get install -y postgresql"
        )
    return Path(found[-1]).parent


@dataclass
class Postgres:
    port: int
    bin: Path

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A new empty database; its URL."""
        psql = [str(self.bin / "psql"), self.url(), "-v", "ON_ERROR_STOP=1", "-q"]
        done = subprocess.run(
            [*psql, "-c", f'CREATE DATABASE "{name}"'], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        return self.url(name)


def _as_postgres() -> list[str]:
    """The command prefix that runs the server's tools as a user PostgreSQL accepts."""
    if os.geteuid() != 0:
        return []
    pwd.getpwnam("postgres")  # created by Debian's package
    return ["runuser", "-u", "postgres", "--"]


@contextlib.contextmanager
def running_postgres() -> Iterator[Postgres]:
    """A fresh cluster on a free port, for as long as the block runs."""
    binaries = server_bin()
    prefix = _as_postgres()
    folder = Path(tempfile.mkdtemp(prefix="harness-pg-"))
    data = folder / "data"
    if prefix:
        shutil.chown(folder, "postgres", "postgres")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    subprocess.run(
        [
            *prefix,
            str(binaries / "initdb"),
            "-D",
            str(data),
            "-U",
            USER,
            "--auth=trust",
            "-E",
            "UTF8",
        ],
        capture_output=True,
        check=True,
    )
    options = f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={folder}"
    started = subprocess.run(
        [
            *prefix,
            str(binaries / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            options,
            "-l",
            str(folder / "log"),
            "-w",
            "start",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if started.returncode != 0:
        log = (folder / "log").read_text() if (folder / "log").exists() else ""
        pytest.fail(f"pg_ctl start failed: {started.stderr}{started.stdout}{log}")
    try:
        yield Postgres(port, binaries)
    finally:
        subprocess.run(
            [*prefix, str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(folder, ignore_errors=True)
