"""The config of a ``harness:code`` entry (DESIGN §14)."""

from __future__ import annotations

import re
from typing import Any

import pydantic

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "kib": 1 << 10,
    "m": 1000**2,
    "mb": 1000**2,
    "mib": 1 << 20,
    "g": 1000**3,
    "gb": 1000**3,
    "gib": 1 << 30,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(value: Any, name: str = "max_memory", least: int = 1 << 20) -> int:
    """Bytes from ``67108864``, ``"64MiB"``, ``"64 MB"`` or ``"512k"``; ValueError otherwise
    (also when under ``least``, for the key ``name``)."""
    if isinstance(value, bool):
        raise ValueError("expected a size such as 64MiB, got a boolean")
    if isinstance(value, int):
        size = value
    elif isinstance(value, str) and (match := _SIZE.match(value)):
        unit = _UNITS.get(match.group(2).lower())
        if unit is None:
            raise ValueError(
                f"unknown size unit {match.group(2)!r} in {value!r}; use B, KiB, MiB, GiB "
                "(or KB, MB, GB)"
            )
        size = int(float(match.group(1)) * unit)
    else:
        raise ValueError(f"expected a size such as 64MiB or a number of bytes, got {value!r}")
    if size < least:
        raise ValueError(f"{name} must be at least {show_size(least)}, got {value!r}")
    return size


def show_size(size: int) -> str:
    """``64MiB`` for 67108864: how limits are named in messages."""
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size % factor == 0:
            return f"{size // factor}{unit}"
    return f"{size} bytes"


class CodeConfig(pydantic.BaseModel):
    """Config of a ``harness:code`` entry: which tools a program may call, and its bounds."""

    model_config = pydantic.ConfigDict(extra="forbid")

    tools: list[str] = ["*"]
    """Globs over registry names: the tools a program may call (``run_code`` never)."""
    timeout: float = pydantic.Field(60.0, gt=0, allow_inf_nan=False)
    """Seconds for the whole program, wall clock, its tool calls included."""
    max_calls: int = pydantic.Field(100, ge=1, le=100_000)
    """Tool calls per program; the next one stops the program."""
    max_memory: int = 64 << 20
    """The sandbox heap, in bytes (``64MiB``, ``512MB`` and plain numbers are accepted)."""
    max_output: int = pydantic.Field(20_000, ge=1)
    """Characters returned: ``print()`` output, then the value's JSON text; the rest is cut."""
    max_parallel: int | None = pydantic.Field(None, ge=1)
    """Inner calls in flight at once (``asyncio.gather``); default: the tools service's."""
    max_recursion: int = pydantic.Field(200, ge=10, le=10_000)
    """Python frames deep a program may recurse."""
    workers: int = pydantic.Field(2, ge=1, le=64)
    """Sandbox worker processes: programs running at once (more wait for a worker); a
    program waiting for an approval holds none. One more process type-checks the programs
    (:mod:`.checker`)."""

    max_snapshot: int = 8 << 20
    """The longest snapshot of a program waiting for an approval that is kept (in the host,
    and in the store for a keyed program); a longer one stops the program."""
    max_paused: int = pydantic.Field(100, ge=1, le=1_000_000)
    """Programs of this entry waiting for an approval at once (parked, holding no worker);
    one more is stopped."""
    pause_timeout: float = pydantic.Field(86400.0, gt=0, allow_inf_nan=False)
    """Seconds one wait of a program for an approval may last, across restarts (each
    approval's own ``approval_timeout`` usually ends it first); then the program stops."""

    @pydantic.field_validator("max_memory", mode="before")
    @classmethod
    def _size(cls, value: Any) -> int:
        return parse_size(value)

    @pydantic.field_validator("max_snapshot", mode="before")
    @classmethod
    def _snapshot_size(cls, value: Any) -> int:
        return parse_size(value, "max_snapshot", 1 << 10)
