"""JSON means JSON, in arguments and in results: the one place a value is judged.

A JSON value is None, a bool, an int of at most :data:`MAX_DIGITS` digits, a finite float, a
str of valid Unicode, a list (or tuple) of JSON values, or a dict with str keys and JSON
values. Nothing else passes: not a function, a ``set``, ``object()``, ``{1: "x"}``, NaN or
±Infinity, ``10**5000``, a lone surrogate, or a structure that contains itself. Python's
``json`` reads ``NaN`` and ``Infinity`` literals (and ``1e400`` as infinity) and writes them
back out, and a ``str`` may hold a lone surrogate that no UTF-8 encoder accepts; such values
break a client downstream (``--json`` output that is not JSON, an MCP client rejecting
``structuredContent``). A longer int cannot even be written: Python refuses to turn an int of
more than 4300 digits into text (``json.dumps`` raises), and its ``json`` refuses to read one.

:func:`is_json` is the yes/no every call asks (a flat object of scalars, the usual arguments,
is judged in one pass); :func:`problem` says what is wrong and where (``$.a[2]``), walked
only when the answer is no. Both are iterative (no recursion limit for a deep value to hit)
and bounded: :data:`MAX_DEPTH` levels (a structure that contains itself is infinitely deep)
and ``limit`` items (a value bigger than that is not judged further). :func:`loads` refuses
text that is not JSON.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 1000
"""Containers that may nest; deeper (or a structure containing itself) is not JSON here."""
LIMIT = 10_000_000
"""Items walked at most; what lies beyond is not judged."""

MAX_DIGITS = 4300
"""The most digits an int has here: what Python writes and reads as text by default
(``sys.get_int_max_str_digits()``), in ``json`` and ``str()`` alike."""
BIG: int = 10**MAX_DIGITS
"""The least int of more than :data:`MAX_DIGITS` digits: an int ``n`` is JSON when
``NEG_BIG < n < BIG``."""
NEG_BIG: int = -BIG
"""``-BIG``, made once: negating a 4300-digit int makes a new one each time (about 0.15 µs,
as much again as the rest of a small call's argument check)."""
_CARRY = "(the most a JSON number may have here)"
TOO_LONG = f"an integer of more than {MAX_DIGITS} digits {_CARRY}"
"""What an int too long to be JSON is called in messages."""

_isfinite = math.isfinite


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
        if "integer string conversion" in str(exc):  # the message says what to tune instead
            raise NotJson(f"a number has more than {MAX_DIGITS} digits {_CARRY}") from None
        raise NotJson(str(exc)) from None
    found = problem(value)
    if found is not None:
        raise NotJson(found)
    return value


def is_json(value: Any, limit: int = LIMIT) -> bool:
    """Whether ``value`` is a JSON value (see the module); the check every call makes."""
    kind = type(value)
    if kind is int:
        number: int = value
        return NEG_BIG < number < BIG
    if kind is bool or value is None:
        return True
    if kind is float:
        return _isfinite(value)
    if kind is str:
        return value.isascii() or not _has_surrogate(value)
    if kind is dict and len(value) < limit:  # the usual arguments: a flat object of scalars
        for key, child in value.items():
            if type(key) is not str or (not key.isascii() and _has_surrogate(key)):
                return problem(value, limit) is None
            sort = type(child)
            if sort is int:
                if not NEG_BIG < child < BIG:
                    return False
                continue
            if sort is bool or child is None:
                continue
            if sort is float:
                if not _isfinite(child):
                    return False
            elif sort is not str or (not child.isascii() and _has_surrogate(child)):
                return problem(value, limit) is None  # nested, or not JSON: the full walk
        return True
    return _walk(value, limit, paths=False) is None


def problem(value: Any, limit: int = LIMIT) -> str | None:
    """What makes ``value`` not JSON, with its path (``$.a[2]``), or None when it is fine."""
    return _walk(value, limit, paths=True)


LONG_INT = f"<an integer of more than {MAX_DIGITS} digits>"
"""What :func:`printable` writes for an int too long to be JSON."""


def printable(value: Any, depth: int = 0) -> Any:
    """``value`` with every int of more than :data:`MAX_DIGITS` digits replaced by
    :data:`LONG_INT`: for what records or shows whatever a call carried (a session's log, the
    console), since ``json.dumps`` and ``str()`` raise on such an int. Lists and dicts that
    hold none are returned as they are (100 levels are looked into)."""
    kind = type(value)
    if kind is int:
        return value if NEG_BIG < value < BIG else LONG_INT
    if depth > 100:
        return value
    if kind is dict:
        changed = {key: printable(item, depth + 1) for key, item in value.items()}
        return value if all(changed[k] is v for k, v in value.items()) else changed
    if kind is list or kind is tuple:
        items = [printable(item, depth + 1) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def _walk(value: Any, limit: int, paths: bool) -> str | None:
    """The first thing that is not JSON, depth first; with ``paths``, said with its path
    (else any non-None string)."""
    stack: list[tuple[str, int, Any]] = [("$", 0, value)]
    walked = 0
    while stack and walked < limit:
        path, depth, item = stack.pop()
        walked += 1
        if item is None or isinstance(item, bool):
            continue
        if isinstance(item, int):
            if not NEG_BIG < item < BIG:
                return f"{path} is {TOO_LONG}"
            continue
        if isinstance(item, float):
            if not _isfinite(item):
                return f"{path} is {item!r}, which JSON cannot represent (use a finite number)"
        elif isinstance(item, str):
            if _has_surrogate(item):
                return f"{path} contains a lone surrogate, which is not valid Unicode text"
        elif isinstance(item, dict | list | tuple):
            if depth >= MAX_DEPTH:
                return (
                    f"{path} is nested too deeply (more than {MAX_DEPTH} levels, or it "
                    "contains itself)"
                )
            if isinstance(item, dict):
                for key, child in item.items():
                    if not isinstance(key, str):
                        return f"{path} has the key {key!r}, which is not a string (JSON keys are)"
                    if _has_surrogate(key):
                        return f"a key of {path} contains a lone surrogate"
                    stack.append((f"{path}.{key}" if paths else "", depth + 1, child))
            else:
                stack.extend(
                    (f"{path}[{index}]" if paths else "", depth + 1, child)
                    for index, child in enumerate(item)
                )
        else:
            return (
                f"{path} is a {type(item).__name__}, which is not JSON (use null, booleans, "
                "numbers, strings, lists and objects)"
            )
    return None


def _has_surrogate(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
