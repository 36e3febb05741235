"""``import harness`` (and a Host started and stopped) leaves the importing process as it
was: its garbage collector (on or off, thresholds, frozen objects, collections running as
usual), logging handlers and levels, signal handlers. Only the ``harness`` command tunes its
own process's collector. Each case runs in a fresh interpreter, watched from inside it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import harness

from ..helpers import run_harness, write

PLUGIN = """
import gc

from harness import define_tool

inject = ["tools"]
AT_LOAD = {}


def state(args):
    return {
        "at_load": AT_LOAD,
        "enabled": gc.isenabled(),
        "threshold": list(gc.get_threshold()),
        "frozen": gc.get_freeze_count(),
    }


def apply(ctx):
    AT_LOAD.update(enabled=gc.isenabled(), threshold=list(gc.get_threshold()))
    ctx.tools.register(define_tool(name="gc_state", description="the collector", execute=state))
"""

STATE = """
import gc, json, logging, signal, sys, warnings

def handler(h):
    h = getattr(h, "func", h)  # a partial
    return getattr(h, "__qualname__", repr(h)) if callable(h) else repr(h)

def state():
    harness_log = logging.getLogger("harness")
    return {
        "gc enabled": gc.isenabled(),
        "gc threshold": gc.get_threshold(),
        "gc frozen": gc.get_freeze_count(),
        "gc debug": gc.get_debug(),
        "gc callbacks": len(gc.callbacks),
        "root handlers": repr(logging.root.handlers),
        "root level": logging.root.level,
        "harness handlers": repr(harness_log.handlers),
        "harness level": harness_log.level,
        "harness propagates": harness_log.propagate,
        "logging disabled": logging.root.manager.disable,
        "signals": {str(s): handler(signal.getsignal(s)) for s in sorted(signal.valid_signals())},
        "switch interval": sys.getswitchinterval(),
        "recursion limit": sys.getrecursionlimit(),
        "warnings": repr(warnings.filters),
        "excepthook": repr(sys.excepthook),
    }
"""

SCRIPT = """
{setup}
collections = []
gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(info))
before = state()
import harness
import harness.host, harness.tools
from harness import Host, ToolsService, define_tool
imported = state()
during_import = len(collections)
import anyio

async def main():
    outside = state()
    async with Host({config!r}) as host:
        result = (await host.ctx.tools.execute({{"name": "gc_state", "args": {{}}}})).result
        inside = state()
    return outside, inside, result, state()

outside, inside, result, stopped = anyio.run(main)
print(json.dumps({{
    "before": before, "imported": imported, "outside": outside, "inside": inside,
    "stopped": stopped, "after": state(), "collections during import": during_import,
    "at load": result["at_load"],
}}, default=repr))
"""

SETUPS = {
    "a fresh process": "",
    "a paused collector": "gc.disable()",
    "tuned thresholds and frozen objects": (
        "gc.set_threshold(5000, 20, 50)\nkept = [[] for _ in range(1000)]\ngc.freeze()"
    ),
}


def run_python(code: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("setup", sorted(SETUPS))
def test_import_harness_and_a_host_leave_the_process_alone(tmp_path: Path, setup: str) -> None:
    write(tmp_path / "gc_state.py", PLUGIN)
    config = write(tmp_path / "cordis.yml", "- id: probe\n  name: ./gc_state.py\n")
    code = STATE + SCRIPT.format(setup=textwrap.dedent(SETUPS[setup]), config=str(config))
    seen = run_python(code)
    before = seen["before"]
    assert isinstance(before, dict)
    frozen = before.pop("gc frozen")
    for moment in ("imported", "outside", "inside", "stopped", "after"):
        now = seen[moment]
        assert isinstance(now, dict)
        # frozen objects freed meanwhile leave the count; nothing joins it
        assert frozen - 100 < now.pop("gc frozen") <= frozen, moment
        if moment in {"outside", "inside", "stopped"}:  # asyncio's SIGINT handler, in the loop
            assert now == seen["outside"], moment
            now = {**now, "signals": before["signals"]}
        assert now == before, moment
    assert seen["at load"] == {
        "enabled": before["gc enabled"],
        "threshold": before["gc threshold"],
    }
    if before["gc enabled"]:  # the collector ran while harness imported, as for any import
        assert isinstance(seen["collections during import"], int)
        assert seen["collections during import"] > 0


def test_garbage_made_before_the_import_is_still_collected() -> None:
    code = """
import gc, json, weakref

class Node:
    pass

node = Node()
node.self = node  # a cycle: only the cyclic collector frees it
gone = weakref.ref(node)
del node
import harness
from harness import Host
gc.collect()
print(json.dumps({"collected": gone() is None, "frozen": gc.get_freeze_count()}))
"""
    assert run_python(code) == {"collected": True, "frozen": 0}


def test_the_harness_command_tunes_its_own_process(tmp_path: Path) -> None:
    """The CLI froze what its imports made; the collector is on, at Python's thresholds."""
    write(tmp_path / "gc_state.py", PLUGIN)
    write(tmp_path / "cordis.yml", "- id: probe\n  name: ./gc_state.py\n")
    done = run_harness("call", "gc_state", "{}", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    state = json.loads(done.stdout)["result"]
    assert state["frozen"] > 10_000  # harness, click, pydantic, anyio, yaml...
    assert state["enabled"] is True
    assert state["at_load"]["enabled"] is True
    assert tuple(state["threshold"]) == (700, 10, 10)  # Python's own


TUNING = {"disable", "enable", "freeze", "unfreeze", "set_threshold", "set_debug"}


def test_only_the_command_line_touches_the_collector() -> None:
    """The runtime check above sees the paths it runs; this one sees every module."""
    package = Path(harness.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in TUNING | {"callbacks"}
                and isinstance(node.value, ast.Name)
                and node.value.id in {"gc", "_gc"}
            ):
                found.append(f"{path.relative_to(package).as_posix()}: gc.{node.attr}")
    assert sorted(set(found)) == [
        "cli/entry_point.py: gc.disable",
        "cli/entry_point.py: gc.enable",
        "cli/entry_point.py: gc.freeze",
    ]
