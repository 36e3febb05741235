"""Reading YAML with line numbers kept, for messages that point at the right line.

Mappings load as :class:`LocatedDict` (``line`` of the mapping, ``lines[key]`` of each key)
and sequences as :class:`LocatedList`; scalars load as usual (safe loading only). A
duplicate key is an error, not a silent overwrite.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from .problems import Problem


class LocatedDict(dict[Any, Any]):
    """A mapping that remembers where it and each of its keys stand (1-based lines)."""

    line: int = 0
    lines: dict[Any, int]

    def line_of(self, key: Any) -> int:
        """The line of ``key``, or of the mapping when the key is absent."""
        return self.lines.get(key, self.line)


class LocatedList(list[Any]):
    """A sequence that remembers its line, and each item's."""

    line: int = 0
    lines: list[int]


MAX_DEPTH = 64
"""Deepest nesting of mappings and sequences in a config file."""
MAX_NODES = 200_000
"""Most nodes a config file may hold once its aliases are expanded."""
_NON_PRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)
_REFUSED_TAG = "tag:harness,2026:refused"


@dataclass(frozen=True, slots=True)
class Refused:
    """A value that was not loaded: where it stands and why."""

    line: int
    message: str


class _Loader(yaml.SafeLoader):
    file: str = "<string>"
    bad_lines: dict[int, str]

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.bad_lines = {}
        self._stream: Iterator[yaml.Event] = _bounded(self, _events(self))
        self._next: yaml.Event | None = None

    # The composer reads events through these three: they serve the bounded stream.
    def check_event(self, *choices: Any) -> bool:
        event = self.peek_event()
        if event is None:
            return False
        return not choices or isinstance(event, choices)

    def peek_event(self) -> Any:
        if self._next is None:
            self._next = next(self._stream, None)
        return self._next

    def get_event(self) -> Any:
        event = self.peek_event()
        self._next = None
        return event


def _events(loader: _Loader) -> Iterator[yaml.Event]:
    while yaml.parser.Parser.check_event(loader):
        event: yaml.Event = yaml.parser.Parser.get_event(loader)  # type: ignore[no-untyped-call]
        yield event


def _refused_event(event: yaml.Event, message: str) -> yaml.ScalarEvent:
    return yaml.ScalarEvent(
        None, _REFUSED_TAG, (False, False), message, event.start_mark, event.end_mark
    )


def _bounded(loader: _Loader, events: Iterator[yaml.Event]) -> Iterator[yaml.Event]:
    """The parser's events, with too-deep nodes and over-budget aliases made Refused."""
    sizes: dict[str, int] = {}
    open_nodes: list[tuple[str | None, int]] = []  # (anchor, expanded size so far)
    total = 0
    for event in events:
        if isinstance(event, yaml.CollectionStartEvent):
            if len(open_nodes) >= MAX_DEPTH:
                depth = 1
                for inner in events:  # drop the whole too-deep node
                    if isinstance(inner, yaml.CollectionStartEvent):
                        depth += 1
                    elif isinstance(inner, yaml.CollectionEndEvent):
                        depth -= 1
                        if depth == 0:
                            break
                total += 1
                yield _refused_event(
                    event, f"nested deeper than {MAX_DEPTH} levels; flatten this value"
                )
                continue
            open_nodes.append((event.anchor, 1))
            total += 1
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, size = open_nodes.pop()
            if anchor is not None:
                sizes[anchor] = size
            if open_nodes:
                parent_anchor, parent_size = open_nodes[-1]
                open_nodes[-1] = (parent_anchor, parent_size + size)
        elif isinstance(event, yaml.AliasEvent | yaml.ScalarEvent):
            aliased = isinstance(event, yaml.AliasEvent) and event.anchor is not None
            size = sizes.get(event.anchor or "", 1) if aliased else 1
            if total + size > MAX_NODES:
                event = _refused_event(
                    event,
                    f"aliases here would expand the file past {MAX_NODES} values (an alias "
                    "bomb?); write the values out or use fewer aliases",
                )
                size = 1
            elif isinstance(event, yaml.ScalarEvent) and event.anchor is not None:
                sizes[event.anchor] = 1
            total += size
            if open_nodes:
                anchor, so_far = open_nodes[-1]
                open_nodes[-1] = (anchor, so_far + size)
        yield event


def _construct_refused(loader: _Loader, node: yaml.ScalarNode) -> Refused:
    return Refused(node.start_mark.line + 1, str(node.value))


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> LocatedDict:
    loader.flatten_mapping(node)
    mapping = LocatedDict()
    mapping.line = node.start_mark.line + 1
    mapping.lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        if key in mapping:
            raise ConfigError(
                f"{loader.file}:{line}: duplicate key {key!r}",
                problems=[Problem.at(loader.file, line, None, f"duplicate key {key!r}")],
            )
        mapping[key] = _value(loader, value_node)
        mapping.lines[key] = line
    return mapping


def _construct_sequence(loader: _Loader, node: yaml.SequenceNode) -> LocatedList:
    items = LocatedList(_value(loader, child) for child in node.value)
    items.line = node.start_mark.line + 1
    items.lines = [child.start_mark.line + 1 for child in node.value]
    return items


def _value(loader: _Loader, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode) and loader.bad_lines:
        first, last = node.start_mark.line + 1, node.end_mark.line + 1
        for line in range(first, last + 1):
            if line in loader.bad_lines:
                return Refused(line, loader.bad_lines.pop(line))
    return loader.construct_object(node, deep=True)


