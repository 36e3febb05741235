"""The lexical ranker: BM25 over a tool's name, description and parameters, fields weighted.

Each tool is one bag of terms in which a field's terms count by the field's weight (a word
of the name counts for more than the same word deep in a parameter's description: BM25F
with one length normalisation). The name field holds the name's parts (:func:`.text.parts`,
stemmed), so ``list files`` finds ``list_files`` and ``listFiles``. The weights were tuned
on the BFCL retrieval benchmark (``python -m bench search``).

The index is an inverted index kept up to date term by term: a build after a change adds
and removes only the documents that changed, and a search scores only the postings of its
terms, with numpy. (``bm25s`` rebuilds its whole sparse matrix for any change, which took
250-280 ms at 5 000 tools here, over the 200 ms budget; the benchmark still measures it
as the baseline.) numpy is imported at the first search, never by ``import harness``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .document import Document
from .text import terms, terms_of

if TYPE_CHECKING:
    from .ranker import Scores


@dataclass(frozen=True)
class Weights:
    """How much one occurrence of a term counts in each field."""

    name: float = 3.0
    description: float = 1.0
    params: float = 0.5


def bag(document: Document, weights: Weights) -> dict[str, float]:
    """Term → weighted count in ``document``."""
    counts: dict[str, float] = {}
    for words, weight in (
        (terms(document.name), weights.name),
        (terms(document.description), weights.description),
        (terms_of(text for pair in document.params for text in pair), weights.params),
    ):
        if weight > 0:
            for word, count in Counter(words).items():
                counts[word] = counts.get(word, 0.0) + count * weight
    return counts


class LexicalRanker:
    """BM25 over the weighted fields of each document (see the module)."""

    def __init__(self, weights: Weights | None = None, k1: float = 1.2, b: float = 0.75) -> None:
        self.weights = weights or Weights()
        self.k1, self.b = k1, b
        self._slots: dict[Document, int] = {}
        """Document → its slot: its row in the postings, for as long as it is indexed."""
        self._free: list[int] = []
        self._lengths: list[float] = []
        self._postings: dict[str, dict[int, float]] = {}
        """Term → slot → weighted count."""
        self._arrays: dict[str, tuple[Any, Any]] = {}
        """Term → (slots, counts) as numpy arrays, made at the first search after a change."""
        self._length_array: Any = None
        self._order: Any = None
        """Position in the last build → slot."""
        self._total = 0.0

    def build(self, documents: Sequence[Document]) -> None:
        wanted = set(documents)
        gone = [doc for doc in self._slots if doc not in wanted]
        new = [doc for doc in documents if doc not in self._slots]
        many = len(gone) + len(new) > 64
        if many:  # remake every term's arrays once, rather than dropping them term by term
            self._arrays.clear()
        arrays = None if many else self._arrays
        for document in gone:
            self._drop(document, arrays)
        for document in new:
            self._add(document, arrays)
        self._order = [self._slots[doc] for doc in documents]
        self._length_array = None

    def _add(self, document: Document, arrays: dict[str, Any] | None) -> None:
        slot = self._free.pop() if self._free else len(self._lengths)
        if slot == len(self._lengths):
            self._lengths.append(0.0)
        counts = bag(document, self.weights)
        postings = self._postings
        for word, count in counts.items():
            held = postings.get(word)
            if held is None:
                postings[word] = {slot: count}
            else:
                held[slot] = count
            if arrays is not None:
                arrays.pop(word, None)
        length = sum(counts.values())
        self._lengths[slot] = length
        self._total += length
        self._slots[document] = slot

    def _drop(self, document: Document, arrays: dict[str, Any] | None) -> None:
        slot = self._slots.pop(document)
        for word in bag(document, self.weights):
            postings = self._postings[word]
            del postings[slot]
            if not postings:
                del self._postings[word]
            if arrays is not None:
                arrays.pop(word, None)
        self._total -= self._lengths[slot]
        self._lengths[slot] = 0.0
        self._free.append(slot)

    def scores(self, query: str) -> Scores:
        import numpy

        size = len(self._slots)
        if self._length_array is None:
            self._length_array = numpy.asarray(self._lengths, dtype=numpy.float32)
            self._order = numpy.asarray(self._order, dtype=numpy.intp)
        total = numpy.zeros(len(self._lengths), dtype=numpy.float32)
        average = self._total / size if size else 1.0
        k1, b = self.k1, self.b
        for word in dict.fromkeys(terms(query)):
            postings = self._postings.get(word)
            if not postings:
                continue
            arrays = self._arrays.get(word)
            if arrays is None:
                arrays = (
                    numpy.fromiter(postings.keys(), dtype=numpy.intp, count=len(postings)),
                    numpy.fromiter(postings.values(), dtype=numpy.float32, count=len(postings)),
                )
                self._arrays[word] = arrays
            slots, counts = arrays
            idf = math.log(1 + (size - len(postings) + 0.5) / (len(postings) + 0.5))
            norm = k1 * (1 - b + b * self._length_array[slots] / average)
            total[slots] += idf * counts * (k1 + 1) / (counts + norm)
        result: Scores = total[self._order]
        return result
