"""The rankers by name: lexical's name splitting and stemming, and the ``embedding`` and
``hybrid`` rankers of the ``search`` extra (the real local model) through a Host."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness import Host
from harness.search import Document, SearchIndex, make_ranker
from harness.search.fusion import HybridRanker
from harness.search.text import parts, terms

from .test_tools_search import CATALOGUE, project


def test_names_split_at_separators_case_and_digits() -> None:
    assert parts("getHTTPStatus2_of-a.file") == ["get", "http", "status", "2", "of", "a", "file"]
    assert terms("Searching the Files") == ["search", "file"]


def test_registering_marks_the_index_and_the_next_search_sees_it() -> None:
    index = SearchIndex(lambda: make_ranker("lexical"))
    index.put(Document.of("list_files", "List the files of a folder.", None))
    assert [hit.name for hit in index.search("files")] == ["list_files"]
    index.put(Document.of("listFileSizes", "Sizes of the files.", None))
    index.remove("list_files")
    assert [hit.name for hit in index.search("list files")] == ["listFileSizes"]


class Fixed:
    """A ranker with set scores, one per document."""

    def __init__(self, scores: list[float]) -> None:
        self.fixed = np.asarray(scores, dtype=np.float32)

    def build(self, documents: Sequence[Document]) -> None:
        assert len(documents) == len(self.fixed)

    def scores(self, query: str) -> Any:
        return self.fixed


def test_the_hybrid_weighs_scores_not_only_ranks() -> None:
    docs = [Document.of(name, "", None) for name in ("lexical_first", "both_high", "neither")]
    # lexical: a hair between the first two; the model: far ahead for the second
    hybrid = HybridRanker(Fixed([10.0, 9.9, 0.0]), Fixed([0.30, 0.90, 0.29]))
    index = SearchIndex(lambda: hybrid)
    for doc in docs:
        index.put(doc)
    hits = index.search("anything")
    assert [hit.name for hit in hits][:2] == ["both_high", "lexical_first"]
    # 0.3 · 9.9 / 10 + 0.7 · 1, and 0.3 · 1 + 0.7 · 0.01 / 0.61
    assert [hit.score for hit in hits[:2]] == pytest.approx([0.997, 0.3115], abs=1e-3)


@pytest.mark.anyio
@pytest.mark.parametrize("ranker", ["embedding", "hybrid"])
async def test_the_model_rankers_find_by_meaning(tmp_path: Path, ranker: str) -> None:
    tools = (
        f"- {{ id: tools, name: 'harness:tools', config: {{ search: {{ ranker: {ranker} }} }} }}\n"
    )
    async with Host(project(tmp_path, CATALOGUE, tools)) as host:
        hits = await host.tools.search("will it rain tomorrow", limit=3)
        assert hits[0].name == "get_weather"  # no word in common: found by meaning
        denied = await host.tools.search("wipe the whole hard drive", limit=50)
        assert "delete_everything" not in [hit.name for hit in denied]
    assert list((tmp_path / ".harness" / "search").iterdir())  # vectors cached on disk
