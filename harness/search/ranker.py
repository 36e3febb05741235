"""The ranker interface, and the rankers by name.

A ranker is built over the documents of one registry state and scores a query against each
of them. The index (:mod:`.index`) rebuilds it after a change, at the next search, so a
ranker keeps whatever it can from one build to the next (the embedding ranker keeps each
document's vector, by its text).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from ..errors import HarnessError
from .document import Document

if TYPE_CHECKING:
    import numpy
    import numpy.typing

    from .embedding import Encoder

    Scores = numpy.typing.NDArray[numpy.float32]
    """One score per document."""

RankerName = Literal["lexical", "embedding", "hybrid"]
RANKERS: tuple[RankerName, ...] = ("lexical", "embedding", "hybrid")


class SearchUnavailable(HarnessError):
    """Raised when a ranker needs what is not installed (the ``search`` extra's model)."""


class Ranker(Protocol):
    """Scores a query against the documents it was last built over."""

    def build(self, documents: Sequence[Document]) -> None:
        """Index ``documents`` (replacing the previous build)."""

    def scores(self, query: str) -> Scores:
        """One score per document of the last build, in its order; higher is better, and
        0 or less is no match."""


def make_ranker(name: RankerName, cache_dir: Path | None = None) -> Ranker:
    """The ranker called ``name``; raises :class:`SearchUnavailable` when it needs the
    ``search`` extra and that is not installed."""
    if name == "lexical":
        from .lexical import LexicalRanker

        return LexicalRanker()
    if name not in ("embedding", "hybrid"):
        raise ValueError(f"unknown ranker {name!r}; use one of {', '.join(RANKERS)}")
    encoder = load_encoder(name, cache_dir)
    from .fusion import EmbeddingRanker, HybridRanker

    if name == "embedding":
        return EmbeddingRanker(encoder)
    from .lexical import LexicalRanker

    return HybridRanker(LexicalRanker(), EmbeddingRanker(encoder))


def load_encoder(name: str, cache_dir: Path | None) -> Encoder:
    """The local sentence model of the ``search`` extra, or :class:`SearchUnavailable`."""
    from .embedding import Encoder

    why = Encoder.unavailable_reason()
    if why is not None:
        raise SearchUnavailable(f"the {name!r} ranker cannot run: {why}; or use ranker: lexical")
    return Encoder(cache_dir)
