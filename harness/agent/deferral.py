"""The tools of one model request when the agent defers (docs/search.md).

Without deferral a request carries every visible tool. With it, a request carries the tools
``search.keep`` keeps and the tools the session loaded so far, in the order they were found,
so the list only grows at its end and stays byte-stable from step to step; and the means to
find the rest: harness's ``search_tools``, or, when the provider's API searches tools itself
and ``search.native`` is ``auto``, every other visible tool sent deferred for the API to
search (Anthropic's tool search tool). Either way only visible tools go: one the policy
denies is never sent, not even deferred.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

from ..tools.finding import SEARCH_TOOL

Schemas = dict[str, dict[str, Any]]


class Search(Protocol):
    """What deferral reads of the tools service's ``search`` config."""

    keep: list[str]
    native: Any

    def defers(self, visible: int) -> bool: ...


class RequestTools(NamedTuple):
    """Name → schema of the tools a request sends, and of those it sends deferred."""

    sent: Schemas
    deferred: Schemas

    @property
    def callable(self) -> set[str]:
        """The tools the model may call in its answer (a deferred one once its API found
        it; the API refuses a call of one it did not)."""
        return {*self.sent, *self.deferred}


def request_tools(
    visible: Schemas,
    search: Search,
    loaded: Sequence[str],
    native: bool,
    findable: Callable[[str], bool],
) -> RequestTools:
    """The tools of a request among ``visible`` (the agent's), ``loaded`` found so far,
    ``native`` when the provider's API can search deferred tools; only the tools
    ``findable`` admits (those a search may find: none the policy denies) go deferred."""
    others = len(visible) - (SEARCH_TOOL in visible)
    if SEARCH_TOOL not in visible or not search.defers(others):
        return RequestTools(visible, {})
    native = native and search.native == "auto"
    names = [
        n
        for n in visible
        if n != SEARCH_TOOL and any(fnmatch.fnmatchcase(n, glob) for glob in search.keep)
    ]
    if not native:
        names.insert(0, SEARCH_TOOL)
    shown = set(names)
    names.extend(n for n in loaded if n in visible and n not in shown)
    sent = {name: visible[name] for name in dict.fromkeys(names)}
    if not native:
        return RequestTools(sent, {})
    deferred = {
        n: s for n, s in visible.items() if n not in sent and n != SEARCH_TOOL and findable(n)
    }
    return RequestTools(sent, deferred)
