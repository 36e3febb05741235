"""Run benchmarks by name (all when none is given)."""

from __future__ import annotations

import importlib
import sys

import anyio

ALL = ["events", "tools", "loader", "reload", "mcp", "mcp_http", "web", "gateway", "agent"]


def run(names: list[str]) -> None:
    for name in names or ALL:
        print(f"== {name}")
        module = importlib.import_module(f"bench.{name}")
        anyio.run(module.main)
        print()


if __name__ == "__main__":
    run(sys.argv[1:])
