"""Tool retrieval on BFCL v4: candidate embedding models alone and fused with BM25.

Not a harness benchmark (that is `bench/search.py`): a measurement to choose the model of the
`search` extra. The tools are the functions of BFCL v4's `simple_python`, `multiple`,
`live_simple` and `live_multiple` sets, pooled into one registry (duplicates by name merged);
each question's gold tool is the function its `possible_answer` calls. Every ranker ranks the
whole pool for every question, so this is retrieval among ~1 300 tools, harder than the 526
tools of a typical harness.

    python -m bench.search_models [model ...]

Needs the `search` extra plus `bfcl-eval` (its data only: `pip install --no-deps bfcl-eval`)
and `bm25s`. Prints recall@5, recall@10 and MRR per ranker, the cold encode rate and the query
encode time.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

SETS = ("simple_python", "multiple", "live_simple", "live_multiple")


def bfcl_dir() -> Path:
    spec = importlib.util.find_spec("bfcl_eval")  # its __init__ needs deps we do not install
    if spec is None or not spec.submodule_search_locations:
        sys.exit("bench.search_models: pip install --no-deps bfcl-eval (for its data)")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load() -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The pooled tools and the (question, gold tool name) pairs."""
    data = bfcl_dir()
    tools: dict[str, dict[str, Any]] = {}
    questions: list[tuple[str, str]] = []
    for name in SETS:
        answers = {a["id"]: a for a in _lines(data / "possible_answer" / f"BFCL_v4_{name}.json")}
        for entry in _lines(data / f"BFCL_v4_{name}.json"):
            for function in entry["function"]:
                tools.setdefault(function["name"], function)
            turns = entry["question"][0]
            text = " ".join(t["content"] for t in turns if t["role"] == "user")
            gold = next(iter(answers[entry["id"]]["ground_truth"][0]))
            questions.append((text, gold))
    return list(tools.values()), questions


def split_name(name: str) -> str:
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return re.sub(r"[_\-.]+", " ", words).strip()


def tool_text(tool: dict[str, Any]) -> str:
    """What a ranker sees of a tool: split name, description, parameter names and texts."""
    props = tool.get("parameters", {}).get("properties", {}) or {}
    params = "; ".join(
        f"{split_name(k)}: {v.get('description', '')}" if isinstance(v, dict) else split_name(k)
        for k, v in props.items()
    )
    return f"{split_name(tool['name'])}. {tool.get('description', '')} Parameters: {params}"


def ranks_of(scores: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """1-based rank of each row's gold column (ties counted pessimistically)."""
    gold_scores = scores[np.arange(len(gold)), gold]
    return (scores >= gold_scores[:, None]).sum(axis=1)


def report(label: str, ranks: np.ndarray) -> dict[str, float]:
    figures = {
        "r@5": float((ranks <= 5).mean()),
        "r@10": float((ranks <= 10).mean()),
        "mrr": float((1.0 / ranks).mean()),
    }
    print(
        f"  {label:34s} r@5 {figures['r@5']:.3f}  r@10 {figures['r@10']:.3f}  "
        f"MRR {figures['mrr']:.3f}"
    )
    return figures


def bm25_scores(docs: list[str], queries: list[str]) -> np.ndarray:
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(docs, stopwords="en", show_progress=False), show_progress=False)
    tokens = bm25s.tokenize(queries, stopwords="en", show_progress=False, return_ids=False)
    return np.array([retriever.get_scores(q) for q in tokens], dtype=np.float32)


def rrf(*score_sets: np.ndarray, k: float = 60.0) -> np.ndarray:
    fused = np.zeros_like(score_sets[0])
    for scores in score_sets:
        order = np.argsort(-scores, axis=1, kind="stable")
        ranks = np.empty_like(order)
        rows = np.arange(scores.shape[0])[:, None]
        ranks[rows, order] = np.arange(1, scores.shape[1] + 1)
        fused += 1.0 / (k + ranks)
    return fused


def minmax(scores: np.ndarray) -> np.ndarray:
    low = scores.min(axis=1, keepdims=True)
    span = scores.max(axis=1, keepdims=True) - low
    return (scores - low) / np.where(span > 0, span, 1.0)


Encoders = dict[
    str, Callable[[], tuple[Callable[[list[str]], np.ndarray], Callable[[str], np.ndarray]]]
]


def harness_encoder() -> tuple[Callable[[list[str]], np.ndarray], Callable[[str], np.ndarray]]:
    from harness.search.embedding import Encoder

    encoder = Encoder(Path(tempfile.mkdtemp(prefix="search-models-")))
    return encoder.encode, encoder.encode_query


def wordllama() -> tuple[Callable[[list[str]], np.ndarray], Callable[[str], np.ndarray]]:
    import wordllama as package
    from wordllama import WordLlama

    # the wheel carries the weights and the tokenizer; as the cache directory its own folder
    # is where the loader finds both (it looks for the tokenizer in a misnamed folder otherwise)
    model = WordLlama.load(cache_dir=Path(package.__file__).parent)

    def encode(texts: list[str]) -> np.ndarray:
        out = np.asarray(model.embed(texts, norm=True), dtype=np.float32)
        return out

    return encode, lambda text: encode([text])[0]


CANDIDATES: Encoders = {"harness": harness_encoder, "wordllama": wordllama}


def main_sync(names: list[str]) -> None:
    tools, questions = load()
    docs = [tool_text(t) for t in tools]
    index = {t["name"]: i for i, t in enumerate(tools)}
    kept = [(q, index[g]) for q, g in questions if g in index]
    queries = [q for q, _ in kept]
    gold = np.array([g for _, g in kept])
    print(f"BFCL v4 {'+'.join(SETS)}: {len(tools)} tools, {len(kept)} questions")
    lexical = bm25_scores(docs, queries)
    report("bm25s", ranks_of(lexical, gold))
    for name in names or list(CANDIDATES):
        encode, encode_query = CANDIDATES[name]()
        start = time.perf_counter()
        vectors = encode(docs)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        qvecs = np.stack([encode_query(q) for q in queries])
        per_query = (time.perf_counter() - start) / len(queries)
        print(
            f"{name}: cold encode {len(docs) / cold:.0f} tools/s, query {per_query * 1000:.1f} ms"
        )
        dense = qvecs @ vectors.T
        report(f"{name} alone", ranks_of(dense, gold))
        for k in (10.0, 60.0):
            report(f"{name} + bm25 RRF k={k:g}", ranks_of(rrf(dense, lexical, k=k), gold))
        for weight in (0.3, 0.5, 0.7):
            fused = weight * minmax(dense) + (1 - weight) * minmax(lexical)
            report(f"{name} {weight:.1f}*dense+bm25 (minmax)", ranks_of(fused, gold))


async def main() -> None:
    main_sync([])


if __name__ == "__main__":
    main_sync(sys.argv[1:])
