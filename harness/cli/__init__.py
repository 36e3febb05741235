"""The ``harness`` command line: thin, it parses, calls :class:`~harness.host.Host` or
:mod:`harness.cli.serve_host`, prints. One module per group of commands; each loads what it uses
when it runs (``tools --json`` never loads the MCP SDK, the web console, the agent or rich).

Exit codes: 0 success; 1 a failed check or a failed tool call; 2 a usage error or a config
that cannot be read at all (``check`` reports those as problems and exits 1). Errors print
as ``TypeName: message`` on stderr, with a traceback only under ``--debug``.

Before a command runs, what the imports made (harness, pydantic, anyio, click: some 60 000
objects that live as long as the process) leaves the cyclic garbage collector's care
(``gc.freeze``): no collection walks it again, nor the interpreter's last one at exit, which
would otherwise free it object by object (a fifth of a ``harness tools --json``). What the
host and its plugins make afterwards is collected as usual, at exit too: a plugin's file
left open is still flushed and closed. ``main`` ends the process; to run commands inside a
program, invoke ``cli``.
"""

from __future__ import annotations

import gc
import sys
from typing import Any

import click

from .. import __version__
from ..errors import ConfigError, HarnessError
from .call import CliApproval, call
from .inspection import check, plugins, tools
from .options import Options, common, fail
from .project import disable, enable, init
from .serve import mcp_command, mcp_options, run
from .sessions import chat, sessions

__all__ = ["CliApproval", "Options", "cli", "common", "main", "mcp_options"]

EXAMPLES = """
\b
Examples:
  harness run                              start the host on ./cordis.yml
  harness -c my.yml --patch dev.yml check  report every problem of a config
  harness tools --json --format anthropic  print the tool schemas
  harness call add '{"a": 1, "b": 2}'      run one call through the pipeline
  harness --set echo.enabled=false plugins list entries with one switched off
  harness disable files                    switch an entry off in the file
  harness run --mcp http --port 8765       serve the tools to MCP clients at /mcp
  harness mcp                              serve MCP on stdio (for client configs)
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
    chat,
    sessions,
    init,
    enable,
    disable,
):
    cli.add_command(_command)


def _single(group: BaseExceptionGroup[Any]) -> BaseException:
    """The one error inside (nested) exception groups, or the group itself."""
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def main() -> None:
    """Console entry point: library errors become ``TypeName: message`` and an exit code."""
    gc.freeze()  # what the imports made (see the module's docstring)
    debug = "--debug" in sys.argv
    try:
        try:
            cli.main(standalone_mode=False)
        except BaseExceptionGroup as group:
            raise _single(group) from group
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except ConfigError as exc:
        fail(exc, 2, debug)
    except HarnessError as exc:
        fail(exc, 1, debug)
    except KeyboardInterrupt:
        sys.exit(130)
