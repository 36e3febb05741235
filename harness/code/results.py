"""What ``run_code`` gives back: the canonical value, and the blocks people read.

The canonical value is small on purpose (it is what the model reads): ``{output, value,
calls: [{name, ok, code, duration_ms}]}``. The render blocks carry more for people: the
program as a code block, one nested card per inner call (a ``tool_call`` block with the
call's arguments, status and its own render blocks), then the output and the value.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..tools import jsonvalue
from ..tools.calls import ToolCall, ToolResult


def value_of(result: ToolResult) -> Any:
    """What a program's call of a successful tool returns: its canonical value. A result
    without one (a mounted tool whose server sent no ``structuredContent``: DESIGN §12) gives
    the text of its text blocks instead, so a program can read a text-only upstream's answer;
    a plain ``None`` (rendered ``null``) stays None."""
    value = result.result
    if value is None and result.content:
        texts = [block["text"] for block in result.content if block.get("type") == "text"]
        if texts and texts != ["null"]:
            return "\n".join(texts)
    return value


@dataclass(slots=True)
class CallRecord:
    """One inner call of a program, as people see it."""

    call: ToolCall
    result: ToolResult | None = None
    duration_ms: float = 0.0

    def summary(self) -> dict[str, Any]:
        """The canonical entry: ``{name, ok, code, duration_ms}``."""
        result = self.result
        return {
            "name": self.call.name,
            "ok": result is not None and result.ok,
            "code": "cancelled" if result is None else result.code,
            "duration_ms": round(self.duration_ms, 3),
        }

    def card(self) -> dict[str, Any]:
        """The nested card: a ``tool_call`` block."""
        result = self.result
        code = "cancelled" if result is None else result.code
        return {
            "type": "tool_call",
            "id": self.call.id,
            "parent": self.call.parent,
            "name": self.call.name,
            "args": self.call.args,
            "status": status_of(code),
            "ok": code is None,
            "code": code,
            "error": None if result is None else result.error,
            "duration_ms": round(self.duration_ms, 3),
            "content": [] if result is None else result.content,
        }


def status_of(code: str | None) -> str:
    """A card's status word (DESIGN §11): done, error, denied, cancelled or timeout."""
    if code is None:
        return "done"
    if code in ("denied", "cancelled", "timeout"):
        return code
    return "error"


@dataclass(slots=True)
class Output:
    """``print()`` output, kept up to ``limit`` characters and counted past it."""

    limit: int
    parts: list[str] = field(default_factory=list)
    kept: int = 0
    total: int = 0

    def write(self, stream: str, text: str) -> None:
        self.total += len(text)
        room = self.limit - self.kept
        if room > 0:
            piece = text[:room]
            self.parts.append(piece)
            self.kept += len(piece)

    def text(self) -> str:
        out = "".join(self.parts)
        if self.total > self.kept:
            out += (
                f"\n[output truncated: the program printed {self.total} characters; "
                f"max_output is {self.limit}]"
            )
        return out

    def fit(self, value: Any) -> Any:
        """The program's value as JSON, within what the output left of ``limit``.

        The value counts as its JSON text, as if printed after the output. Past the limit
        it becomes the head of that text and a note, unless cutting would not shorten it (a
        value no longer than the note stays whole, as the output's own note may pass the
        limit). Its text is read only that far, so a huge value costs neither a JSON copy
        of itself nor the time to write one.
        """
        if value is None:
            return None
        room = self.limit - self.kept
        after = f" after the {self.kept} characters of output" if self.kept else ""
        note = (
            f"[value truncated: the program's value ({_shape(value)}) is longer than "
            f"max_output ({self.limit}) allows{after}; output and value share it]"
        )
        whole = room + 1 + len(note)  # the length of the cut: a longer value is cut
        head: list[str] = []
        size = 0
        for piece in _pieces(value):
            if size < room:
                head.append(piece[: room - size])
            size += len(piece)
            if size > whole:
                break
        else:
            return to_json(value)
        text = "".join(head)
        return f"{text}\n{note}" if text else note


def _shape(value: Any) -> str:
    """A value's kind and length, for the note on a cut value."""
    if isinstance(value, str | bytes):
        return f"a string of {len(value)} characters"
    if isinstance(value, list | tuple | set | frozenset):
        return f"a list of {len(value)} items"
    if isinstance(value, dict):
        return f"an object of {len(value)} keys"
    return type(value).__name__


