"""``${VAR}`` interpolation in config values and ``enabled``; ``.env`` beside the config.

``${VAR}`` and ``${VAR:-default}`` are replaced inside strings; ``$${`` is a literal ``${``.
An unset variable without a default is an error naming it. Nothing is ever evaluated.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .source import LocatedDict, LocatedList

_PATTERN = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


class MissingVariable(Exception):
    """Raised when a ``${VAR}`` without a default names an unset variable."""

    def __init__(self, name: str, line: int | None) -> None:
        super().__init__(name)
        self.name = name
        self.line = line


class Environment:
    """The real environment, falling back to a ``.env`` file beside the config."""

    def __init__(self, dotenv: Path | None = None) -> None:
        self.file: Path | None = None
        values: dict[str, str | None] = {}
        if dotenv is not None and dotenv.is_file():
            from dotenv import dotenv_values  # only when there is a .env to read

            self.file = dotenv
            values = dotenv_values(dotenv)
        self._dotenv = {key: value for key, value in values.items() if value is not None}

    def get(self, name: str) -> str | None:
        """The variable's value: the real environment wins over ``.env``."""
        value = os.environ.get(name)
        return value if value is not None else self._dotenv.get(name)

    def interpolate(self, value: Any, line: int | None = None) -> Any:
        """Interpolate every string inside ``value``; raise MissingVariable with its line."""
        if isinstance(value, str):
            return self._string(value, line)
        if value is None or isinstance(value, bool | int | float):
            return value  # the usual scalars, without the Mapping check below
        if isinstance(value, Mapping):
            lines = value.lines if isinstance(value, LocatedDict) else {}
            return {
                key: self.interpolate(item, lines.get(key, line)) for key, item in value.items()
            }
        if isinstance(value, list):
            lines_list = value.lines if isinstance(value, LocatedList) else [line] * len(value)
            return [self.interpolate(item, at) for item, at in zip(value, lines_list, strict=True)]
        return value

    def _string(self, text: str, line: int | None) -> str:
        if "$" not in text:
            return text

        def replace(match: re.Match[str]) -> str:
            if match.group(0) == "$${":
                return "${"
            name, default = match.group(1), match.group(2)
            found = self.get(name)
            if found is not None and (found != "" or default is None):
                return found
            if default is not None:
                return default
            raise MissingVariable(name, line)

        return _PATTERN.sub(replace, text)


def parse_switch(value: Any, key: str = "enabled") -> bool:
    """Read a switch (``key``): a bool, or true/false/yes/no/on/off/1/0 in any case."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    raise ValueError(f"{key!r} must be true or false (or yes/no/on/off/1/0), got {value!r}")
