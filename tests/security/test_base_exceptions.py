"""Item: BaseException is contained — in a tool body, at a plugin's import, in its apply, at
start-up and on hot reload. Each becomes a result or an entry problem with file and line, and
the host keeps serving (the old version, for a reload)."""

from __future__ import annotations

import re
import subprocess
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from harness import Host

from .conftest import HARNESS, PLUGINS, harness, run

pytestmark = pytest.mark.anyio

RAISERS = '''
from harness import tool

name = "raisers"
inject = ["tools"]

class Custom(BaseException):
    pass

@tool
def sys_exit() -> str:
    """Raise SystemExit(3)."""
    raise SystemExit(3)

@tool
async def interrupt() -> str:
    """Raise KeyboardInterrupt in an async body."""
    raise KeyboardInterrupt

@tool
def custom() -> str:
    """Raise a custom BaseException in a worker thread."""
    raise Custom("mine")

@tool
async def exit_async() -> str:
    """Raise SystemExit in an async body."""
    raise SystemExit("bye")

def apply(ctx):
    for item in (sys_exit, interrupt, custom, exit_async):
        ctx.tools.register(item)
'''


def project(folder: Path, **plugins: str) -> Path:
    """A cordis.yml with echo and the given plugin files (id -> source)."""
    lines = [f"- {{ id: echo, name: {PLUGINS / 'echo.py'} }}"]
    for entry_id, source in plugins.items():
        (folder / f"{entry_id}.py").write_text(source)
        lines.append(f"- {{ id: {entry_id}, name: ./{entry_id}.py }}")
    config = folder / "cordis.yml"
    config.write_text("\n".join(lines) + "\n")
    return config


@pytest.mark.parametrize(
    ("tool", "message"),
    [
        ("sys_exit", "Tool sys_exit raised SystemExit: 3"),
        ("interrupt", "Tool interrupt raised KeyboardInterrupt"),
        ("custom", "Tool custom raised Custom: mine"),
        ("exit_async", "Tool exit_async raised SystemExit: bye"),
    ],
)
async def test_tool_body_base_exception_is_a_result(
    tmp_path: Path, tool: str, message: str
) -> None:
    async with Host(project(tmp_path, raisers=RAISERS)) as host:
        for _ in range(3):
            result = await run(host, tool)
            assert (result.code, result.error) == ("tool_error", message)
        assert (await run(host, "echo", {"text": "still here"})).result == {
            "text": "Echo: still here"
        }


@pytest.mark.parametrize(
    ("source", "line", "shown"),
    [
        ("import sys\n\nsys.exit(3)\n", 3, "SystemExit: 3"),
        ("x = 1\nraise KeyboardInterrupt\n", 2, "KeyboardInterrupt"),
        (
            "class Mine(BaseException):\n    pass\n\nraise Mine('at import')\n",
            4,
            "Mine: at import",
        ),
        (
            "name = 'bad'\n\ndef apply(ctx):\n    raise SystemExit(4)\n",
            4,
            "SystemExit: 4",
        ),
        (
            "name = 'bad'\n\nasync def apply(ctx):\n    raise KeyboardInterrupt('in apply')\n",
            4,
            "KeyboardInterrupt: in apply",
        ),
        ("x = 1\n", 1, "is not a plugin"),
    ],
)
async def test_plugin_base_exception_at_start_up_is_an_entry_problem(
    tmp_path: Path, source: str, line: int, shown: str
) -> None:
    async with Host(project(tmp_path, bad=source)) as host:
        states = {status.id: status.state for status in host.status()}
        assert states == {"echo": "active", "bad": "failed"}
        (problem,) = host.problems()
        assert problem.entry == "bad"
        assert shown in problem.message
        assert (await run(host, "echo", {"text": "x"})).ok
    bad_file = str((tmp_path / "bad.py").resolve())
    assert (Path(problem.file).name, problem.line) == ("cordis.yml", 2)
    assert f"({bad_file}:{line})" in str(problem)
    assert "Traceback" not in str(problem)


GOOD = '''
from harness import tool

name = "hot"
inject = ["tools"]

@tool
def hot() -> str:
    """Say which version runs."""
    return "v1"

def apply(ctx):
    ctx.tools.register(hot)
'''


@pytest.mark.parametrize(
    "broken",
    [
        "import sys\nsys.exit(3)\n",
        "raise KeyboardInterrupt\n",
        "name = 'hot'\n\ndef apply(ctx):\n    raise SystemExit(5)\n",
        "name = 'hot'\n# apply removed\n",
    ],
)
async def test_hot_reload_to_a_base_exception_keeps_the_old_version(
    tmp_path: Path, broken: str
) -> None:
    config = project(tmp_path, hot=GOOD)
    source = tmp_path / "hot.py"
    async with Host(config) as host:
        assert (await run(host, "hot")).result == "v1"
        source.write_text(broken)
        errors = await host.reload_entries(["hot"])
        assert errors, "the broken reload reported nothing"
        assert errors[0].entry == "hot"
        assert (await run(host, "hot")).result == "v1"  # the old version keeps serving
        assert (await run(host, "echo", {"text": "x"})).ok
        source.write_text(GOOD.replace('"v1"', '"v2"'))
        assert await host.reload_entries(["hot"]) == []
        assert (await run(host, "hot")).result == "v2"


def test_check_reports_sys_exit_at_import(tmp_path: Path) -> None:
    config = project(tmp_path, bad="import sys\nsys.exit(3)\n")
    done = harness("check", "-c", str(config))
    assert done.returncode == 1, (done.stdout, done.stderr)
    shown = done.stdout + done.stderr
    assert "bad" in shown
    assert "SystemExit: 3" in shown
    assert "Traceback" not in shown


def drain(stream: Any) -> None:
    with stream:
        stream.read()


def serve(config: Path) -> tuple[subprocess.Popen[str], str]:
    """``harness run`` serving MCP over HTTP on a free port, and its URL."""
    process = subprocess.Popen(
        [HARNESS, "run", "-c", str(config), "--port", "0"],
        cwd=config.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        found = re.search(r"serving MCP at (\S+)", line)
        if found:
            # keep draining stderr so the server never blocks on a full pipe
            threading.Thread(target=drain, args=(process.stderr,), daemon=True).start()
            return process, found.group(1)
    process.kill()
    raise AssertionError("harness run did not start serving")


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the MCP SDK client runs on asyncio
async def test_harness_run_keeps_serving_after_base_exceptions(tmp_path: Path) -> None:
    config = project(tmp_path, raisers=RAISERS, bad="import sys\nsys.exit(3)\n")
    process, url = serve(config)
    try:
        with anyio.fail_after(60):
            async with Client(url) as client:
                for tool in ("sys_exit", "interrupt", "custom", "exit_async") * 2:
                    result = await client.call_tool(tool, {})
                    assert result.is_error
                    assert f"Tool {tool} raised" in result.content[0].text  # type: ignore[union-attr]
                echoed = await client.call_tool("echo", {"text": "alive"})
                assert echoed.structured_content == {"text": "Echo: alive"}
        assert process.poll() is None
    finally:
        process.terminate()
        assert process.wait(timeout=20) == 0
