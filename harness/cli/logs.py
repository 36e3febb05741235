"""harness's log lines on stderr: one line per record, tracebacks only under ``--debug``.

A plugin that fails logs it; every command reports the entries that failed in its first load
itself, with file and line (``check``, ``run`` and ``mcp`` as problems, ``plugins`` in its
table, ``tools`` and ``call`` one line each, ``chat`` in its error), so until it has
(:func:`failures_reported`) those records are left out, but under ``--debug``, where they
come with their tracebacks. A plugin that fails later (a mounted server lost while ``run``
serves) is logged as it happens.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from ..fiber import ENTRY_FAILED


class LogFormatter(logging.Formatter):
    """One line per record; tracebacks only in debug mode."""

    def __init__(self, debug: bool) -> None:
        super().__init__("%(levelname)s %(name)s: %(message)s")
        self.debug = debug

    def formatException(self, ei: Any) -> str:
        return super().formatException(ei) if self.debug else ""

    def format(self, record: logging.LogRecord) -> str:
        if not self.debug:
            record = logging.makeLogRecord(record.__dict__)
            record.exc_info = None
            record.exc_text = None
            record.stack_info = None
        return super().format(record)


class FirstLoad(logging.Filter):
    """Leaves out a plugin's failure record while the command's first load is unreported."""

    def __init__(self) -> None:
        super().__init__()
        self.reported = False

    def filter(self, record: logging.LogRecord) -> bool:
        return self.reported or not getattr(record, ENTRY_FAILED, False)


FIRST_LOAD = FirstLoad()


def configure_logging(debug: bool) -> None:
    """harness's loggers to stderr, one line per record; debug level under ``--debug``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(LogFormatter(debug))
    FIRST_LOAD.reported = debug
    handler.addFilter(FIRST_LOAD)
    logger = logging.getLogger("harness")
    logger.handlers[:] = [handler]
    logger.setLevel(logging.DEBUG if debug else logging.WARNING)
    logger.propagate = False


def failures_reported() -> None:
    """The command has reported the first load's failed entries: log later ones."""
    FIRST_LOAD.reported = True
