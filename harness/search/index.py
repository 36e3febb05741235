"""The search index: the documents of the tools registered now, and a ranker over them.

``put`` and ``remove`` follow the registry (a tool registered, reloaded or removed) and only
mark the index changed; the next :meth:`SearchIndex.search` rebuilds the ranker once, over
every document, reusing what the ranker kept of unchanged ones. Registering a tool thus
costs a dictionary write, however many tools there are, and a burst of registrations (a
plugin loading, a gateway mounting a server) costs one rebuild.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .document import Document, Hit

if TYPE_CHECKING:
    from .ranker import Ranker


class SearchIndex:
    """Documents by tool name, ranked by the ranker ``make_ranker`` makes (built lazily:
    see the module)."""

    def __init__(self, make_ranker: Callable[[], Ranker]) -> None:
        self._make = make_ranker
        """Called at the first build: a ranker that needs a model loads it only then."""
        self._ranker: Ranker | None = None
        self._documents: dict[str, Document] = {}
        self._names: list[str] = []
        self._dirty = True

    def put(self, document: Document) -> None:
        """Add or replace the document of ``document.name``."""
        if self._documents.get(document.name) != document:
            self._documents[document.name] = document
            self._dirty = True

    def remove(self, name: str) -> None:
        """Forget the tool ``name`` (nothing when it is not indexed)."""
        if self._documents.pop(name, None) is not None:
            self._dirty = True

    def __len__(self) -> int:
        return len(self._documents)

    def __contains__(self, name: object) -> bool:
        return name in self._documents

    @property
    def ranker(self) -> Ranker:
        if self._ranker is None:
            self._ranker = self._make()
        return self._ranker

    def build(self) -> None:
        """Rebuild the ranker now if anything changed (search does this by itself)."""
        if self._dirty:
            ranker = self.ranker
            self._names = list(self._documents)
            ranker.build([self._documents[name] for name in self._names])
            self._dirty = False

    def search(
        self, query: str, limit: int = 10, allowed: Callable[[str], bool] | None = None
    ) -> list[Hit]:
        """The ``limit`` best matches of ``query`` among the tools ``allowed`` admits, best
        first; a tool that matches nothing (score 0 or less) is not a hit."""
        if limit < 1 or not query.strip():
            return []
        self.build()
        if not self._names:
            return []
        import numpy

        scores = self.ranker.scores(query)
        positive = numpy.flatnonzero(scores > 0)
        order = positive[numpy.argsort(-scores[positive], kind="stable")]
        hits: list[Hit] = []
        for position in order.tolist():
            name = self._names[position]
            if allowed is None or allowed(name):
                document = self._documents[name]
                hits.append(Hit(name, document.description, round(float(scores[position]), 4)))
                if len(hits) == limit:
                    break
        return hits
