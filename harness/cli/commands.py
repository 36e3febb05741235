"""The ``harness`` command group and its commands, one module per group of commands; each
loads what it uses when it runs (``tools --json`` never loads the MCP SDK, the web console,
the agent or rich)."""

from __future__ import annotations

from typing import Any

import click

from .. import __version__
from .auth import auth
from .call import call
from .inspection import check, plugins, tools
from .options import Options, common
from .primitives import prompts, resources
from .project import disable, enable, init
from .serve import mcp_command, run
from .sessions import chat, sessions
from .tasks import tasks

EXAMPLES = """
\b
Examples:
  harness run                              start the host on ./cordis.yml
  harness -c my.yml --patch dev.yml check  report every problem of a config
  harness tools --json --format anthropic  print the tool schemas
  harness call add '{"a": 1, "b": 2}'      run one call through the pipeline
  harness resources notes://todo           read a resource (no URI: list them)
  harness prompts review '{"code": "x"}'   render a prompt (no name: list them)
  harness --set echo.enabled=false plugins list entries with one switched off
  harness disable files                    switch an entry off in the file
  harness run --mcp http --port 8765       serve the tools to MCP clients at /mcp
  harness mcp                              serve MCP on stdio (for client configs)
  harness auth remote                      authorise an OAuth MCP server (browser)
  harness tasks --all                      the MCP tasks kept in the store
  harness init my-tools                    start a project: cordis.yml, plugins/, workspace/
"""


@click.group(
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=EXAMPLES,
)
@click.version_option(__version__, prog_name="harness")
@common
@click.pass_context
def cli(ctx: click.Context, config: str | None, patches: Any, overrides: Any, debug: bool) -> None:
    """An async plugin host for LLM-agent tools, configured by cordis.yml."""
    ctx.obj = Options(config, list(patches), list(overrides), debug)


for _command in (
    run,
    mcp_command,
    check,
    plugins,
    tools,
    call,
    resources,
    prompts,
    chat,
    sessions,
    tasks,
    init,
    enable,
    disable,
    auth,
):
    cli.add_command(_command)
