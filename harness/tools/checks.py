"""Value checks: closures that validate a value with JSON Schema 2020-12 semantics.

A *check* returns None for a valid value, or every violation as ``(path, message)``; paths are
built only on failure, so a valid call allocates nothing. :mod:`harness.tools.schema` compiles
spec nodes into trees of these.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from . import jsonvalue

Issue = tuple[str, str]
Check = Callable[[Any], list[Issue] | None]


def json_type(value: Any) -> str:
    """The JSON type name of a Python value, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON Schema defines it: ``1 == 1.0``, but ``true != 1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and bool(a == b)


def format_issues(issues: list[Issue]) -> str:
    """``path: message; path: message`` (a root-level issue has no path)."""
    return "; ".join(f"{path}: {message}" if path else message for path, message in issues)


def all_of(checks: list[Check]) -> Check:
    if not checks:
        return accept
    if len(checks) == 1:
        return checks[0]
    first, *rest = checks

    def check(value: Any) -> list[Issue] | None:
        issues = first(value)
        if issues:  # a type mismatch makes the other constraints noise
            return issues
        for other in rest:
            found = other(value)
            if found:
                issues = (issues or []) + found
        return issues

    return check


def accept(value: Any) -> None:
    return None


def _string(value: Any) -> list[Issue] | None:
    if isinstance(value, str):
        return None
    return [("", f"expected string, got {json_type(value)}")]


def _number(value: Any) -> list[Issue] | None:
    kind = type(value)
    if kind is float or kind is int or (isinstance(value, int | float) and kind is not bool):
        return None
    return [("", f"expected number, got {json_type(value)}")]


def _integer(value: Any) -> list[Issue] | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return None
    return [("", f"expected integer, got {json_type(value)}")]


def _boolean(value: Any) -> list[Issue] | None:
    if isinstance(value, bool):
        return None
    return [("", f"expected boolean, got {json_type(value)}")]


def _null(value: Any) -> list[Issue] | None:
    if value is None:
        return None
    return [("", f"expected null, got {json_type(value)}")]


SCALAR_CHECKS: dict[str, Check] = {
    "string": _string,
    "number": _number,
    "integer": _integer,
    "boolean": _boolean,
    "null": _null,
}


def array_check(item_check: Check | None) -> Check:
    def check(value: Any) -> list[Issue] | None:
        if not isinstance(value, list):
            return [("", f"expected array, got {json_type(value)}")]
        if item_check is None:
            return None
        issues: list[Issue] | None = None
        for index, item in enumerate(value):
            found = item_check(item)
            if found:
                issues = issues or []
                issues.extend((f"[{index}]{path}", message) for path, message in found)
        return issues

    return check


_EXACT: dict[Check, tuple[type, ...]] = {
    _string: (str,),
    _number: (int, float),
    _integer: (int,),
    _boolean: (bool,),
    _null: (type(None),),
}
"""Scalar checks → exact types they surely accept (others take the full check)."""


class _Missing:
    """The type of a property that is absent."""


_MISSING = _Missing()


def object_check(checks: dict[str, Check], required: tuple[str, ...], closed: bool) -> Check:
    items = tuple(checks.items())
    # An open object of plain scalar properties (most tools' arguments) is judged first by
    # exact type alone, without a call per property; anything else takes the full check.
    simple = not closed and bool(items) and all(c in _EXACT for _, c in items)
    quick = tuple(
        (key, _EXACT[c] if key in required else (*_EXACT[c], _Missing))
        for key, c in (items if simple else ())
    )

    def check(value: Any) -> list[Issue] | None:
        if quick and type(value) is dict:
            for key, accepted in quick:
                if type(value.get(key, _MISSING)) not in accepted:
                    break
            else:
                return None
        if not isinstance(value, dict):
            return [("", f"expected object, got {json_type(value)}")]
        issues: list[Issue] | None = None
        for key in required:
            if key not in value:
                issues = issues or []
                issues.append((f".{key}", "required property is missing"))
        for key, item_check in items:
            if key in value:
                found = item_check(value[key])
                if found:
                    issues = issues or []
                    issues.extend((f".{key}{path}", message) for path, message in found)
        if closed:
            for key in value:
                if key not in checks:
                    issues = issues or []
                    issues.append((f".{key}", "unexpected property (not allowed here)"))
        return issues

    return check


