"""harness's log lines on stderr: one line per record, tracebacks only under ``--debug``."""

from __future__ import annotations

import logging
import sys
from typing import Any


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


def configure_logging(debug: bool) -> None:
    """harness's loggers to stderr, one line per record; debug level under ``--debug``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(LogFormatter(debug))
    logger = logging.getLogger("harness")
    logger.handlers[:] = [handler]
    logger.setLevel(logging.DEBUG if debug else logging.WARNING)
    logger.propagate = False
