"""The rankers of the ``search`` extra: a local sentence model alone, and fused with BM25.

``embedding`` scores a query by the cosine of its vector with each document's (the model
and its on-disk vector cache are :mod:`.embedding`'s); vectors of unchanged documents are
kept from one build to the next. ``hybrid`` fuses the lexical and the embedding ranking by
reciprocal rank (each document scores ``1 / (K + rank)`` in each ranking it appears in), so
neither scale dominates: a tool that both rankers place high comes first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .document import Document

if TYPE_CHECKING:
    from .embedding import Encoder
    from .ranker import Ranker, Scores

K = 10
"""The reciprocal-rank constant: 10 rather than the usual 60, by measurement on the BFCL
pool (bench/search_models.py: recall@10 0.955 at 10 against 0.939 at 60, one run)."""
DEPTH = 100
"""Each ranking contributes its best ``DEPTH`` documents."""


class EmbeddingRanker:
    """Cosine similarity of sentence vectors (the encoder's rows are L2-normalised)."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self._vectors: dict[str, Any] = {}
        self._matrix: Any = None

    def build(self, documents: Sequence[Document]) -> None:
        import numpy

        texts = [doc.text for doc in documents]
        missing = [text for text in dict.fromkeys(texts) if text not in self._vectors]
        if missing:
            for text, row in zip(missing, self.encoder.encode(missing), strict=True):
                self._vectors[text] = row
        self._vectors = {text: self._vectors[text] for text in texts}
        self._matrix = numpy.stack([self._vectors[text] for text in texts]) if texts else None

    def scores(self, query: str) -> Scores:
        import numpy

        if self._matrix is None:
            return numpy.zeros(0, dtype=numpy.float32)
        vector = self.encoder.encode_query(query)
        result: Scores = self._matrix @ vector
        return result


class HybridRanker:
    """Reciprocal-rank fusion of two rankers (see the module)."""

    def __init__(self, *rankers: Ranker) -> None:
        self.rankers = rankers

    def build(self, documents: Sequence[Document]) -> None:
        for ranker in self.rankers:
            ranker.build(documents)

    def scores(self, query: str) -> Scores:
        import numpy

        total: Scores | None = None
        for ranker in self.rankers:
            scores = ranker.scores(query)
            if total is None:
                total = numpy.zeros(len(scores), dtype=numpy.float32)
            positive = numpy.flatnonzero(scores > 0)
            best = positive[numpy.argsort(-scores[positive], kind="stable")][:DEPTH]
            total[best] += 1.0 / (K + 1 + numpy.arange(len(best), dtype=numpy.float32))
        return total if total is not None else numpy.zeros(0, dtype=numpy.float32)
