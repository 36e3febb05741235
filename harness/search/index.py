"""The search index: the documents of the tools registered now, and a ranker over them.

``put`` and ``remove`` follow the registry (a tool registered, reloaded or removed) and only
mark the index changed; the next :meth:`SearchIndex.search` rebuilds the ranker once, over
every document, reusing what the ranker kept of unchanged ones. Registering a tool thus
costs a dictionary write, however many tools there are, and a burst of registrations (a
plugin loading, a gateway mounting a server) costs one rebuild. A ranker with a model
builds and scores on a worker thread (:meth:`SearchIndex.take`, ``install`` and ``rank``),
over a snapshot of the documents, so the event loop never waits on it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

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
        self._built: list[Document] = []
        """The documents of the last build, in the ranker's order."""
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

    def take(self) -> list[Document] | None:
        """The documents to build over when something changed since the last take, else
        None (a snapshot: :meth:`install` may then run on a worker thread)."""
        if not self._dirty:
            return None
        self._dirty = False
        return list(self._documents.values())

    def install(self, documents: list[Document]) -> None:
        """Build the ranker over ``documents`` (from :meth:`take`)."""
        self.ranker.build(documents)
        self._built = documents

    def build(self) -> None:
        """Rebuild the ranker now if anything changed (search does this by itself)."""
        documents = self.take()
        if documents is not None:
            self.install(documents)

    def rank(self, query: str) -> Ranked:
        """Every document that matches ``query`` (score above 0), best first, as last built
        (a worker thread may run this, with :meth:`install`, for a ranker with a model)."""
        built = self._built
        if not built or not query.strip():
            return Ranked([], [], [])
        import numpy

        scores = self.ranker.scores(query)
        positive = numpy.flatnonzero(scores > 0)
        order = positive[numpy.argsort(-scores[positive], kind="stable")]
        return Ranked(built, order.tolist(), scores)

    def search(
        self, query: str, limit: int = 10, allowed: Callable[[str], bool] | None = None
    ) -> list[Hit]:
        """The ``limit`` best matches of ``query`` among the tools ``allowed`` admits, best
        first; a tool that matches nothing (score 0 or less) is not a hit."""
        if limit < 1:
            return []
        self.build()
        return pick(self.rank(query), limit, allowed)


class Ranked(NamedTuple):
    """The matches of one query: positions in ``documents``, best first, and every score."""

    documents: list[Document]
    order: list[int]
    scores: Sequence[float] | Any


def pick(ranked: Ranked, limit: int, allowed: Callable[[str], bool] | None) -> list[Hit]:
    """The first ``limit`` matches of ``ranked`` that ``allowed`` admits, as hits (only
    those are looked at: a search that matches thousands stays cheap)."""
    hits: list[Hit] = []
    documents, scores = ranked.documents, ranked.scores
    for position in ranked.order:
        document = documents[position]
        if allowed is None or allowed(document.name):
            score = round(float(scores[position]), 4)
            hits.append(Hit(document.name, document.description, score))
            if len(hits) == limit:
                break
    return hits
