"""How a ``harness`` process ends. What the imports made is frozen out of the garbage
collector before the command runs, so the last collection at exit skips it; what plugins
make is still collected, at exit too: their exit handlers run, a file they left open is
flushed and closed, and their reference cycles are freed."""

from __future__ import annotations

import json
from pathlib import Path

from ..helpers import run_harness, write

PLUGIN = """
import atexit
import gc
import weakref
from pathlib import Path

from harness import define_tool

inject = ["tools"]
HERE = Path(__file__).parent
LOG = open(HERE / "log.txt", "w")  # never closed: exit closes it, flushing the line
LOG.write("buffered line\\n")


class Node:
    pass


node = Node()
node.self = node  # a cycle made by the plugin: only the cyclic collector frees it
GONE = weakref.ref(node)
del node


def report():
    gc.collect()
    (HERE / "atexit.txt").write_text(f"ran, cycle freed: {GONE() is None}")


atexit.register(report)


def apply(ctx):
    ctx.tools.register(define_tool(name="noted", description="d", execute=lambda args: "ok"))
"""


def test_plugins_exit_handlers_run_their_files_flush_and_their_cycles_are_freed(
    tmp_path: Path,
) -> None:
    write(tmp_path / "noted.py", PLUGIN)
    write(tmp_path / "cordis.yml", "- { id: noted, name: ./noted.py }\n")
    done = run_harness("tools", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert [tool["function"]["name"] for tool in json.loads(done.stdout)] == ["noted"]
    assert (tmp_path / "log.txt").read_text() == "buffered line\n"
    assert (tmp_path / "atexit.txt").read_text() == "ran, cycle freed: True"


def test_a_failing_command_keeps_its_exit_code_and_output(tmp_path: Path) -> None:
    write(tmp_path / "cordis.yml", "- { id: x, name: ./missing.py }\n")
    done = run_harness("check", "--json", cwd=tmp_path)
    assert done.returncode == 1
    assert json.loads(done.stdout)["ok"] is False
