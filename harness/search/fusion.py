"""The rankers of the ``search`` extra: a local sentence model alone, and fused with BM25.

``embedding`` scores a query by the cosine of its vector with each document's (the model
and its on-disk vector cache are :mod:`.embedding`'s); vectors of unchanged documents are
kept from one build to the next. ``hybrid`` fuses the lexical and the embedding scores: each
scaled to 0..1 over the documents (min-max, per query), then weighted (:data:`WEIGHTS`), so a
tool far ahead in one ranking keeps its lead; reciprocal rank (each document scores
``1 / (K + rank)`` in each ranking) is the other fusion, kept for the benchmark.
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
WEIGHTS = (0.3, 0.7)
"""The hybrid's weights: 0.3 · lexical + 0.7 · model, each score min-max scaled per query.
Against reciprocal rank (k = 10) on the BFCL pool (``python -m bench search``, one run):
recall@10 0.952 both, MRR 0.775 against 0.762, recall@5 0.905 against 0.904."""


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
    """A weighted sum of the rankers' scores, each min-max scaled to 0..1 over every
    document (``weights``, one per ranker); or, with ``weights=None``, reciprocal-rank
    fusion (see the module)."""

    def __init__(self, *rankers: Ranker, weights: Sequence[float] | None = WEIGHTS) -> None:
        self.rankers = rankers
        self.weights = weights

    def build(self, documents: Sequence[Document]) -> None:
        for ranker in self.rankers:
            ranker.build(documents)

    def scores(self, query: str) -> Scores:
        import numpy

        if self.weights is not None:
            return self._weighted(query, self.weights)
        total: Scores | None = None
        for ranker in self.rankers:
            scores = ranker.scores(query)
            if total is None:
                total = numpy.zeros(len(scores), dtype=numpy.float32)
            positive = numpy.flatnonzero(scores > 0)
            best = positive[numpy.argsort(-scores[positive], kind="stable")][:DEPTH]
            total[best] += 1.0 / (K + 1 + numpy.arange(len(best), dtype=numpy.float32))
        return total if total is not None else numpy.zeros(0, dtype=numpy.float32)

    def _weighted(self, query: str, weights: Sequence[float]) -> Scores:
        import numpy

        total: Scores | None = None
        for ranker, weight in zip(self.rankers, weights, strict=True):
            scores = ranker.scores(query)
            if total is None:
                total = numpy.zeros(len(scores), dtype=numpy.float32)
            if len(scores):
                low, high = float(scores.min()), float(scores.max())
                total += weight * (scores - low) / (high - low if high > low else 1.0)
        return total if total is not None else numpy.zeros(0, dtype=numpy.float32)
