"""The ``search`` extra's sentence model (:mod:`harness.search.embedding`): the real model on
the CPU, the real on-disk cache, and imports that stay lazy."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.search import embedding
from harness.search.embedding import DIMENSIONS, Encoder, ModelUnavailable

TOOLS = [
    "weather forecast. Get the weather forecast for a city: temperature, rain and wind.",
    "send email. Send an email message to a recipient with a subject and a body.",
    "stock price. Look up the latest trading price of a stock by its ticker symbol.",
]


def test_vectors_are_unit_rows_in_order_and_rank_by_meaning(tmp_path: Path) -> None:
    encoder = Encoder(tmp_path)
    vectors = encoder.encode(TOOLS)
    assert vectors.shape == (3, DIMENSIONS)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    for query, best in [
        ("will it rain in Paris tomorrow?", 0),
        ("mail my boss that I am late", 1),
        ("how much is one share of Apple worth", 2),
    ]:
        scores = vectors @ encoder.encode_query(query)
        assert int(np.argmax(scores)) == best, (query, scores)
    # each row is its text's own vector, whatever the batch around it
    np.testing.assert_allclose(encoder.encode([TOOLS[2]])[0], vectors[2], atol=1e-5)
    assert encoder.encode([]).shape == (0, DIMENSIONS)


def test_batches_run_at_once_give_each_text_its_own_vector(tmp_path: Path) -> None:
    texts = [f"{tool} Variant number {i}." for i in range(12) for tool in TOOLS]  # 36: 5 batches
    together = Encoder(tmp_path / "two", workers=2).encode(texts)
    alone = Encoder(tmp_path / "one", workers=1).encode(texts)
    np.testing.assert_allclose(together, alone, atol=1e-5)
    single = Encoder(None, workers=2)
    for i in (0, 17, 35):  # each row is its own text's, not a neighbour batch's
        np.testing.assert_allclose(single.encode([texts[i]])[0], together[i], atol=1e-5)


def test_identifiers_read_as_their_words(tmp_path: Path) -> None:
    encoder = Encoder(tmp_path)
    camel, snake, dotted, words = encoder.encode(
        ["getUserInfo", "get_user_info", "get.user.info", "get User Info"]
    )
    for vector in (camel, snake, dotted):
        np.testing.assert_allclose(vector @ words, 1.0, rtol=1e-4)
    np.testing.assert_allclose(
        encoder.encode_query("fetchHTTPServerStatus") @ words,
        (encoder.encode(["fetch HTTP Server Status"])[0] @ words),
        rtol=1e-4,
    )
    assert encoder.encoded == 5  # each text has its own cache entry


def test_a_restart_encodes_only_the_texts_that_changed(tmp_path: Path) -> None:
    first = Encoder(tmp_path / "cache")
    before = first.encode(TOOLS)
    assert first.encoded == 3
    first.encode(TOOLS)  # the same process asks again: nothing runs
    assert first.encoded == 3
    first.encode([*TOOLS[:2], "a tool reloaded with a new description"])  # a hot reload
    assert first.encoded == 4

    changed = [*TOOLS[:2], TOOLS[2].replace("stock", "share")]
    restarted = Encoder(tmp_path / "cache")  # a new process: only the disk is shared
    after = restarted.encode([*changed, TOOLS[2]])
    assert restarted.encoded == 1  # the edited text alone
    np.testing.assert_array_equal(after[:2], before[:2])
    np.testing.assert_array_equal(after[3], before[2])
    assert not np.array_equal(after[2], before[2])


def test_the_cache_keeps_the_newest_vectors_up_to_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedding, "MAX_CACHED", 2)
    writer = Encoder(tmp_path)
    for text in TOOLS:  # one at a time: the first is the stalest
        writer.encode([text])
    reader = Encoder(tmp_path)
    reader.encode(TOOLS[1:])
    assert reader.encoded == 0
    reader.encode(TOOLS[:1])
    assert reader.encoded == 1


def test_a_broken_cache_is_set_aside_and_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "vectors.sqlite3").write_bytes(b"not a database, whatever wrote it" * 100)
    encoder = Encoder(cache)
    with caplog.at_level(logging.WARNING, logger="harness.search"):
        vectors = encoder.encode(TOOLS)
    assert vectors.shape == (3, DIMENSIONS)
    assert encoder.encoded == 3
    (record,) = caplog.records
    assert record.getMessage() == (
        f"search: the vector cache {cache / 'vectors.sqlite3'} cannot be read (file is not a "
        "database); it is moved to vectors.sqlite3.broken and rebuilt, so this time every "
        "tool text is encoded anew"
    )
    assert (cache / "vectors.sqlite3.broken").read_bytes().startswith(b"not a database")
    again = Encoder(cache)
    np.testing.assert_array_equal(again.encode(TOOLS), vectors)
    assert again.encoded == 0


def test_a_cache_that_cannot_be_opened_only_costs_the_cache(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("the cache folder's name is taken by a file")
    encoder = Encoder(blocker)
    with caplog.at_level(logging.WARNING, logger="harness.search"):
        assert encoder.encode(TOOLS[:2]).shape == (2, DIMENSIONS)
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 2
    assert messages[0].startswith(f"search: the vector cache {blocker / 'vectors.sqlite3'} ")
    assert messages[0].endswith("; tool texts are encoded without it")
    assert messages[1].startswith(f"search: the vector cache in {blocker} cannot be written (")
    assert messages[1].endswith("so a restart encodes these 2 texts again")


def test_without_a_cache_dir_nothing_is_written(tmp_path: Path) -> None:
    encoder = Encoder()
    encoder.encode(TOOLS[:1])
    assert list(tmp_path.iterdir()) == []
    assert Encoder().encode(TOOLS[:1]).shape == (1, DIMENSIONS)


def test_the_extra_is_reported_missing_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert Encoder.available()
    assert Encoder.unavailable_reason() is None
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # what an uninstalled module looks like
    assert not Encoder.available()
    reason = (
        "the embedding model needs the 'search' extra (onnxruntime not installed): "
        "pip install 'cordis-harness[search]'"
    )
    assert Encoder.unavailable_reason() == reason
    with pytest.raises(ModelUnavailable) as caught:
        Encoder(tmp_path).encode(TOOLS)
    assert str(caught.value) == reason


def test_importing_harness_and_its_search_loads_no_model_library() -> None:
    code = (
        "import sys, harness, harness.search, harness.search.embedding as e\n"
        "assert e.Encoder.available()\n"
        "print(sorted(m for m in ('numpy', 'onnxruntime', 'tokenizers', 'model2vec')"
        " if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
