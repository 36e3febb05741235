"""Entries of ``cordis.yml``: parsing, layering patches and ``--set``, and flattening groups.

An entry is a plugin (``name``) or a group (``insert``: children sharing its switch). Each
key remembers the file and line it came from, so every problem can point at it — patches
included.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from .config_problems import Problem
from .source import LocatedDict, LocatedList

ENTRY_KEYS = ("id", "name", "enabled", "disabled", "config", "inject", "insert")
ENTRY_SETTINGS = ("name", "enabled", "disabled", "inject")


@dataclass(frozen=True, slots=True)
class Where:
    """A file and a line."""

    file: Path
    line: int | None


@dataclass(frozen=True, slots=True)
class Switch:
    """An entry's switch as written: ``enabled: value``, or ``disabled: value`` (negated).

    ``value`` is a bool, or a string read after ``${VAR}`` interpolation.
    """

    value: Any = True
    negated: bool = False

    @classmethod
    def of(cls, key: str, value: Any) -> Switch:
        """The switch written as ``key: value`` (``enabled`` or ``disabled``)."""
        return cls(value, negated=key == "disabled")

    @property
    def key(self) -> str:
        """The key it was written with."""
        return "disabled" if self.negated else "enabled"


@dataclass
class Entry:
    """One entry of the config, after patches; ``children`` is None unless it is a group."""

    id: str
    where: Where
    """The entry itself (its mapping)."""
    name: str | None = None
    enabled: Switch = field(default_factory=Switch)
    config: Any = None
    inject: Any = None
    children: list[Entry] | None = None
    keys: dict[str, Where] = field(default_factory=dict)
    """Where each key was (last) set."""
    errors: list[Problem] = field(default_factory=list)
    """Problems that stop this entry from loading (unknown keys, say)."""

    @property
    def is_group(self) -> bool:
        """True for a group (an entry with ``insert``)."""
        return self.children is not None

    def where_of(self, key: str) -> Where:
        """Where ``key`` was set, or the entry itself."""
        return self.keys.get(key, self.where)

    def walk(self) -> Iterator[Entry]:
        """This entry and its descendants, depth first."""
        yield self
        for child in self.children or ():
            yield from child.walk()


@dataclass(frozen=True, slots=True)
class FlatEntry:
    """An entry in load order, with its group's switch applied."""

    entry: Entry
    group: str | None
    group_enabled: bool


def parse_document(data: Any, file: Path, problems: list[Problem]) -> list[Entry]:
    """Read the entries of one file (``insert:`` mapping or a plain list)."""
    if data is None:
        return []
    if isinstance(data, LocatedList):
        items: Any = data
    elif isinstance(data, LocatedDict):
        for key in data:
            if key != "insert":
                problems.append(
                    Problem.at(
                        file,
                        data.line_of(key),
                        None,
                        f"unknown top-level key {key!r}; a config has only 'insert' "
                        "(or is a plain list of entries)",
                    )
                )
        items = data.get("insert", LocatedList())
    else:
        raise ConfigError(
            f"{file}: expected a mapping with 'insert' or a list of entries",
            problems=[
                Problem.at(file, 1, None, "expected a mapping with 'insert' or a list of entries")
            ],
        )
    seen: dict[str, Where] = {}
    return _parse_list(items, file, problems, seen, getattr(data, "line", 1))


def _parse_list(
    items: Any, file: Path, problems: list[Problem], seen: dict[str, Where], line: int
) -> list[Entry]:
    if not isinstance(items, list):
        problems.append(Problem.at(file, line, None, "'insert' must be a list of entries"))
        return []
    entries = []
    lines = getattr(items, "lines", [line] * len(items))
    for item, item_line in zip(items, lines, strict=True):
        entry = _parse_entry(item, file, item_line, problems, seen)
        if entry is not None:
            entries.append(entry)
    return entries


def _parse_entry(
    item: Any, file: Path, line: int, problems: list[Problem], seen: dict[str, Where]
) -> Entry | None:
    if not isinstance(item, LocatedDict):
        problems.append(
            Problem.at(
                file, line, None, f"an entry must be a mapping with id and name, got {item!r}"
            )
        )
        return None
    entry_id = item.get("id")
    if not isinstance(entry_id, str) or not entry_id:
        message = "an entry needs an 'id' (a non-empty string)"
        if "id" in item:
            message = (
                f"'id' must be a non-empty string, got {entry_id!r}; quote it in the YAML "
                "(unquoted yes/no/on/off and numbers are not strings there)"
            )
        problems.append(Problem.at(file, item.line_of("id"), None, message))
        return None
    if entry_id in seen:
        first = seen[entry_id]
        problems.append(
            Problem.at(
                file,
                item.line_of("id"),
                entry_id,
                f"duplicate id {entry_id!r} (first declared at {first.file}:{first.line}); "
                "ids must be unique",
            )
        )
        return None
    seen[entry_id] = Where(file, item.line_of("id"))
    entry = Entry(id=entry_id, where=Where(file, item.line))
    entry.keys = {key: Where(file, item.line_of(key)) for key in item}
    for key in item:
        if key not in ENTRY_KEYS:
            entry.errors.append(
                Problem.at(
                    file,
                    item.line_of(key),
                    entry_id,
                    f"unknown key {key!r}{_did_you_mean(key)}; an entry takes "
                    f"{', '.join(ENTRY_KEYS)}",
                )
            )
    _assign(entry, item, file)
    if "insert" in item:
        entry.children = _parse_list(item["insert"], file, problems, seen, item.line_of("insert"))
    return entry