_Loader.add_constructor(_REFUSED_TAG, _construct_refused)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def load_yaml(path: Path, notes: list[Problem] | None = None) -> Any:
    """Load ``path``; raise :class:`ConfigError` (with a located problem) when it cannot be.

    Invalid text outside any value (in a comment) is added to ``notes`` when given.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        message = f"config file not found: {path}"
        raise ConfigError(message, problems=[Problem.at(path, None, None, message)]) from None
    except OSError as exc:
        message = f"cannot read config file {path}: {exc.strerror or exc}"
        raise ConfigError(message, problems=[Problem.at(path, None, None, message)]) from None
    bad: dict[int, str] = {}
    text = _decode(data, bad)
    return load_yaml_text(text, path, bad, notes)


def _decode(data: bytes, bad: dict[int, str]) -> str:
    """UTF-8 text with invalid bytes and forbidden characters replaced; their lines in bad."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        text = decoder.decode(data, final=True)
    except UnicodeDecodeError:
        pieces: list[str] = []
        at = 0
        while at < len(data):
            try:
                pieces.append(data[at:].decode("utf-8"))
                break
            except UnicodeDecodeError as exc:
                pieces.append(data[at : at + exc.start].decode("utf-8"))
                line = data.count(b"\n", 0, at + exc.start) + 1
                shown = data[at + exc.start : at + exc.end].hex(" ")
                bad.setdefault(line, f"invalid UTF-8 (bytes {shown}); save the file as UTF-8")
                pieces.append("\ufffd")
                at += exc.end
        text = "".join(pieces)
    if text.startswith("\ufeff"):
        text = text[1:]
    return _clean(text, bad)


def _flatten_flow(text: str) -> str:
    """``text`` with flow collections (``[``, ``{``) nested past MAX_DEPTH cut out.

    YAML's scanner slows down with every open flow level (quadratically), so a value like
    ``[[[[...]]]]`` is cut before parsing and replaced by a Refused marker; the line
    numbers stay as they were. Quotes and comments are skipped roughly as YAML does.
    """
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return text
    depth, at, size = 0, 0, len(text)
    quote = ""
    start = -1
    while at < size:
        char = text[at]
        before = text[at - 1] if at else "\n"
        if quote:
            if char == quote and not (quote == '"' and before == "\\"):
                quote = ""
        elif char in "'\"" and before in " \t\n[{,:":
            quote = char
        elif char == "#" and before in " \t\n":
            newline = text.find("\n", at)
            at = size if newline == -1 else newline
            continue
        elif char in "[{":
            depth += 1
            if depth == MAX_DEPTH + 1:
                start = at
        elif char in "]}" and depth:
            depth -= 1
            if depth == MAX_DEPTH:
                span = text[start : at + 1]
                marker = marker_for(MAX_DEPTH)
                text = text[:start] + marker + "\n" * span.count("\n") + text[at + 1 :]
                at = start + len(marker) + span.count("\n")
                size = len(text)
                continue
        at += 1
    if depth > MAX_DEPTH and start >= 0:  # never closed: cut to the end
        text = text[:start] + marker_for(MAX_DEPTH) + "\n" * text.count("\n", start)
    return text


def marker_for(depth: int) -> str:
    """A scalar that loads as Refused: a value nested deeper than ``depth`` levels."""
    return f' !<{_REFUSED_TAG}> "nested deeper than {depth} levels; flatten this value"'


def _clean(text: str, bad: dict[int, str]) -> str:
    """``text`` with characters YAML forbids replaced by U+FFFD; their lines in ``bad``.

    Flow collections nested too deeply are cut out too (see :func:`_flatten_flow`).
    """
    text = _flatten_flow(text)

    def replace(found: re.Match[str]) -> str:
        line = text.count("\n", 0, found.start()) + 1
        bad.setdefault(line, f"control character U+{ord(found.group()):04X} is not allowed in YAML")
        return "\ufffd"

    return _NON_PRINTABLE.sub(replace, text)


def load_yaml_text(
    text: str,
    path: Path,
    bad: dict[int, str] | None = None,
    notes: list[Problem] | None = None,
    *,
    pure: bool = True,
) -> Any:
    """Parse ``text`` as if read from ``path`` (``bad``: lines of replaced characters).

    The parser is always PyYAML's pure-Python one, read through the bounded event stream
    (libyaml's composer would bypass it); ``pure`` is accepted for compatibility.
    """
    if bad is None:
        bad = {}
        text = _clean(text, bad)
    loader = _Loader(text)
    loader.file = str(path)
    loader.bad_lines = dict(bad)
    try:
        data = loader.get_single_data()
        if notes is not None:
            notes.extend(Problem.at(path, n, None, why) for n, why in loader.bad_lines.items())
        return data
    except RecursionError:
        message = f"the YAML is nested too deeply (more than {MAX_DEPTH} levels)"
        raise ConfigError(message, problems=[Problem.at(path, None, None, message)]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        column = mark.column + 1 if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        message = f"YAML syntax error: {problem}" + (
            f" (line {line}, column {column})" if line else ""
        )
        raise ConfigError(
            f"{path}:{line}:{column}: {message}", problems=[Problem.at(path, line, None, message)]
        ) from None
    except yaml.YAMLError as exc:
        message = f"YAML error: {exc}"
        raise ConfigError(message, problems=[Problem.at(path, None, None, message)]) from None
    finally:
        loader.dispose()
