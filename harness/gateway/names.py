"""Registry names for upstream tools: prefix, filters, and a deterministic repair.

harness (like OpenAI) accepts tool names of 1-64 letters, digits, ``_`` and ``-``; Anthropic
and MCP accept those too. An upstream name that, once prefixed, fits that rule is kept as it
is. Any other name (a dot or a space in it, or too long) becomes its cleaned form — every
other character replaced by ``_``, cut to 55 characters — plus ``_`` and the first 8 hex
digits of the SHA-256 of the upstream name, so two upstream names never repair to one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from fnmatch import fnmatchcase

from ..tools.definition import NAME_PATTERN

PREFIX_PATTERN = re.compile(r"^[A-Za-z0-9_-]{0,48}$")
_INVALID = re.compile(r"[^A-Za-z0-9_-]")


def default_prefix(entry_id: str) -> str:
    """``<id>_``, with characters a tool name cannot hold replaced by ``_``."""
    return _INVALID.sub("_", entry_id)[:47] + "_"


def mount_name(prefix: str, upstream: str) -> str:
    """The registry name of upstream tool ``upstream`` (see the module docstring)."""
    name = prefix + upstream
    if NAME_PATTERN.match(name):
        return name
    digest = hashlib.sha256(upstream.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return _INVALID.sub("_", name)[:55] + "_" + digest


def selected(name: str, include: Iterable[str], exclude: Iterable[str]) -> bool:
    """Whether an upstream name passes the include and exclude globs (case-sensitive)."""
    if any(fnmatchcase(name, pattern) for pattern in exclude):
        return False
    return any(fnmatchcase(name, pattern) for pattern in include)
