"""Run benchmarks by name (all when none is given)."""

from __future__ import annotations

import importlib
import logging
import sys

import anyio

ALL = [
    *("events", "tools", "context", "loader", "reload", "reload_http", "mcp", "mcp_http"),
    *("mcp_branches", "web", "gateway", "gateway_flood", "agent", "sessions", "progress"),
    *("code", "code_value", "code_waits", "code_start"),
    "store",  # the journal per call (SQLite, PostgreSQL) and its two-minute fault test
    "store_tasks",  # watching MCP tasks in the store (SQLite, PostgreSQL)
    "executor",  # last: its Ray cluster would weigh on the others while it runs
]


def run(names: list[str]) -> None:
    for name in names or ALL:
        print(f"== {name}")
        module = importlib.import_module(f"bench.{name}")
        root = logging.getLogger()
        handlers, level = root.handlers[:], root.level
        try:
            anyio.run(module.main)
        finally:  # the MCP SDK's MCPServer installs a rich INFO handler on the root logger:
            root.handlers[:], root.level = handlers, level  # keep it out of later benchmarks
        print()


if __name__ == "__main__":
    run(sys.argv[1:])
