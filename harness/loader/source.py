"""Reading YAML with line numbers kept, for messages that point at the right line.

Mappings load as :class:`LocatedDict` (``line`` of the mapping, ``lines[key]`` of each key)
and sequences as :class:`LocatedList`; scalars load as usual (safe loading only). A
duplicate key is an error, not a silent overwrite. Every bound of :mod:`.bounds` holds
whichever parser reads the text: libyaml's (C) where PyYAML was built with it, else the
pure-Python one (see :func:`_loader_for`).
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from .bounds import MAX_DEPTH, REFUSED_TAG, bounded, clean, within_bounds
from .config_problems import Problem

WITH_LIBYAML: bool = yaml.__with_libyaml__
"""Whether PyYAML was built with libyaml (then its C parser reads config files)."""

__all__ = ["LocatedDict", "LocatedList", "Refused", "load_yaml", "load_yaml_text"]


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


@dataclass(frozen=True, slots=True)
class Refused:
    """A value that was not loaded: where it stands and why."""

    line: int
    message: str


class _Constructor(yaml.constructor.SafeConstructor):
    """Safe construction into located values; what both loaders share."""

    file: str = "<string>"
    bad_lines: dict[int, str]


class _PureParser(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):
    """PyYAML's pure-Python parser, alone: text in, events out."""

    def __init__(self, text: str) -> None:
        yaml.reader.Reader.__init__(self, text)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)


def _parser(text: str, pure: bool) -> _PureParser | yaml.CBaseLoader:
    return _PureParser(text) if pure or not WITH_LIBYAML else yaml.CBaseLoader(text)


def _events(parser: _PureParser | yaml.CBaseLoader) -> Iterator[yaml.Event]:
    while parser.check_event():
        event = parser.get_event()
        assert event is not None
        yield event


class _Loader(yaml.composer.Composer, _Constructor, yaml.resolver.Resolver):
    """PyYAML's composer reading a parser's events through :func:`~.bounds.bounded`."""

    def __init__(self, text: str, pure: bool) -> None:
        yaml.composer.Composer.__init__(self)
        _Constructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self.bad_lines = {}
        self._parser = _parser(text, pure)
        self._stream: Iterator[yaml.Event] = bounded(_events(self._parser))
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

    def dispose(self) -> None:
        self._parser.dispose()


if WITH_LIBYAML:

    class _FastLoader(yaml.CSafeLoader, _Constructor):
        """libyaml's parser and composer, for text whose events are within the bounds."""

        def __init__(self, text: str) -> None:
            super().__init__(text)
            self.bad_lines = {}


def _loader_for(text: str, pure: bool) -> _Loader | _FastLoader:
    """libyaml's composer when it can be used safely, else the bounded composer.

    libyaml's composer builds the node graph in C, out of reach of the bounded event
    stream, and recurses in C for each level of nesting. So the text is parsed once by
    libyaml for its events alone, checked against every bound (:func:`~.bounds.within_bounds`:
    nesting depth and the expanded size of aliases), and only text that passes is composed
    by libyaml; anything a bound would refuse takes the bounded composer, which turns each
    refused value into a :class:`Refused` at its line. Text libyaml cannot parse (a syntax
    error, or block nesting past libyaml's own limit of 1000 levels) is read by the
    pure-Python parser, so errors are worded as ever and deep nesting is still a located
    refusal. Both keep duplicate-key refusal and line numbers: construction is the same.
    """
    if pure or not WITH_LIBYAML:
        return _Loader(text, pure=True)
    scan = yaml.CBaseLoader(text)
    try:
        safe = within_bounds(_events(scan))
    except yaml.YAMLError:
        return _Loader(text, pure=True)
    finally:
        scan.dispose()
    return _FastLoader(text) if safe else _Loader(text, pure=False)


def _construct_refused(loader: _Constructor, node: yaml.ScalarNode) -> Refused:
    return Refused(node.start_mark.line + 1, str(node.value))


def _construct_mapping(loader: _Constructor, node: yaml.MappingNode) -> LocatedDict:
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


def _construct_sequence(loader: _Constructor, node: yaml.SequenceNode) -> LocatedList:
    items = LocatedList(_value(loader, child) for child in node.value)
    items.line = node.start_mark.line + 1
    items.lines = [child.start_mark.line + 1 for child in node.value]
    return items


def _value(loader: _Constructor, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode) and loader.bad_lines:
        first, last = node.start_mark.line + 1, node.end_mark.line + 1
        for line in range(first, last + 1):
            if line in loader.bad_lines:
                return Refused(line, loader.bad_lines.pop(line))
    return loader.construct_object(node, deep=True)


_CONSTRUCTORS: dict[str, Any] = {
    REFUSED_TAG: _construct_refused,
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG: _construct_mapping,
    yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG: _construct_sequence,
}
for _tag, _build in _CONSTRUCTORS.items():
    for _loader in (_Loader, _FastLoader) if WITH_LIBYAML else (_Loader,):
        _loader.add_constructor(_tag, _build)


def load_yaml(
    path: Path,
    notes: list[Problem] | None = None,
    *,
    pure: bool = False,
    missing: Callable[[Path], str] | None = None,
) -> Any:
    """Load ``path``; raise :class:`ConfigError` (with a located problem) when it cannot be.

    Invalid text outside any value (in a comment) is added to ``notes`` when given;
    ``pure`` as for :func:`load_yaml_text`; ``missing`` says what to do when there is no such
    file (added to the message).
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        message = f"config file not found: {path}" + (f"; {missing(path)}" if missing else "")
        raise ConfigError(message, problems=[Problem.at(path, None, None, message)]) from None
    except OSError as exc:
        message = f"cannot read config file {path}: {exc.strerror or exc}"
        raise ConfigError(message, problems=[Problem.at(path, None, None, message)]) from None
    bad: dict[int, str] = {}
    text = _decode(data, bad)
    return load_yaml_text(text, path, bad, notes, pure=pure)


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
    return clean(text, bad)


def load_yaml_text(
    text: str,
    path: Path,
    bad: dict[int, str] | None = None,
    notes: list[Problem] | None = None,
    *,
    pure: bool = False,
) -> Any:
    """Parse ``text`` as if read from ``path`` (``bad``: lines of replaced characters).

    ``pure`` forces PyYAML's pure-Python parser; otherwise libyaml's is used where
    available. Either way the bounds hold and the values, lines and errors are the same.
    """
    if bad is None:
        bad = {}
        text = clean(text, bad)
    loader: _Loader | _FastLoader | None = None
    try:
        loader = _loader_for(text, pure)
        loader.file = str(path)
        loader.bad_lines = dict(bad)
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
        if loader is not None:
            loader.dispose()
