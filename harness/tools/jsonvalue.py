"""JSON means JSON: no NaN or ±Infinity, no lone surrogates, in arguments and in results.

Python's ``json`` reads ``NaN`` and ``Infinity`` literals (and ``1e400`` as infinity) and
writes them back out, and a ``str`` may hold a lone surrogate that no UTF-8 encoder accepts.
Neither is JSON, and both break a client downstream (``--json`` output that is not JSON, an
MCP client rejecting ``structuredContent``). :func:`loads` refuses such text and
:func:`problem` finds such a value anywhere in a structure, iteratively (no recursion limit
for a deeply nested value to hit).
"""

from __future__ import annotations

import json
import math
from typing import Any


class NotJson(ValueError):
    """Raised by :func:`loads` when the text is not JSON; the message says where and why."""


def _constant(name: str) -> Any:
    raise NotJson(f"{name} is not a JSON number (JSON has no NaN or Infinity)")


def loads(text: str | bytes) -> Any:
    """Parse JSON text; raise :class:`NotJson` for invalid JSON, NaN, ±Infinity or surrogates."""
    try:
        value = json.loads(text, parse_constant=_constant)
    except NotJson:
        raise
    except RecursionError:
        raise NotJson("it is nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise NotJson(str(exc)) from None
    found = problem(value)
    if found is not None:
        raise NotJson(found)
    return value


def problem(value: Any, limit: int = 10_000_000) -> str | None:
    """What makes ``value`` not JSON, with its path (``$.a[2]``), or None when it is fine.

    Only floats and strings are judged; other types are the schema's business. ``limit``
    bounds the number of items walked (a value bigger than that is not judged further).
    """
    if _fine(value, limit):  # every call asks: walk without building paths first
        return None
    stack: list[tuple[str, Any]] = [("$", value)]
    walked = 0
    while stack and walked < limit:
        path, item = stack.pop()
        walked += 1
        if isinstance(item, float):
            if not math.isfinite(item):
                return f"{path} is {item!r}, which JSON cannot represent (use a finite number)"
        elif isinstance(item, str):
            if _has_surrogate(item):
                return f"{path} contains a lone surrogate, which is not valid Unicode text"
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and _has_surrogate(key):
                    return f"a key of {path} contains a lone surrogate"
                stack.append((f"{path}.{key}", child))
        elif isinstance(item, list | tuple):
            stack.extend((f"{path}[{index}]", child) for index, child in enumerate(item))
    return None


def _fine(value: Any, limit: int) -> bool:
    """:func:`problem` finds nothing: the same walk, in the same order, without paths."""
    kind = type(value)
    if kind is int or kind is bool or value is None:
        return True
    if kind is float:
        return math.isfinite(value)
    stack = [value]
    walked = 0
    if kind is dict and len(value) < limit:  # the usual arguments: a flat object of scalars
        stack.clear()
        walked = 1
        for key, child in value.items():
            if isinstance(key, str) and _has_surrogate(key):
                return False
            sort = type(child)
            if sort is int or sort is bool or child is None:
                walked += 1
            elif sort is float:
                walked += 1
                if not math.isfinite(child):
                    return False
            elif sort is str:
                walked += 1
                if not child.isascii() and _has_surrogate(child):
                    return False
            else:
                stack.append(child)
    while stack and walked < limit:
        item = stack.pop()
        walked += 1
        if isinstance(item, float):
            if not math.isfinite(item):
                return False
        elif isinstance(item, str):
            if _has_surrogate(item):
                return False
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and _has_surrogate(key):
                    return False
                stack.append(child)
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return True


def _has_surrogate(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
