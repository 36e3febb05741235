"""Code mode: ``harness:code`` runs a model's Python program whose tool calls go through the
pipeline (DESIGN §14, ``docs/code.md``).

Rooms, bottom up: :mod:`.config` (the entry's config), :mod:`.stubs` (Python stubs from tool
schemas), :mod:`.pool` (the Monty worker pool), :mod:`.results` (the canonical value and the
nested cards), :mod:`.program` (one program's run), :mod:`.plugin` (the ``run_code`` tool).
"""

from . import plugin
from .config import CodeConfig
from .plugin import RUN_CODE

__all__ = ["RUN_CODE", "CodeConfig", "plugin"]
