"""An MCP server (the official SDK, over stdio) whose tools are awkward for code mode.

Its tool names are ones a program already has (``print``, ``Any``, ``run_code``), so that
mounted with ``prefix: ""`` they collide with code mode's names; and ``quote`` has a
description and parameter descriptions full of quotes, backslashes and control characters.
Run as ``python upstream_server.py``.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

server = MCPServer("awkward-names")

QUOTE_DESCRIPTION = 'Wrap text in quotes: a """docstring""" ends with a backslash \\ and a "'
TEXT_DESCRIPTION = 'the text; may hold """, \\, \x1b[31m, \x00 or end in "'
MARK_DESCRIPTION = '"\\'


@server.tool(name="print", description="Print on the server's side.")
def print_(text: str) -> str:
    return f"printed upstream: {text}"


@server.tool(name="Any", description="Any one of the given words.")
def any_(words: list[str]) -> str:
    return words[0]


@server.tool(name="run_code", description="Run code on the server (not harness's run_code).")
def run_code(code: str) -> str:
    return f"upstream ran {len(code)} characters"


@server.tool(name="quote", description=QUOTE_DESCRIPTION)
def quote(
    text: Annotated[str, Field(description=TEXT_DESCRIPTION)],
    mark: Annotated[str, Field(description=MARK_DESCRIPTION)] = '"',
) -> str:
    return f"{mark}{text}{mark}"


if __name__ == "__main__":
    server.run("stdio")