def to_json(value: Any, depth: int = 0) -> Any:
    """A sandbox value as JSON: tuples and sets become lists, other objects their text."""
    if depth > 100:
        return "…"
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, list | tuple):
        return [to_json(item, depth + 1) for item in value]
    if isinstance(value, set | frozenset):
        items = [to_json(item, depth + 1) for item in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(value, dict):
        return {_key(key, depth): to_json(item, depth + 1) for key, item in value.items()}
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _key(key: Any, depth: int) -> str:
    """An object key: a string as it is, anything else as its JSON text."""
    return key if isinstance(key, str) else json.dumps(to_json(key, depth + 1))


_SLICE = 1 << 16
"""Characters of a long string encoded at a time."""


def _pieces(value: Any, depth: int = 0) -> Iterator[str]:
    """The text of ``json.dumps(to_json(value), ensure_ascii=False)``, piece by piece."""
    if depth > 100:
        yield '"…"'
    elif isinstance(value, str | bytes):
        text = value if isinstance(value, str) else value.decode("utf-8", "replace")
        yield '"'
        for start in range(0, len(text), _SLICE):
            yield json.dumps(text[start : start + _SLICE], ensure_ascii=False)[1:-1]
        yield '"'
    elif isinstance(value, list | tuple | set | frozenset):
        # a set's items are sorted as to_json sorts them: that needs them converted
        items = value if isinstance(value, list | tuple) else to_json(value, depth)
        yield "["
        for index, item in enumerate(items):
            if index:
                yield ", "
            yield from _pieces(item, depth + 1)
        yield "]"
    elif isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            # keys as to_json makes them, where 1 and "1" are one key
            value = {_key(key, depth): item for key, item in value.items()}
        yield "{"
        for index, (key, item) in enumerate(value.items()):
            yield (", " if index else "") + json.dumps(key, ensure_ascii=False) + ": "
            yield from _pieces(item, depth + 1)
        yield "}"
    elif type(value) is int and not jsonvalue.NEG_BIG < value < jsonvalue.BIG:
        # json.dumps would raise Python's advice to call sys.set_int_max_str_digits()
        raise ValueError(f"the program's value holds {jsonvalue.TOO_LONG}")
    else:
        yield json.dumps(to_json(value, depth), ensure_ascii=False)


def canonical(output: Output, value: Any, records: list[CallRecord]) -> dict[str, Any]:
    """``{output, value, calls}``; the value within what the output left of max_output."""
    return {
        "output": output.text(),
        "value": output.fit(value),
        "calls": [record.summary() for record in records],
    }


def _program(code: str, records: list[CallRecord]) -> list[dict[str, Any]]:
    """The program's block, then each inner call as a nested card."""
    return [{"type": "code", "language": "python", "text": code}, *(r.card() for r in records)]


def blocks(code: str, value: dict[str, Any], records: list[CallRecord]) -> list[dict[str, Any]]:
    """The program, each inner call as a nested card, the output, the value."""
    out = _program(code, records)
    if value["output"]:
        out.append({"type": "text", "text": value["output"]})
    if value["value"] is not None:
        shown = json.dumps(value["value"], ensure_ascii=False, indent=1)
        out.append({"type": "text", "text": f"→ {shown}"})
    if len(out) == 1 + len(records):
        out.append({"type": "text", "text": "(no output)"})
    return out


def failure_blocks(code: str, message: str, records: list[CallRecord]) -> list[dict[str, Any]]:
    """A failed program: itself, the cards of the calls it made, then why it failed."""
    return [*_program(code, records), {"type": "text", "text": message}]


def plain(value: Any) -> list[dict[str, Any]]:
    """Blocks from the canonical value alone (when the program's record is not at hand)."""
    out = []
    if isinstance(value, dict):
        for item in value.get("calls") or []:
            out.append({"type": "tool_call", "name": item.get("name"), **item})
        if value.get("output"):
            out.append({"type": "text", "text": str(value["output"])})
        if value.get("value") is not None:
            out.append({"type": "text", "text": f"→ {json.dumps(value['value'])}"})
    return out or [{"type": "text", "text": "(no output)"}]
