"""A package's public names, imported from their modules on first use.

``import harness`` (or ``harness.cli``, ``harness.mcp``) then imports nothing else: the MCP
SDK, click or the host load when a name that needs them is first read.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: ``name`` comes from its submodule
    ``homes[name]`` when first read, and is kept in the package's namespace."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{home}", package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
