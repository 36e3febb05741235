"""Finding tools: the tools service's search index, kept in step with the registry, and
who may see which tool.

The index (:class:`harness.search.SearchIndex`) gets each tool's document as it is
registered or reloaded and forgets it as it is removed; the ranker is rebuilt at the next
search (:mod:`harness.search.index`). A search sees only what its caller may use:

- a tool a plugin hides is never a hit: the bundled policy hides the tools it ``deny``\\ s
  (a tool it ``ask``\\ s about is found: it may run once someone approves);
- while a policy is not loaded (its own reload, a failed apply), everything it gated is
  left out, as its calls are refused (the closed gates, :mod:`.policy_gates`);
- ``tools``: globs over names (the agent passes its ``tools`` globs);
- ``search_tools`` and ``call_tool``, the search tools themselves, are never hits.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ..errors import ToolArgsError
from ..search import Document, Hit, SearchConfig, SearchIndex, make_ranker
from ..search.index import Ranked, pick
from .definition import ToolDefinition, define_tool

if TYPE_CHECKING:
    from .policy_gates import Gates

SEARCH_TOOL = "search_tools"
CALL_TOOL = "call_tool"
MAX_LIMIT = 50
Hidden = Callable[[str], bool]
"""Tool name → whether search must leave it out."""


class Finder:
    """One tools service's search (see the module)."""

    def __init__(
        self, config: Callable[[], SearchConfig], gates: Gates, cache_dir: Path | None
    ) -> None:
        self._config = config
        self._gates = gates
        self.index = SearchIndex(lambda: make_ranker(config().ranker, cache_dir))
        self.hidden: list[Hidden] = []
        self._lock = anyio.Lock()

    def put(self, definition: ToolDefinition) -> None:
        if definition.name not in (SEARCH_TOOL, CALL_TOOL):
            self.index.put(
                Document.of(definition.name, definition.description, definition.parameters)
            )

    def remove(self, name: str) -> None:
        self.index.remove(name)

    def hide(self, hidden: Hidden) -> Callable[[], None]:
        """Leave the tools ``hidden`` names out of every search; return the undo."""
        self.hidden.append(hidden)
        return lambda: self.hidden.remove(hidden) if hidden in self.hidden else None

    def is_visible(self, name: str, tools: Sequence[str] | None = None) -> bool:
        """Whether a search by a caller limited to ``tools`` (globs) may show ``name``."""
        return self._visible(tools)(name)

    def _visible(self, tools: Sequence[str] | None) -> Callable[[str], bool]:
        """``is_visible`` for one search: the globs compiled once into one pattern."""
        pattern = None
        if tools is not None:
            pattern = re.compile("|".join(fnmatch.translate(glob) for glob in tools) or "(?!)")

        def visible(name: str) -> bool:
            if pattern is not None and pattern.match(name) is None:
                return False
            if any(hidden(name) for hidden in self.hidden):
                return False
            return not (self._gates.closed and self._gates.refusal(name) is not None)

        return visible

    def search(self, query: str, limit: int = 10, tools: Sequence[str] | None = None) -> list[Hit]:
        """The hits of ``query`` for a caller limited to ``tools``, ranked on this thread."""
        check(query, limit)
        return self.index.search(query, limit, self._visible(tools))

    async def search_async(
        self, query: str, limit: int = 10, tools: Sequence[str] | None = None
    ) -> list[Hit]:
        """:meth:`search`, with a ranker that runs a model building and scoring on a worker
        thread (one search at a time), so the event loop never waits on the model."""
        if self._config().ranker == "lexical":
            return self.search(query, limit, tools)
        check(query, limit)
        async with self._lock:
            documents = self.index.take()

            def work() -> Ranked:
                if documents is not None:
                    self.index.install(documents)
                return self.index.rank(query)

            ranked = await anyio.to_thread.run_sync(work)
        return pick(ranked, limit, self._visible(tools))

    def search_tool(self) -> ToolDefinition:
        """The registry tool ``search_tools {query, limit}`` over this finder."""

        async def execute(args: dict[str, Any]) -> dict[str, Any]:
            try:
                hits = await self.search_async(args["query"], args.get("limit", 10))
            except ValueError as exc:
                raise ToolArgsError(str(exc)) from None
            return {"tools": [hit.to_dict() for hit in hits]}

        return define_tool(
            name=SEARCH_TOOL,
            description=(
                "Find tools by what they do: give a few words (a task, an object, an action) "
                "and get the best matching tools, best first, with their descriptions. The "
                "tools found can be called from the next step on. Search again with other "
                "words when none fits."
            ),
            parameters={
                "query": {
                    "type": "string",
                    "required": True,
                    "description": "What the tool should do, in a few words",
                },
                "limit": {
                    "type": "integer",
                    "default": 10,
                    "description": f"How many tools to return, 1 to {MAX_LIMIT}",
                },
            },
            output={
                "schema": {
                    "tools": {
                        "type": "array",
                        "required": True,
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string", "required": True},
                                "description": {"type": "string", "required": True},
                                "score": {"type": "number", "required": True},
                            },
                        },
                    }
                }
            },
            execute=execute,
            annotations={"read_only": True, "idempotent": True, "open_world": False},
        )


def check(query: Any, limit: Any) -> None:
    """Raise ``TypeError`` or ``ValueError`` for a query or limit no search takes."""
    if not isinstance(query, str):
        raise TypeError(f"the search query must be a string, got {type(query).__name__}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be a whole number from 1 to {MAX_LIMIT}, got {limit!r}")


CALL_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The tool's name, as search_tools gave it"},
        "args": {"type": "object", "description": "The tool's arguments"},
    },
    "required": ["name"],
    "additionalProperties": False,
}
CALL_TOOL_DESCRIPTION = (
    "Call a tool that search_tools found, by its name, with its arguments. The call runs "
    "as if the tool were called directly: the same checks, approvals and result."
)


def kept(names: Sequence[str], config: SearchConfig) -> list[str]:
    """The names among ``names`` that the ``keep`` globs of ``config`` keep, in order."""
    return [n for n in names if any(fnmatch.fnmatchcase(n, glob) for glob in config.keep)]
