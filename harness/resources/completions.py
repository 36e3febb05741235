"""Argument completion: what a resource template or a prompt suggests for an argument.

``complete={"arg": fn}`` on a template (its variables) or a prompt (its arguments): ``fn(prefix,
args)`` gets what the person has typed of ``arg`` so far and the other arguments already
filled (a dict of strings), sync or async, and returns candidates, best first: strings, or
any iterable of them. MCP's ``completion/complete`` answers with at most :data:`MAX_VALUES`
of them, and the total.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..errors import ContentError, DefinitionError
from .invoke import invoke

Completer = Callable[[str, dict[str, str]], Any]
MAX_VALUES = 100
"""How many candidates one answer carries (MCP's limit)."""


@dataclass(frozen=True, slots=True)
class Suggestions:
    """The candidates for one argument: the first :data:`MAX_VALUES`, and how many in all."""

    values: tuple[str, ...]
    total: int

    @property
    def has_more(self) -> bool:
        """True when candidates were left out."""
        return self.total > len(self.values)


def check_completers(complete: Any, names: Iterable[str], where: str) -> Mapping[str, Completer]:
    """``complete`` as a read-only mapping; raise DefinitionError naming ``where`` unless it
    maps names among ``names`` to functions."""
    if complete is None:
        return MappingProxyType({})
    if not isinstance(complete, Mapping):
        raise DefinitionError(f"{where}: complete must be a mapping of argument name to function")
    known = list(names)
    for name, function in complete.items():
        if name not in known:
            offered = ", ".join(known) or "none"
            raise DefinitionError(
                f"{where}: complete names {name!r}, which it does not take (it takes: {offered})"
            )
        if not callable(function):
            raise DefinitionError(f"{where}: complete[{name!r}] must be a function(prefix, args)")
    return MappingProxyType(dict(complete))


async def suggest(
    completer: Completer | None, prefix: str, args: Mapping[str, str], where: str
) -> Suggestions:
    """Run ``completer`` (none: no candidates); raise ContentError when it fails or returns
    something other than strings."""
    if completer is None:
        return Suggestions((), 0)
    found = await invoke(completer, f"the completion of {where}", prefix, dict(args))
    if isinstance(found, str) or not isinstance(found, Iterable):
        raise ContentError(
            f"the completion of {where} returned {type(found).__name__}; expected a list of strings"
        )
    values = list(found)
    strays = [value for value in values if not isinstance(value, str)]
    if strays:
        raise ContentError(
            f"the completion of {where} returned {strays[0]!r} among its candidates; "
            "candidates are strings"
        )
    return Suggestions(tuple(values[:MAX_VALUES]), len(values))
