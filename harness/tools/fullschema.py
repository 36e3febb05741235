"""Parameters written as full JSON Schema, checked with the ``jsonschema`` library.

harness's own spec language (:mod:`.schema`) covers what most tools need; a ``parameters``
mapping with a ``"$schema"`` key is instead a JSON Schema 2020-12 document, used as written
(``$defs``, ``$anchor``, ``$ref``, ``allOf``/``anyOf``, ``if``/``then``/``else``, ``x-`` keys
all kept in every format) and validated as written. A mounted server's input schema
(:mod:`harness.gateway.schema`) is checked the same way, with the dialect it declares.

Every violation is collected with its path in harness's form (``items[2].name: expected
string, got integer``) and the call refused with ``invalid_args``. ``$ref`` resolves only
inside the schema itself: a schema cannot make harness fetch anything. ``format`` is not
asserted (as 2020-12 says by default). ``jsonschema`` is imported when the first such
schema is compiled, not when harness is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ToolArgsError, ToolDefinitionError
from .checks import json_type

if TYPE_CHECKING:
    from jsonschema import ValidationError

DIALECT = "https://json-schema.org/draft/2020-12/schema"
MAX_ISSUES = 20
_REQUIRED = re.compile(r"^'(.*)' is a required property$")


class InvalidSchema(ValueError):
    """Raised when a schema is not valid JSON Schema of its dialect (the message says why)."""


def is_full_schema(parameters: Any) -> bool:
    """True when ``parameters`` is a JSON Schema document (it names its ``$schema``)."""
    return isinstance(parameters, Mapping) and "$schema" in parameters


def compile_full(
    parameters: Mapping[str, Any], where: str
) -> tuple[dict[str, Any], Callable[[Any], None]]:
    """A tool's full-schema ``parameters``: the schema as written and its check (which
    raises :class:`ToolArgsError`); raise ToolDefinitionError when it cannot be used."""
    from .schema import check_json

    check_json(dict(parameters), where)
    dialect = parameters["$schema"]
    if not isinstance(dialect, str) or dialect.rstrip("#") != DIALECT:
        raise ToolDefinitionError(
            f"{where}.$schema: {dialect!r} is not JSON Schema 2020-12; write {DIALECT!r} "
            "(or leave '$schema' out to use harness's parameter spec)"
        )
    if parameters.get("type") != "object":
        raise ToolDefinitionError(
            f'{where}: a full JSON Schema of tool arguments needs "type": "object" at its root'
        )
    schema = dict(parameters)
    try:
        return schema, schema_checker(schema)
    except InvalidSchema as exc:
        raise ToolDefinitionError(f"{where}: {exc}") from None


def schema_checker(schema: dict[str, Any]) -> Callable[[Any], None]:
    """A check that raises :class:`ToolArgsError` listing every violation of ``schema``
    (its declared dialect; 2020-12 when it names none); raise InvalidSchema when ``schema``
    is not valid JSON Schema."""
    from jsonschema import SchemaError
    from jsonschema.validators import Draft202012Validator, validator_for
    from referencing import Registry
    from referencing.exceptions import Unresolvable

    cls = validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        raise InvalidSchema(f"not valid JSON Schema: {exc.message}") from None
    validator = cls(schema, registry=Registry())

    def check(args: Any) -> None:
        if not isinstance(args, dict):
            raise ToolArgsError(f"expected an object of arguments, got {json_type(args)}")
        try:
            errors = list(validator.iter_errors(args))
        except Unresolvable as exc:
            raise ToolArgsError(
                f"the input schema has a $ref that does not resolve ({exc})"
            ) from None
        if errors:
            found = sorted(issue for error in errors for issue in _issues(error))
            issues = [f"{path}: {message}" if path else message for path, message in found]
            issues = issues[:MAX_ISSUES]
            raise ToolArgsError("; ".join(issues), issues)

    return check


def _issues(error: ValidationError) -> list[tuple[str, str]]:
    parts = list(error.absolute_path)
    if error.validator == "required":
        match = _REQUIRED.match(error.message)
        if match:
            return [(_path([*parts, match.group(1)]), "required property is missing")]
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        node = error.schema if isinstance(error.schema, dict) else {}
        known = set(node.get("properties") or {})
        patterns = node.get("patternProperties") or {}
        extras = [key for key in error.instance if key not in known]
        if extras and not patterns:
            return [
                (_path([*parts, key]), "unexpected property (not allowed here)") for key in extras
            ]
    return [(_path(parts), _message(error))]


def _path(parts: list[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _message(error: ValidationError) -> str:
    kind = error.validator
    if kind == "type":
        expected = error.validator_value
        shown = " or ".join(expected) if isinstance(expected, list) else str(expected)
        return f"expected {shown}, got {json_type(error.instance)}"
    if kind in ("anyOf", "oneOf") and error.context:
        # say what each alternative wanted rather than repeating the whole value
        branches: dict[Any, list[str]] = {}
        for sub in error.context:
            branch = branches.setdefault(sub.schema_path[0] if sub.schema_path else 0, [])
            branch.extend(
                f"{path}: {message}" if path else message for path, message in _issues(sub)
            )
        wanted = " | ".join(", ".join(issues) for issues in branches.values())
        return f"matches none of the {kind} alternatives ({wanted})"
    return error.message
