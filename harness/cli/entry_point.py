"""The ``harness`` executable's process: how it starts, and how it ends.

The command line owns its process, so it tunes that process's cyclic garbage collector,
which the library never does (``import harness`` leaves the collector alone):

- While the commands are imported (harness, pydantic, anyio, click, yaml: some 60 000
  objects that live as long as the process, and hardly any garbage) the collector is
  paused, so no collection walks what has loaded so far again and again.
- What the imports made then leaves the collector's care (``gc.freeze``): no collection
  walks it again, nor the interpreter's last one at exit, which would otherwise free it
  object by object.
- The collector is then on, as Python starts it: what the host and its plugins make is
  collected as usual, at exit too (a plugin's file left open is still flushed and closed).

Exit codes: 0 success; 1 a failed check or a failed tool call; 2 a usage error or a config
that cannot be read at all (``check`` reports those as problems and exits 1). Errors print
as ``TypeName: message`` on stderr, with a traceback only under ``--debug``. :func:`main`
ends the process; to run commands inside a program, invoke :data:`harness.cli.cli`.
"""

from __future__ import annotations

import gc
import sys
from typing import Any


def main() -> None:
    """Console entry point: library errors become ``TypeName: message`` and an exit code."""
    gc.disable()  # this process's own collector (see the module's docstring)
    try:
        import click

        from ..errors import ConfigError, HarnessError
        from .commands import cli
        from .options import fail
    finally:
        gc.freeze()
        gc.enable()
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


def _single(group: BaseExceptionGroup[Any]) -> BaseException:
    """The one error inside (nested) exception groups, or the group itself."""
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error
