"""Reading a whole config: the file, its patches, ``--set`` overrides, ``.env``, into plans.

:func:`read_config` raises :class:`~harness.errors.ConfigError` when the config cannot be
read at all (a missing file, a YAML syntax error, a patch for an unknown id), unless
``lenient`` (``harness check``), which reports a broken patch or override as a problem and
goes on without it. Everything else is a located :class:`Problem` attached to the entry it
concerns, so one broken entry never stops the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .config_problems import Problem, missing_config
from .entries import Entry, apply_patch, apply_set, check_shapes, flatten, parse_document
from .env import Environment, MissingVariable, parse_switch
from .source import Refused, load_yaml


@dataclass
class Plan:
    """What should run for one entry, after patches, overrides and the environment."""

    entry: Entry
    group: str | None
    enabled: bool
    """The entry's own switch and its groups'."""
    config: Any = None
    """Interpolated."""
    errors: list[Problem] = field(default_factory=list)
    """Problems that keep the entry from loading."""

    @property
    def id(self) -> str:
        """The entry id."""
        return self.entry.id

    @property
    def name(self) -> str | None:
        """The name as written."""
        return self.entry.name

    @property
    def base(self) -> Path:
        """The folder relative names resolve against: that of the file declaring the name."""
        return self.entry.where_of("name").file.parent

    @property
    def key(self) -> tuple[Any, ...]:
        """What identifies the code to load (a change means a new import)."""
        return (self.name, str(self.base))


@dataclass
class LoadedConfig:
    """A config read and layered, with the problems found on the way."""

    file: Path
    entries: list[Entry]
    plans: list[Plan]
    problems: list[Problem]
    env: Environment
    files: list[Path]
    """The config, its patches and the ``.env`` it read (what to watch)."""


def read_config(
    file: Path,
    patches: Sequence[Path] = (),
    overrides: Sequence[str] = (),
    lenient: bool = False,
) -> LoadedConfig:
    """Read ``file`` with ``patches`` and ``overrides``; see the module docstring."""
    file = file.absolute()
    problems: list[Problem] = []
    document = load_yaml(file, problems, missing=missing_config)
    entries = parse_document(document, file, problems)
    files = [file]
    for patch in patches:
        patch = patch.absolute()
        files.append(patch)
        try:
            patch_entries = parse_document(load_yaml(patch, problems), patch, problems)
        except ConfigError as exc:
            if not lenient:
                raise
            problems.extend(exc.problems)
            continue
        fatal: list[Problem] = []
        apply_patch(entries, patch_entries, fatal)
        if fatal:
            if not lenient:
                raise ConfigError(str(fatal[0]), problems=fatal)
            problems.extend(fatal)
    for override in overrides:
        try:
            apply_set(entries, override, file)
        except ConfigError as exc:
            if not lenient:
                raise
            problems.extend(exc.problems or [Problem.at(file, None, None, str(exc))])
    _refusals(entries)
    check_shapes(entries)
    env = Environment(file.parent / ".env")
    if env.file is not None:
        files.append(env.file)
    plans = make_plans(entries, env)
    return LoadedConfig(file, entries, plans, problems, env, files)


def _refusals(entries: list[Entry]) -> None:
    """Values the YAML reader refused (see :class:`Refused`) become their entry's problems."""
    for entry in entries:
        for key in ("name", "config", "inject"):
            found: list[Refused] = []
            stack: list[Any] = [getattr(entry, key)]
            while stack:
                item = stack.pop()
                if isinstance(item, Refused):
                    found.append(item)
                elif isinstance(item, dict):
                    stack.extend(item.values())
                elif isinstance(item, list | tuple):
                    stack.extend(item)
            where = entry.where_of(key)
            first: dict[str, int] = {}  # one problem per reason, at its first line
            for refused in sorted(found, key=lambda item: item.line):
                first.setdefault(refused.message, refused.line)
            for message, line in first.items():
                entry.errors.append(Problem.at(where.file, line, entry.id, message))
            if found:
                setattr(entry, key, None)
        if entry.children:
            _refusals(entry.children)


def make_plans(entries: list[Entry], env: Environment) -> list[Plan]:
    """Resolve each entry's switch and config against the environment."""
    switches: dict[str, bool] = {}
    errors: dict[str, list[Problem]] = {}

    def switch(entry: Entry) -> bool:
        if entry.id not in switches:
            switches[entry.id] = _switch(entry, env, errors.setdefault(entry.id, []))
        return switches[entry.id]

    plans = []
    for flat in flatten(entries, switch):
        entry = flat.entry
        own = switch(entry)
        plan = Plan(entry, flat.group, flat.group_enabled and own)
        plan.errors = [*entry.errors, *errors.get(entry.id, [])]
        if not entry.is_group:
            where = entry.where_of("config")
            try:
                plan.config = env.interpolate(entry.config, where.line)
            except MissingVariable as exc:
                plan.errors.append(
                    Problem.at(
                        where.file,
                        exc.line,
                        entry.id,
                        f"environment variable {exc.name!r} is not set; set it, add it to "
                        f".env, or give a default with ${{{exc.name}:-value}}",
                    )
                )
        plans.append(plan)
    return plans


def _switch(entry: Entry, env: Environment, errors: list[Problem]) -> bool:
    switch = entry.enabled
    key = switch.key
    where = entry.where_of(key)
    try:
        on = parse_switch(env.interpolate(switch.value, where.line), key)
    except MissingVariable as exc:
        errors.append(
            Problem.at(
                where.file,
                exc.line,
                entry.id,
                f"environment variable {exc.name!r} in {key!r} is not set; give a default "
                f"with ${{{exc.name}:-true}}",
            )
        )
        return False
    except ValueError as exc:
        errors.append(Problem.at(where.file, where.line, entry.id, str(exc)))
        return False
    return on != switch.negated
