"""Names a plugin keeps for itself without registering tools under them.

Code mode keeps the names a program already has (``print``, ``Any``, ``call_tool``...): a
tool of such a name cannot be a function of a program. The tool still registers — it works
everywhere else, and programs reach it through ``call_tool`` — but the pair is a problem,
reported on whichever of the two entries comes later in the config (registration order
between plugins of one position), as a tool name two entries register is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..context import Context

Rank = Callable[["Context", int], tuple[int, int]]
"""(a plugin's context, a sequence number) → its place: config position, then that number."""


@dataclass(frozen=True, slots=True, eq=False)
class Reservation:
    """The names one plugin keeps: name → what taking it does (a sentence's tail)."""

    names: Mapping[str, str]
    owner: Context
    seq: int


@dataclass(frozen=True, slots=True)
class Clash:
    """A tool registered under a reserved name, told to the later of the two entries."""

    later: Context
    message: str


def clashes(
    reservations: list[Reservation],
    tools: Mapping[str, tuple[Context, int]],
    rank: Rank,
) -> list[Clash]:
    """Every tool (name → its plugin's context and sequence number) whose name a
    reservation of another plugin holds."""
    found = []
    for reservation in reservations:
        for name, note in reservation.names.items():
            held = tools.get(name)
            if held is None or _top(held[0]) is _top(reservation.owner):
                continue
            context, seq = held
            tool_later = rank(context, seq) > rank(reservation.owner, reservation.seq)
            later = context if tool_later else reservation.owner
            message = (
                f"tool {name!r} of {context.describe()} takes a name "
                f"{reservation.owner.describe()} keeps: {note}"
            )
            found.append(Clash(later, message))
    return found


def _top(context: Context) -> object:
    """The top-level plugin a context belongs to (its entry), or the context itself."""
    fiber, top = context.fiber, None
    while fiber is not None:
        top, fiber = fiber, fiber.parent.fiber
    return context if top is None else top
