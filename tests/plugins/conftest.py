"""Shared names of the bundled-plugin tests (the ``workspace`` and ``host`` fixtures are in
tests/conftest.py)."""

from __future__ import annotations

from ..helpers import ALL_ON, ROOT, git, run

__all__ = ["ALL_ON", "ROOT", "SET_ALL_ON", "git", "run"]

SET_ALL_ON = tuple(arg for override in ALL_ON for arg in ("--set", override))
"""``ALL_ON`` as ``--set`` arguments of the harness command line."""
