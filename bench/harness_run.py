"""``harness run`` in its own process, as people run it, for the benchmarks that measure it
from outside (over HTTP, in a browser)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def harness_run(config: Path, cwd: str | Path | None = None) -> Iterator[str]:
    """Run ``harness run -c config`` on a free port, without the watcher, and give the web
    console's URL as it prints it (with its query); stopped on leaving."""
    harness = str(Path(sys.executable).parent / "harness")
    process = subprocess.Popen(
        [harness, "run", "-c", str(config), "--port", "0", "--no-watch"],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        url = ""
        for line in process.stderr:
            found = re.search(r"web console at (\S+)", line)
            if found:
                url = found.group(1)
                break
        assert url, "harness run printed no console URL"
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)
        if process.stderr is not None:
            process.stderr.close()