Acceptor = Callable[[dict[str, Any]], bool]
"""A quick yes for a dict of arguments: True only when it is surely valid (see
:func:`flat_acceptor`); False means nothing but "take the full check"."""


def flat_acceptor(checks: dict[str, Check], required: tuple[str, ...]) -> Acceptor | None:
    """For an open object whose properties are plain scalars (most tools' arguments): one
    pass over the properties that says True when a dict holds only them (the required ones
    all), each valid JSON as :func:`jsonvalue.problem` judges it (a finite float, an ASCII
    string) and of a type the property surely accepts. A dict with a key the spec does not
    name gets False: the full check judges it. None when the properties are not all plain
    scalars under ASCII names: such objects always take the full check.

    The acceptor is every call's validation, so it is written out for its spec (as
    ``dataclasses`` writes ``__init__``): one straight run of tests, a property after
    another, with no loop and no per-property call. The property names reach the code as
    variables (``k0``, ``k1``...), never as source text.
    """
    if not checks or not all(c in _EXACT and key.isascii() for key, c in checks.items()):
        return None
    needed = frozenset(required)
    namespace: dict[str, Any] = {
        "M": _MISSING,
        "isfinite": math.isfinite,
        "B": jsonvalue.BIG,
        "N": jsonvalue.NEG_BIG,
    }
    lines = ["def accepts(args):", "    get = args.get"]
    optional = False
    for index, (key, check) in enumerate(checks.items()):
        namespace[f"k{index}"] = key
        lines.append(f"    v = get(k{index}, M)")
        indent = "    "
        if key not in needed:
            optional = True
            lines += ["    if v is not M:", "        present += 1"]
            indent = "        "
        lines += [indent + line for line in _ACCEPTED[check]]
    if optional:
        lines.insert(2, "    present = 0")
        lines.append(f"    return len(args) == {len(needed)} + present")
    else:
        lines.append(f"    return len(args) == {len(checks)}")
    exec(compile("\n".join(lines), "<harness acceptor>", "exec"), namespace)
    accepts: Acceptor = namespace["accepts"]
    return accepts


_ACCEPTED: dict[Check, tuple[str, ...]] = {
    _string: ("if type(v) is not str or not v.isascii():", "    return False"),
    _number: (
        "t = type(v)",
        "if t is float:",
        "    if not isfinite(v):",
        "        return False",
        "elif t is not int or not N < v < B:",
        "    return False",
    ),
    _integer: ("if type(v) is not int or not N < v < B:", "    return False"),
    _boolean: ("if type(v) is not bool:", "    return False"),
    _null: ("if v is not None:", "    return False"),
}
"""The source of :func:`flat_acceptor`'s test of one property (``v``), by its check."""


def one_of_check(options: list[Check]) -> Check:
    def check(value: Any) -> list[Issue] | None:
        failures = [option(value) for option in options]
        matched = sum(1 for failure in failures if not failure)
        if matched == 1:
            return None
        if matched > 1:
            return [("", f"matches {matched} of the oneOf options; it must match exactly one")]
        details = " | ".join(format_issues(failure or []) for failure in failures)
        return [("", f"matches none of the oneOf options ({details})")]

    return check


def enum_check(values: tuple[Any, ...]) -> Check:
    shown = ", ".join(show(v) for v in values)

    def check(value: Any) -> list[Issue] | None:
        if any(json_equal(value, option) for option in values):
            return None
        return [("", f"expected one of {shown}, got {show(value)}")]

    return check


def const_check(expected: Any) -> Check:
    def check(value: Any) -> list[Issue] | None:
        if json_equal(value, expected):
            return None
        return [("", f"expected {show(expected)}, got {show(value)}")]

    return check


def show(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def finish_paths(issues: list[Issue]) -> list[Issue]:
    """Turn check-relative paths (``.a[2].b``) into display paths (``a[2].b``)."""
    return [(path[1:] if path.startswith(".") else path, message) for path, message in issues]
