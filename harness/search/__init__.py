"""Tool search: find the few tools a request needs among thousands (docs/search.md).

A pure retrieval layer: :class:`SearchIndex` keeps one :class:`Document` per tool and ranks
them with a :class:`Ranker` (BM25 per field by default, :mod:`.lexical`; a local sentence
model or both with the ``search`` extra). The tools service feeds it from the registry and
decides who may see which tool (``ctx.tools.search``). Importing this package imports
neither ``bm25s`` nor numpy: the first search does.
"""

from .config import SearchConfig
from .document import Document, Hit
from .index import SearchIndex
from .ranker import RANKERS, Ranker, RankerName, SearchUnavailable, make_ranker

__all__ = [
    "RANKERS",
    "Document",
    "Hit",
    "Ranker",
    "RankerName",
    "SearchConfig",
    "SearchIndex",
    "SearchUnavailable",
    "make_ranker",
]
