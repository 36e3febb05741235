"""What search reads of a tool: its name, description, and its parameters' names and
descriptions, each a field of its own (:mod:`.lexical` weighs them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 3
"""Nested object parameters read at most this deep (a schema may nest without end)."""


@dataclass(frozen=True, slots=True)
class Document:
    """One tool as search sees it."""

    name: str
    description: str
    params: tuple[tuple[str, str], ...] = ()
    """Each parameter's (name, description), nested object properties included."""

    @classmethod
    def of(cls, name: str, description: str, schema: Mapping[str, Any] | None) -> Document:
        """The document of a tool with the JSON Schema ``schema`` for its arguments."""
        params: list[tuple[str, str]] = []
        _walk(schema, params, 0)
        return cls(name, description or "", tuple(params))

    @property
    def text(self) -> str:
        """The whole document as one text (for a model that reads text, not fields)."""
        lines = [self.name, self.description]
        lines.extend(f"{name}: {about}" if about else name for name, about in self.params)
        return "\n".join(line for line in lines if line)


def _walk(schema: Any, params: list[tuple[str, str]], depth: int) -> None:
    if not isinstance(schema, Mapping) or depth >= MAX_DEPTH:
        return
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, sub in properties.items():
            about = sub.get("description") if isinstance(sub, Mapping) else None
            params.append((str(name), about if isinstance(about, str) else ""))
            _walk(sub, params, depth + 1)
    items = schema.get("items")
    if isinstance(items, Mapping):
        _walk(items, params, depth + 1)


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: a tool, its description, and how well it matched (higher is
    better; comparable within one search only)."""

    name: str
    description: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "score": self.score}
