"""Reading YAML with line numbers kept, for messages that point at the right line.

Mappings load as :class:`LocatedDict` (``line`` of the mapping, ``lines[key]`` of each key)
and sequences as :class:`LocatedList`; scalars load as usual (safe loading only). A
duplicate key is an error, not a silent overwrite.
"""

from __future__ import annotations

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


try:  # libyaml's parser, several times faster; nodes carry the same line marks
    from yaml import CSafeLoader as _Parser
except ImportError:  # PyYAML built without libyaml
    _Parser = yaml.SafeLoader  # type: ignore[assignment, misc]


class _Loader(_Parser):
    file: str = "<string>"


class _PureLoader(yaml.SafeLoader):
    """The pure-Python loader, the same constructors: where libyaml is missing, and in tests."""

    file: str = "<string>"


def _construct_mapping(loader: Any, node: yaml.MappingNode) -> LocatedDict:
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
        mapping[key] = loader.construct_object(value_node, deep=True)
        mapping.lines[key] = line
    return mapping


def _construct_sequence(loader: Any, node: yaml.SequenceNode) -> LocatedList:
    items = LocatedList(loader.construct_object(child, deep=True) for child in node.value)
    items.line = node.start_mark.line + 1
    items.lines = [child.start_mark.line + 1 for child in node.value]
    return items


for _kind in (_Loader, _PureLoader):
    _kind.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    _kind.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def load_yaml(path: Path) -> Any:
    """Load ``path``; raise :class:`ConfigError` (with a located problem) when it cannot be."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        message = f"config file not found: {path}"
        raise ConfigError(message, problems=[Problem.at(path, None, None, message)]) from None
    except (OSError, UnicodeDecodeError) as exc:
        message = f"cannot read config file {path}: {exc}"
        raise ConfigError(message, problems=[Problem.at(path, None, None, message)]) from None
    return load_yaml_text(text, path)


def load_yaml_text(text: str, path: Path, *, pure: bool = False) -> Any:
    """Parse ``text`` as if read from ``path`` (with libyaml unless ``pure``)."""
    loader = _PureLoader(text) if pure else _Loader(text)
    loader.file = str(path)
    try:
        return loader.get_single_data()
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
