"""Upstream JSON Schemas: made valid for every schema format, and checked with ``jsonschema``.

harness's own validator compiles harness's parameter spec language; an upstream server sends
arbitrary JSON Schema (``$ref``, ``anyOf``, ``pattern``, ``minimum``, ...). Mounted tools are
therefore checked with the ``jsonschema`` library (:mod:`harness.tools.fullschema`, as a
tool's full-schema parameters are), with the dialect the schema declares (``$schema``;
2020-12 when absent), every violation collected with its path in harness's form
(``items[2].name: expected string, got integer``) and the call refused with ``invalid_args``
before it leaves the host. ``$ref`` resolves only inside the schema itself: a hostile schema
cannot make harness fetch anything. ``format`` is not asserted (as 2020-12 says by default).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..errors import DefinitionError, ToolArgsError
from ..tools.fullschema import InvalidSchema, schema_checker
from ..tools.icons import KEYS, check_icons


class UnusableSchema(ValueError):
    """Raised when an upstream schema cannot be mounted (the tool is then skipped)."""


def json_size(value: Any) -> int:
    """The size of ``value`` as compact UTF-8 JSON, in bytes (what a tools list carries)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(text.encode("utf-8", "surrogatepass"))


def _bound(raw: Any, key: str, limit: int) -> None:
    size = json_size(raw)
    if size > limit:
        raise UnusableSchema(
            f"its {key} is {size} bytes, more than max_schema_bytes ({limit}); raise "
            "max_schema_bytes or exclude the tool"
        )


def input_schema(raw: Any, limit: int) -> dict[str, Any]:
    """The upstream input schema as a root object every format accepts.

    MCP, OpenAI and Anthropic all want an object at the root: ``type: object`` is added when
    missing, and ``properties: {}`` too (OpenAI rejects an object schema without it). A
    schema larger than ``limit`` bytes is refused: a cut schema would mean something else.
    """
    if not isinstance(raw, dict):
        raise UnusableSchema("its inputSchema is not an object")
    _bound(raw, "inputSchema", limit)
    kind = raw.get("type", "object")
    if kind != "object":
        raise UnusableSchema(f"its inputSchema has type {kind!r}; tool arguments are an object")
    schema = dict(raw)
    schema["type"] = "object"
    if not isinstance(schema.get("properties"), dict):
        schema["properties"] = {}
    return schema


def output_schema(raw: Any, limit: int) -> dict[str, Any] | None:
    """The upstream output schema when it is an object schema, else None; refused when larger
    than ``limit`` bytes."""
    if not isinstance(raw, dict) or raw.get("type") != "object":
        return None
    _bound(raw, "outputSchema", limit)
    return raw


def compile_checker(schema: dict[str, Any]) -> Callable[[Any], None]:
    """A check that raises :class:`ToolArgsError` listing every violation of ``schema``
    (:func:`harness.tools.fullschema.schema_checker`, as a tool's full-schema parameters)."""
    try:
        return schema_checker(schema)
    except InvalidSchema as exc:
        raise UnusableSchema(f"its inputSchema is {exc}") from None


class NullOmitter:
    """Optional arguments given as ``null`` where their schema admits no ``null``, taken as
    not given (SEP-2243: "null or not provided" alike; a model often writes ``null`` for a
    parameter it leaves out). They are dropped before the check and never sent; a ``null``
    the schema admits, or one for a required parameter, is left for the check to judge."""

    def __init__(self, parameters: dict[str, Any]) -> None:
        properties = parameters.get("properties")
        self.properties: dict[str, Any] = properties if isinstance(properties, dict) else {}
        required = parameters.get("required")
        self.required = frozenset(required) if isinstance(required, list) else frozenset()
        self.definitions: dict[str, Any] = {
            key: parameters[key] for key in ("$defs", "definitions") if key in parameters
        }
        self._admits: dict[str, bool] = {}

    def __call__(self, args: Any) -> Any:
        if type(args) is not dict or None not in args.values():
            return args
        dropped = [key for key, value in args.items() if value is None and self._omits(key)]
        if not dropped:
            return args
        return {key: value for key, value in args.items() if key not in dropped}

    def _omits(self, key: str) -> bool:
        if key in self.required or key not in self.properties:
            return False
        admits = self._admits.get(key)
        if admits is None:
            one = {"type": "object", "properties": {key: self.properties[key]}}
            try:
                compile_checker({**one, **self.definitions})({key: None})
                admits = True
            except (ToolArgsError, UnusableSchema):
                admits = False
            self._admits[key] = admits
        return not admits


def bound_description(upstream: str, text: str, limit: int) -> tuple[str, str | None]:
    """``text`` cut to ``max_description_bytes`` (UTF-8) when longer, and the problem saying so.

    Every tools list, ``GET /api/tools`` and model request carries each description, so an
    upstream cannot make them all heavy: the tool stays usable, described by its start.
    """
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text, None
    mark = f" [cut by harness: {len(data)} bytes, limit {limit}]"
    keep = data[: limit - len(mark.encode())].decode("utf-8", "ignore")
    note = (
        f"tool {upstream!r}: its description is {len(data)} bytes, more than "
        f"max_description_bytes ({limit}); it is mounted with the description cut to {limit} "
        "bytes (raise max_description_bytes, or exclude the tool)"
    )
    return keep + mark, note


def upstream_icons(item: Any, limit: int) -> tuple[dict[str, Any], ...]:
    """The icons of an upstream tool, resource or prompt as it spelled them, for harness's
    lists; none when they are not icons harness can serve (a malformed one) or are larger
    than ``limit`` bytes together (a ``data:`` URI can be large)."""
    icons = [
        {key: value for key, value in icon.items() if key in KEYS}
        for icon in (
            raw.model_dump(mode="json", by_alias=True, exclude_none=True)
            for raw in getattr(item, "icons", None) or ()
        )
    ]
    if not icons or json_size(icons) > limit:
        return ()
    try:
        return check_icons(icons, "icons")
    except DefinitionError:
        return ()
