"""Helpers shared by the tests: files, tool plugins, and the real harness executable."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types

from harness import Host, ToolResult

HARNESS = str(Path(sys.executable).parent / "harness")
ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "harness" / "templates" / "cordis.yml"
"""The pristine starter config ``harness init`` writes (tracked; never a user's project file:
a clone's own ``cordis.yml`` is the user's, and no test reads it)."""
PLUGINS = ROOT / "plugins"
ALL_ON = ("files.enabled=true", "git.enabled=true")
"""The bundled file and git tools ship switched off; tests that use them switch them on."""


def project_copy(folder: Path) -> Path:
    """A project of its own in ``folder``: the pristine template as ``cordis.yml`` and a copy
    of the bundled plugins. Returns its ``cordis.yml``."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(TEMPLATE, folder / "cordis.yml")
    shutil.copytree(
        PLUGINS,
        folder / "plugins",
        ignore=shutil.ignore_patterns("__pycache__"),
        dirs_exist_ok=True,
    )
    return folder / "cordis.yml"


def copy_of_checkout(target: Path) -> Path:
    """The files of this checkout git knows of (tracked, or new and not ignored)."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    )
    for name in listed.stdout.decode().split("\0"):
        source = ROOT / name
        if name and source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def write(path: Path, text: str) -> Path:
    """Write dedented ``text`` to ``path`` (parents created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


TOOL_PLUGIN = """
from harness import define_tool

inject = ["tools"]


def apply(ctx, config):
    label = config.get("label", "{name}")
    ctx.tools.register(
        define_tool(
            name="{name}",
            description="A test tool",
            parameters={{"text": {{"type": "string"}}}},
            execute=lambda args: f"{{label}}:{{args.get('text', '')}}",
        )
    )
"""


def tool_plugin(path: Path, name: str) -> Path:
    """A plugin file registering a tool ``name`` that answers ``label:text``."""
    return write(path, TOOL_PLUGIN.format(name=name))


def run_harness(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    python: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """Run the real ``harness`` executable (under ``python -X ...`` options when given)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    environment.update(env or {})
    command = [sys.executable, *python, HARNESS] if python else [HARNESS]
    return subprocess.run(
        [*command, *args],
        cwd=cwd,
        env=environment,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def entries(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """``harness plugins --json`` output by id."""
    import json

    assert result.returncode == 0, result.stderr
    return {item["id"]: item for item in json.loads(result.stdout)}


async def run(host: Host, name: str, args: Any = None) -> ToolResult:
    """Execute one call on ``host``'s registry (``args`` as given: a dict or JSON text)."""
    result: ToolResult = await host.tools.execute(
        {"id": "t", "name": name, "args": {} if args is None else args}
    )
    return result


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run git in ``repo`` with a fixed identity."""
    return subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.name=Test",
            "-c",
            "user.email=t@example.com",
            "-c",
            "init.defaultBranch=main",
            *args,
        ],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout


APPROVAL_PROMPT = "Allow the tool call "
"""How harness's approval prompt starts (:func:`harness.tools.approval_contract.prompt`)."""


class Elicitor:
    """The person behind an MCP client, as the client's ``elicitation_callback``.

    An approval prompt is answered with ``action`` and ``content`` (accepting,
    ``{"approve": True}`` unless ``content`` says otherwise); with ``tool``, only the prompts
    for that tool are, and the others are declined. Any other question (an upstream server's
    own form) is accepted with ``form``, or declined without one. Each request's message and
    requested schema are kept, in order, in ``asked`` and ``schemas``.
    """

    def __init__(
        self,
        action: Literal["accept", "decline", "cancel"] = "accept",
        content: dict[str, Any] | None = None,
        *,
        tool: str | None = None,
        form: dict[str, Any] | None = None,
    ) -> None:
        self.action = action
        self.content = {"approve": True} if content is None and action == "accept" else content
        self.tool = tool
        self.form = form
        self.asked: list[str] = []
        self.schemas: list[dict[str, Any]] = []

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        message: str = params.message
        schema = getattr(params, "requested_schema", None)
        self.asked.append(message)
        self.schemas.append(schema if isinstance(schema, dict) else {})
        if not message.startswith(APPROVAL_PROMPT):
            if self.form is None:
                return types.ElicitResult(action="decline")
            return types.ElicitResult(action="accept", content=self.form)
        if self.tool is not None and not message.startswith(f"{APPROVAL_PROMPT}{self.tool}("):
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action=self.action, content=self.content)


@contextlib.asynccontextmanager
async def serving_http(surface: Any, wrap: Any = None) -> AsyncIterator[str]:
    """``surface`` (an ``McpSurface``) served over streamable HTTP on a free port of
    127.0.0.1 while inside (its app wrapped by ``wrap``, as ``serve_http`` takes it);
    yields its MCP URL."""
    ready: list[str] = []
    got_url = anyio.Event()

    def on_ready(url: str) -> None:
        ready.append(url)
        got_url.set()

    async with anyio.create_task_group() as group:
        group.start_soon(lambda: surface.serve_http(port=0, on_ready=on_ready, wrap=wrap))
        with anyio.fail_after(30):
            await got_url.wait()
        yield ready[0]
        group.cancel_scope.cancel()