def _did_you_mean(key: Any) -> str:
    import difflib  # only for a misspelt key: not loaded at start-up

    close = difflib.get_close_matches(str(key), ENTRY_KEYS, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _assign(entry: Entry, item: dict[str, Any], file: Path) -> None:
    """Copy the settings of ``item`` onto ``entry``, checking their shapes."""
    where = entry.where_of
    if "name" in item:
        if not isinstance(item["name"], str) or not item["name"]:
            entry.errors.append(
                Problem.at(file, where("name").line, entry.id, "'name' must be a non-empty string")
            )
        else:
            entry.name = item["name"]
    if "enabled" in item and "disabled" in item:
        entry.errors.append(
            Problem.at(
                file, where("disabled").line, entry.id, "use 'enabled' or 'disabled', not both"
            )
        )
    for key in ("enabled", "disabled"):
        if key in item:
            entry.enabled = Switch.of(key, item[key])
    if "config" in item:
        entry.config = item["config"]
    if "inject" in item:
        inject = item["inject"]
        if not isinstance(inject, list | dict):
            entry.errors.append(
                Problem.at(
                    file,
                    where("inject").line,
                    entry.id,
                    "'inject' must be a list of service names or a mapping",
                )
            )
        else:
            entry.inject = inject


def check_shapes(entries: list[Entry]) -> None:
    """After patches: a plugin needs a name; a group has no name or config."""
    for top in entries:
        for entry in top.walk():
            if entry.is_group:
                for key in ("name", "config"):
                    if key in entry.keys:
                        entry.errors.append(
                            Problem.at(
                                entry.where_of(key).file,
                                entry.where_of(key).line,
                                entry.id,
                                f"a group (an entry with 'insert') takes no {key!r}",
                            )
                        )
            elif entry.name is None and "name" not in entry.keys:  # an invalid one is reported
                entry.errors.append(
                    Problem.at(
                        entry.where.file,
                        entry.where.line,
                        entry.id,
                        "an entry needs a 'name' (a path, harness:<builtin>, or a module)",
                    )
                )


def apply_patch(base: list[Entry], patch: list[Entry], fatal: list[Problem]) -> None:
    """Layer ``patch`` onto ``base``: known ids are overridden, new named ids appended.

    An unknown id without a ``name`` (and not a group) goes to ``fatal``.
    """
    index = {entry.id: entry for top in base for entry in top.walk()}
    _patch_into(base, patch, index, fatal)


def _patch_into(
    target: list[Entry],
    patch: list[Entry],
    index: dict[str, Entry],
    fatal: list[Problem],
) -> None:
    for entry in patch:
        known = index.get(entry.id)
        if known is None:
            if entry.name is None and not entry.is_group:
                fatal.append(
                    Problem.at(
                        entry.where.file,
                        entry.where.line,
                        entry.id,
                        f"patch overrides unknown id {entry.id!r} and gives no 'name' to add it; "
                        "check the id, or add a name",
                    )
                )
                continue
            target.append(entry)
            for added in entry.walk():
                index[added.id] = added
            continue
        known.errors.extend(entry.errors)
        for key in ("name", "enabled", "config", "inject"):
            source = "disabled" if key == "enabled" and "disabled" in entry.keys else key
            if source in entry.keys:
                setattr(known, key, getattr(entry, key))
                known.keys[source] = entry.keys[source]
                if key == "enabled":
                    known.keys.pop("enabled" if source == "disabled" else "disabled", None)
        if entry.children is not None:
            if known.children is None:
                known.children = []
            _patch_into(known.children, entry.children, index, fatal)


def apply_set(entries: list[Entry], override: str, config_file: Path) -> None:
    """Apply one ``--set ID.KEY[.SUBKEY]=VALUE``; raise ConfigError when it cannot be."""
    target, sep, raw = override.partition("=")
    parts = target.split(".")
    if not sep or len(parts) < 2 or not all(parts):
        raise ConfigError(
            f"--set {override!r}: expected ID.KEY=VALUE, such as echo.enabled=false or "
            "files.root=/tmp/work"
        )
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    entry_id, *path = parts
    entry = next((e for top in entries for e in top.walk() if e.id == entry_id), None)
    if entry is None:
        raise ConfigError(
            f"--set {override!r}: no entry has id {entry_id!r}",
            problems=[
                Problem.at(config_file, None, entry_id, f"--set names unknown id {entry_id!r}")
            ],
        )
    where = Where(Path("<--set>"), None)
    if len(path) == 1 and path[0] in ENTRY_SETTINGS:
        key = path[0]
        if key in ("enabled", "disabled"):
            entry.enabled = Switch.of(key, value)
            entry.keys.pop("disabled" if key == "enabled" else "enabled", None)
        else:
            setattr(entry, key, value)
        entry.keys[key] = where
        return
    if path[0] == "config":
        path = path[1:]
    if not path:
        entry.config = value
        return
    config = entry.config if isinstance(entry.config, dict) else {}
    entry.config = config = copy.copy(config)
    for key in path[:-1]:
        inner = config.get(key)
        config[key] = inner = copy.copy(inner) if isinstance(inner, dict) else {}
        config = inner
    config[path[-1]] = value


def flatten(entries: list[Entry], is_on: Callable[[Entry], bool]) -> list[FlatEntry]:
    """Entries in load order; a child's group switch is its enclosing groups' switches."""
    out: list[FlatEntry] = []

    def visit(items: list[Entry], group: str | None, group_enabled: bool) -> None:
        for entry in items:
            out.append(FlatEntry(entry, group, group_enabled))
            if entry.children is not None:
                visit(entry.children, entry.id, group_enabled and is_on(entry))

    visit(entries, None, True)
    return out
