"""Tool retrieval on BFCL v4: candidate embedding models alone and fused with BM25.

Not a harness benchmark (that is `bench/search.py`): a measurement to choose the model of the
`search` extra. The tools are the functions of BFCL v4's `simple_python`, `multiple`,
`live_simple` and `live_multiple` sets, pooled into one registry (duplicates by name merged);
each question's gold tool is the function its `possible_answer` calls. Every ranker ranks the
whole pool for every question, so this is retrieval among 1 096 tools, harder than the 526
tools of a typical harness.

    python -m bench.search_models [model ...]

Needs the `search` extra and the `bench` extra's `bfcl-eval` and `bm25s` (`make bench`
installs them); other candidates (`wordllama`) run when installed. Prints recall@5,
recall@10 and MRR per ranker (the model over three tool texts, and fused with plain BM25 and
with harness's lexical ranker by reciprocal rank and by min-max weights), the cold encode rate
and the query encode time.
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
"""Candidates by the name of the module each needs."""


def harness_lexical(tools: list[dict[str, Any]], queries: list[str]) -> np.ndarray | None:
    """harness's own lexical ranker (BM25 per field, stemmed), when this tree has it."""
    try:
        from harness.search.lexical import LexicalRanker
    except ImportError:
        return None
    ranker = LexicalRanker()
    ranker.build([document(t) for t in tools])
    return np.stack([np.asarray(ranker.scores(q), dtype=np.float32) for q in queries])


def document(tool: dict[str, Any]) -> Any:
    from harness.search import Document

    return Document.of(tool["name"], tool.get("description", ""), tool.get("parameters"))


TEXTS: dict[str, Callable[[dict[str, Any]], str]] = {
    "split name, description, params": tool_text,
    "split name, description": lambda t: f"{split_name(t['name'])}. {t.get('description', '')}",
}


def main_sync(names: list[str]) -> None:
    tools, questions = load()
    index = {t["name"]: i for i, t in enumerate(tools)}
    kept = [(q, index[g]) for q, g in questions if g in index]
    queries = [q for q, _ in kept]
    gold = np.array([g for _, g in kept])
    print(f"BFCL v4 {'+'.join(SETS)}: {len(tools)} tools, {len(kept)} questions")
    lexicals = {"bm25s": bm25_scores([tool_text(t) for t in tools], queries)}
    ours = harness_lexical(tools, queries)
    texts = dict(TEXTS)
    if ours is not None:
        lexicals["harness lexical"] = ours
        texts["Document.text"] = lambda t: str(document(t).text)
    for label, scores in lexicals.items():
        report(label, ranks_of(scores, gold))
    for name in names or [n for n in CANDIDATES if importlib.util.find_spec(n) is not None]:
        encode, encode_query = CANDIDATES[name]()
        start = time.perf_counter()
        qvecs = np.stack([encode_query(q) for q in queries])
        per_query = (time.perf_counter() - start) / len(queries)
        best: tuple[float, str, np.ndarray] | None = None
        for text_label, text_of in texts.items():
            docs = [text_of(t) for t in tools]
            start, cpu = time.perf_counter(), time.process_time()
            dense = qvecs @ encode(docs).T
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu
            print(
                f"{name} over {text_label}: cold encode {len(docs) / wall:.0f} tools/s "
                f"({len(docs) / cpu:.0f} per CPU-second)"
            )
            figures = report(f"{name} alone", ranks_of(dense, gold))
            if best is None or figures["r@10"] > best[0]:
                best = (figures["r@10"], text_label, dense)
        assert best is not None
        print(f"{name}: query {per_query * 1000:.1f} ms; fused over {best[1]}:")
        dense = best[2]
        for label, lexical in lexicals.items():
            for k in (10.0, 60.0):
                report(f"+ {label} RRF k={k:g}", ranks_of(rrf(dense, lexical, k=k), gold))
            for weight in (0.3, 0.5, 0.6, 0.7, 0.8):
                fused = weight * minmax(dense) + (1 - weight) * minmax(lexical)
                report(f"{weight:.1f} dense + {label} (min-max)", ranks_of(fused, gold))


async def main() -> None:
    main_sync([])


if __name__ == "__main__":
    main_sync(sys.argv[1:])
