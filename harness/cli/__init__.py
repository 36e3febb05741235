"""The ``harness`` command line: thin, it parses, calls :class:`~harness.host.Host` or
:mod:`.serve_host`, prints.

:mod:`.entry_point` is the executable's process (its exit codes and its garbage-collector
tuning, which only the command line's own process gets); :mod:`.commands` is the command
group, with one module per group of commands. Names load on first use, so importing this
package (or running ``harness``) pays for nothing before the process is tuned.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .call import CliApproval
    from .commands import cli
    from .entry_point import main
    from .options import Options, common
    from .serve import mcp_options

_HOMES = {
    "CliApproval": "call",
    "cli": "commands",
    "main": "entry_point",
    "Options": "options",
    "common": "options",
    "mcp_options": "serve",
}

__all__ = ["CliApproval", "Options", "cli", "common", "main", "mcp_options"]


__getattr__ = lazy_exports(__name__, _HOMES)
