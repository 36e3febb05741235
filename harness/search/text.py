"""Words for lexical search: tool names split into their parts, text into stemmed terms.

A tool name is split at ``_``, ``-``, ``.``, case changes and digits (``getHTTPStatus2`` →
``get http status 2``), so a query word finds the part of a name it matches. Text is split
the same way, lower-cased, stripped of English stop words and stemmed with the Snowball
stemmer (PyStemmer): ``files`` and ``file``, ``searching`` and ``search`` become one term.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache

_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
"""A run of capitals not followed by a lower-case letter (``HTTP`` in ``HTTPStatus``), a word
with at most one leading capital, or a run of digits."""

STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
        "which",
        "who",
        "what",
        "when",
        "where",
        "how",
        "do",
        "does",
        "can",
        "i",
        "me",
        "my",
        "you",
        "your",
        "we",
        "our",
        "us",
        "please",
        "want",
        "would",
        "like",
        "should",
        "could",
    ]
)
"""Words that say nothing about which tool fits (a query is often a whole sentence)."""


def parts(text: str) -> list[str]:
    """The lower-cased parts of ``text``: words split at separators, case changes and
    digits."""
    return [part.lower() for part in _PARTS.findall(text)]


@lru_cache(maxsize=1)
def _stemmer() -> Callable[[list[str]], list[str]]:
    import Stemmer  # type: ignore[import-not-found]  # PyStemmer: Snowball in C, no stubs

    stem: Callable[[list[str]], list[str]] = Stemmer.Stemmer("english").stemWords
    return stem


STEMMING = True
"""Whether terms are stemmed (:func:`set_stemming`; the benchmark compares both)."""


def set_stemming(on: bool) -> None:
    """Stem terms or not from now on (indexes built before keep their terms)."""
    global STEMMING
    STEMMING = on
    _TERMS.clear()


_TERMS: dict[str, str] = {}
"""Part as found → its term ('' for a stop word): most words recur, so each is lower-cased,
checked and stemmed once. Bounded by :data:`MAX_CACHED`."""
MAX_CACHED = 200_000


def _learn(words: list[str]) -> None:
    new = [word for word in dict.fromkeys(words) if word not in _TERMS]
    if len(_TERMS) + len(new) > MAX_CACHED:
        _TERMS.clear()
    lowered = [word.lower() for word in new]
    kept = [word for word in lowered if word not in STOP_WORDS]
    stems = dict(zip(kept, _stemmer()(kept) if STEMMING else kept, strict=True))
    for word, low in zip(new, lowered, strict=True):
        _TERMS[word] = stems.get(low, "")


def terms(text: str) -> list[str]:
    """The search terms of ``text``: its parts less stop words, lower-cased and stemmed."""
    words = _PARTS.findall(text)
    try:
        found = [_TERMS[word] for word in words]
    except KeyError:
        _learn(words)
        found = [_TERMS[word] for word in words]
    return [term for term in found if term]


def terms_of(texts: Iterable[str]) -> list[str]:
    """The terms of several texts, in order."""
    return terms(" ".join(texts))
