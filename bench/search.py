"""Tool search: retrieval quality on BFCL v4, latency at 5 000 tools, request size, imports.

Quality: the functions of BFCL v4's ``simple_python``, ``multiple``, ``live_simple`` and
``live_multiple`` sets (the ``bfcl-eval`` wheel, Apache-2.0) pooled into one registry
(duplicates by name merged; names made registry-safe), each question's expected function
(``possible_answer``) as the gold. recall@5, recall@10 and MRR for each ranker: harness's
lexical ranker (and variants: no stemming, unweighted fields), plain ``bm25s`` over the
descriptions alone (the baseline), and the embedding and hybrid rankers when the ``search``
extra is installed: the hybrid by min-max scaled, weighted scores (the default: 0.7 model)
and by reciprocal rank and other weights, and the cold encode rate of the sentence model (an
empty vector cache, batched, at 526, 1 090 and 5 000 tools; one run at a time over all
cores, and two single-threaded runs at once), with the machine's load average beside each.

Speed (thread CPU time, which other processes on a loaded machine do not inflate; best of
rounds): a full index build at 5 000 tools, registering one more tool through the tools
service, the next search after it, and warm search latency (p50/p95) over the BFCL
questions; the embedding and hybrid rankers' warm search latency (wall clock) at 526 tools
and the whole pool. Request size: the tool list of a request with every tool vs with deferral
(``search_tools`` alone) at 500 tools. Imports: what the first search imports, timed in a
fresh interpreter.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

from harness import Context, ToolsService, define_tool
from harness.search import Document, SearchIndex, make_ranker
from harness.search import text as search_text
from harness.search.lexical import LexicalRanker, Weights
from harness.tools.finding import SEARCH_TOOL

SETS = ("simple_python", "multiple", "live_simple", "live_multiple")
SIZE = 5_000


def safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]


def bfcl() -> tuple[dict[str, dict[str, Any]], list[tuple[str, str]]]:
    """The pooled functions by safe name, and (question, gold name) pairs."""
    data = resources.files("bfcl_eval") / "data"
    functions: dict[str, dict[str, Any]] = {}
    questions: list[tuple[str, str]] = []
    for which in SETS:
        asked = (data / f"BFCL_v4_{which}.json").read_text().splitlines()
        answers = (data / "possible_answer" / f"BFCL_v4_{which}.json").read_text().splitlines()
        gold = {row["id"]: row["ground_truth"] for row in map(json.loads, answers)}
        for row in map(json.loads, asked):
            for function in row["function"]:
                functions.setdefault(safe(function["name"]), function)
            truth = gold.get(row["id"])
            if not truth:
                continue
            turns = row["question"][0]
            text = " ".join(m["content"] for m in turns if m.get("role") == "user")
            questions.append((text, safe(next(iter(truth[0])))))
    return functions, questions


def document(name: str, function: dict[str, Any]) -> Document:
    return Document.of(name, function.get("description", ""), function.get("parameters"))


def score(ranked: list[list[str]], questions: list[tuple[str, str]]) -> tuple[float, ...]:
    at5 = at10 = reciprocal = 0.0
    for names, (_, gold) in zip(ranked, questions, strict=True):
        rank = names.index(gold) + 1 if gold in names else 0
        at5 += 0 < rank <= 5
        at10 += 0 < rank <= 10
        reciprocal += 1 / rank if rank else 0
    n = len(questions)
    return at5 / n, at10 / n, reciprocal / n


def ours(docs: list[Document], questions: list[tuple[str, str]], ranker: Any) -> tuple[float, ...]:
    index = SearchIndex(lambda: ranker)
    for doc in docs:
        index.put(doc)
    return score([[h.name for h in index.search(q, 50)] for q, _ in questions], questions)


def plain_bm25s(docs: list[Document], questions: list[tuple[str, str]]) -> tuple[float, ...]:
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize([d.description for d in docs], show_progress=False), show_progress=False
    )
    found, _ = retriever.retrieve(
        bm25s.tokenize([q for q, _ in questions], show_progress=False), k=50, show_progress=False
    )
    return score([[docs[i].name for i in row] for row in found.tolist()], questions)


def quality(functions: dict[str, dict[str, Any]], questions: list[tuple[str, str]]) -> None:
    docs = [document(name, f) for name, f in functions.items()]
    print(f"BFCL v4 {', '.join(SETS)}: {len(docs)} tools, {len(questions)} questions")
    rows: dict[str, tuple[float, ...]] = {"bm25s, descriptions only": plain_bm25s(docs, questions)}
    rows["lexical (default)"] = ours(docs, questions, LexicalRanker())
    for label, weights in {
        "lexical, fields unweighted": Weights(1, 1, 1),
        "lexical, name x2": Weights(2, 1, 0.5),
        "lexical, name x5": Weights(5, 1, 0.5),
        "lexical, params x1": Weights(3, 1, 1),
        "lexical, no params": Weights(3, 1, 0),
    }.items():
        rows[label] = ours(docs, questions, LexicalRanker(weights))
    search_text.set_stemming(False)
    rows["lexical, no stemming"] = ours(docs, questions, LexicalRanker())
    search_text.set_stemming(True)
    for name in ("embedding", "hybrid"):
        try:
            ranker = make_ranker(name)  # type: ignore[arg-type]
        except Exception as exc:  # the search extra is not installed
            print(f"  ({name}: {exc})")
            continue
        rows[name] = ours(docs, questions, ranker)
    if "hybrid" in rows:
        fusion_trial(docs, questions, rows)
    base = rows["bm25s, descriptions only"][1]
    print(f"  {'ranker':30} {'R@5':>6} {'R@10':>6} {'MRR':>6}  R@10 vs bm25s")
    for label, (at5, at10, mrr) in rows.items():
        print(f"  {label:30} {at5:6.3f} {at10:6.3f} {mrr:6.3f}  {100 * (at10 / base - 1):+.0f} %")


def fusion_trial(
    docs: list[Document], questions: list[tuple[str, str]], rows: dict[str, tuple[float, ...]]
) -> None:
    """The hybrid fused by reciprocal rank, and by min-max scaled scores at other weights."""
    from harness.search.fusion import EmbeddingRanker, HybridRanker
    from harness.search.ranker import load_encoder

    encoder = load_encoder("hybrid", None)  # one model: its vectors are encoded once
    trials: dict[str, tuple[float, float] | None] = {"reciprocal rank, k = 10": None}
    trials.update({f"min-max, {m:.1f} model": (1 - m, m) for m in (0.5, 0.6)})
    for label, weights in trials.items():
        ranker = HybridRanker(LexicalRanker(), EmbeddingRanker(encoder), weights=weights)
        rows[f"hybrid, {label}"] = ours(docs, questions, ranker)


def cold_encode(functions: dict[str, dict[str, Any]]) -> None:
    """Tools per second of a cold encode (an empty on-disk cache), batched."""
    from harness.search.embedding import Encoder

    if Encoder.unavailable_reason() is not None:
        return
    pool = list(functions.items())
    named = [(f"{name[:58]}_{i // len(pool)}", f) for i, (name, f) in enumerate(pool * 5)]
    print(f"cold encode ({os.cpu_count()} cores; load average before and after each run)")
    for size in (526, len(pool), SIZE):
        texts = [document(name, f).text for name, f in named[:size]]
        for workers in (1, 2):
            with tempfile.TemporaryDirectory() as folder:
                encoder = Encoder(Path(folder), workers=workers)
                encoder.encode_query("load the model")  # its load is not the encode
                load = os.getloadavg()[0]
                wall, cpu = time.perf_counter(), time.process_time()
                encoder.encode(texts)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                assert encoder.encoded == size
            how = "one run, all cores" if workers == 1 else f"{workers} runs, 1 thread each"
            print(
                f"  {size:5d} tools, {how:22} {size / wall:5.0f} tools/s "
                f"({size / cpu:3.0f} per CPU-second), load {load:.1f} -> {os.getloadavg()[0]:.1f}"
            )


def cpu_ms(call: Any, rounds: int = 5) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.thread_time_ns()
        call()
        best = min(best, (time.thread_time_ns() - start) / 1e6)
    return best


def tool(name: str, function: dict[str, Any]) -> Any:
    params = function.get("parameters", {}).get("properties", {})
    spec = {
        key: {"type": "string", "description": str(value.get("description", ""))}
        for key, value in params.items()
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key)
    }
    return define_tool(
        name=name,
        description=function.get("description") or name,
        parameters=spec,
        execute=lambda args: None,
    )


async def speed(functions: dict[str, dict[str, Any]], questions: list[tuple[str, str]]) -> None:
    pool = list(functions.items())
    named = [(f"{name[:58]}_{i // len(pool)}", f) for i, (name, f) in enumerate(pool * 4)]
    named = named[:SIZE]
    docs = [document(name, f) for name, f in named]

    def build() -> None:
        index = SearchIndex(lambda: make_ranker("lexical"))
        for doc in docs:
            index.put(doc)
        index.build()

    build()  # warm: imports, the term cache
    print(f"{SIZE} tools (BFCL's, repeated under new names), thread CPU time, best of rounds")
    print(f"  full index build             {cpu_ms(build):8.1f} ms")
    search_text.set_stemming(True)  # empties the term cache: the build reads every word anew
    print(f"  full index build, cold words {cpu_ms(build, 1):8.1f} ms")

    async with Context() as ctx:
        await ctx.plugin(ToolsService)
        tools = ctx.tools
        definitions = [tool(name, f) for name, f in named[: SIZE - 1]]
        for definition in definitions:
            tools.register(definition)
        await tools.search("warm up")
        extra = tool("one_more_tool", pool[0][1])
        times = []
        for _ in range(5):
            start = time.thread_time_ns()
            dispose = tools.register(extra)
            times.append((time.thread_time_ns() - start) / 1e6)
            start = time.thread_time_ns()
            await tools.search("one more tool")
            after = (time.thread_time_ns() - start) / 1e6
            dispose()
            await tools.search("one more tool")
        print(f"  register one tool            {min(times):8.3f} ms (with {SIZE - 1} registered)")
        print(f"  the next search after it    {after:8.1f} ms (updates the index)")
        latencies = []
        for query, _ in questions:
            start = time.thread_time_ns()
            await tools.search(query)
            latencies.append((time.thread_time_ns() - start) / 1e6)
        latencies.sort()
        p95 = latencies[int(0.95 * len(latencies))]
        print(
            f"  search, warm                 p50 {statistics.median(latencies):.2f} ms, "
            f"p95 {p95:.2f} ms ({len(latencies)} BFCL questions)"
        )


def model_latency(functions: dict[str, dict[str, Any]], questions: list[tuple[str, str]]) -> None:
    """Warm query latency of the rankers with a model, at 526 tools (the issue's catalogue
    size) and the whole pool: wall clock, since the model's encode of the query may use
    threads; its vectors are encoded before timing."""
    from harness.search.embedding import Encoder

    if Encoder.unavailable_reason() is not None:
        return
    pool = list(functions.items())
    print("rankers with a model, warm search, wall clock per query")
    for size in (526, len(pool)):
        docs = [document(name, f) for name, f in pool[:size]]
        for name in ("embedding", "hybrid"):
            with tempfile.TemporaryDirectory() as folder:
                ranker = make_ranker(name, Path(folder))
                index = SearchIndex(lambda ranker=ranker: ranker)  # type: ignore[misc]
                for doc in docs:
                    index.put(doc)
                index.search("warm up")  # builds: encodes every tool once
                walls, cpus = [], []
                for query, _ in questions:
                    wall, cpu = time.perf_counter(), time.process_time()
                    index.search(query)
                    cpus.append((time.process_time() - cpu) * 1000)
                    walls.append((time.perf_counter() - wall) * 1000)
            walls.sort()
            cpus.sort()
            at = int(0.95 * len(walls))
            print(
                f"  {size:5d} tools, {name:9} wall p50 {statistics.median(walls):5.2f} ms, "
                f"p95 {walls[at]:5.2f} ms; CPU (all threads) p50 {statistics.median(cpus):5.2f}"
                f" ms, p95 {cpus[at]:5.2f} ms; load {os.getloadavg()[0]:.1f}"
            )


async def request_size(functions: dict[str, dict[str, Any]]) -> None:
    async with Context() as ctx:
        await ctx.plugin(ToolsService)
        for name, function in list(functions.items())[:500]:
            ctx.tools.register(tool(name, function))
        assert SEARCH_TOOL in ctx.tools.list()  # over the threshold: offered
        schemas = dict(zip(ctx.tools.list(), ctx.tools.schemas("openai"), strict=True))
        full = len(json.dumps([s for name, s in schemas.items() if name != SEARCH_TOOL]))
        small = len(json.dumps([schemas[SEARCH_TOOL]]))
    print(
        f"request tool list at 500 tools: {full} bytes all, {small} bytes deferred "
        f"(search_tools alone): {100 * (1 - small / full):.1f} % smaller"
    )


def imports() -> None:
    probe = (
        "import time; t = time.perf_counter(); import harness; a = time.perf_counter(); "
        "import numpy, Stemmer, harness.search.lexical; b = time.perf_counter(); "
        "import sys; print(a - t, b - a, 'numpy' in sys.modules)"
    )
    runs = []
    for _ in range(5):
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
        runs.append(out.stdout.split())
    harness_s = min(float(run[0]) for run in runs)
    lexical_s = min(float(run[1]) for run in runs)
    print(
        f"imports (fresh interpreter, best of 5): import harness {1000 * harness_s:.0f} ms "
        f"(numpy not imported); what the first search adds (numpy, PyStemmer, the "
        f"lexical ranker) {1000 * lexical_s:.0f} ms"
    )


async def main() -> None:
    functions, questions = bfcl()
    quality(functions, questions)
    cold_encode(functions)
    model_latency(functions, questions)
    await speed(functions, questions)
    await request_size(functions)
    imports()
