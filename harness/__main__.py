"""``python -m harness``: the same as the ``harness`` command."""

from .cli import main

main()
