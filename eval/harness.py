"""One fair harness: every strategy in every mode, the same chunks, queries, index, k and metric code.

``run_compare`` (the ``latechunk compare`` command) does, in order:

1. **Parse once.** The dataset is loaded through :func:`eval.cache.load_cached` (key: sha256 of its content).
2. **Query vectors once.** All queries are encoded once, with the model's query prompt and pooling; every
   system searches with the same ``xq`` (its sha256 is in the manifest).
3. **One late pass per macro window and overlap.** For each macro-window size (``--window 128|256|512``) and
   each window overlap (``--window-overlap 0|32|64``), one :func:`latechunk.pipeline.embed` call runs every
   strategy: in late mode each document's token states are
   computed once and pooled for every strategy (a sweep ``fixed:size=128|256`` is just more strategies). Naive
   and contextual vectors (naive with the header ``[title > section path]``) are made once, in the first macro
   window's call, from the *same* Boundaries objects. A strategy whose boundaries depend on the late states
   (``semantic`` with ``source=late``) gets its naive and contextual vectors again for each further macro window,
   from that pass's boundaries, so every mode shares its chunks; for every other strategy the harness checks that
   each macro window gave the same boundaries and raises if not.
4. **One index per system** (strategy x mode x macro window), all built from one
   :class:`~latechunk.config.IndexConfig`, searched to one depth. With several compact-vector settings
   (``--precision float32,int8,ubinary``, ``--truncate-dim``), each system gets one more index per further
   setting over the same vectors, searched with the same (transformed) queries and scored with the same code
   (``System.compact``: metrics, index bytes, top-k overlap with the main index).
5. **Metrics** from :mod:`eval.metrics` only: answer-contained recall@k, Chroma's span recall/precision/IoU at
   k and precision Ω (characters), facts protected, duplicate slots at k, document-level nDCG@10, R@100 and
   RR@10 (MRR@10) through ir_measures with a document scored as its best chunk; costs.
6. **Statistics**: paired per-query differences with bootstrap CIs (:mod:`eval.stats`): late minus naive per
   strategy (and late minus contextual, naive minus contextual where contextual runs: :data:`MODE_PAIRS`),
   strategy A minus B within a mode, macro window w minus the first macro window. The documents' title origins
   (:func:`latechunk.titles.document_title`) are counted in the manifest (``titles``).
7. **Report** (:mod:`eval.report`): ``report.md``, ``results.json``, ``per_query.csv``, ``plot.png``.

Every number except wall times is a function of the inputs: two runs give identical numbers (flat index, fixed
bootstrap seed, deterministic batching). Tests: ``tests/test_eval_harness.py``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from latechunk.provenance import versions

from .cache import load_cached
from .config import DEFAULT_STRATEGIES, CompareConfig
from .datasets import EvalDataset, Query
from .metrics import (
    DEDUP_PREFIX,
    DEFAULT_DOC_MEASURES,
    dedup_scores,
    doc_metrics,
    doc_run_from_chunk_run,
    drop_overlapping,
    duplicate_slots,
    facts_protected,
    mean_over_queries,
    observed_overlap_multiplier,
    precision_omega,
    span_metrics,
    theoretical_overlap_multiplier,
)
from .report import write_report
from .result import MODE_PAIRS, CompareResult, System
from .stats import paired_bootstrap

__all__ = [
    "DEFAULT_STRATEGIES",
    "MODE_PAIRS",
    "CompareConfig",
    "CompareResult",
    "System",
    "chunk_records_sha256",
    "run_compare",
]

log = logging.getLogger("latechunk.eval")


OMEGA = "PrecisionOmega"
"""Per-query name of Chroma's precision Ω (a property of the chunks, not of the ranking)."""


def chunk_records_sha256(boundaries: Sequence, vectors=None) -> str:
    """sha256 of a strategy's chunk records: per document its id, then each chunk's token and char span.

    Args:
        boundaries: The strategy's :class:`~latechunk.types.Boundaries`, one per document, in order; their
            int32 (n_chunks, 2) token and char spans are hashed as int64.
        vectors: Its :class:`~latechunk.types.ChunkVectors` (optional): its ``doc_ids``, ``chunk_index`` and
            ``cu_chunks`` are hashed too, so two systems with the same hash index the same chunks in the same
            rows.

    Returns:
        The sha256 hex digest (64 characters).
    """
    h = hashlib.sha256()
    for b in boundaries:
        h.update(b.doc_id.encode("utf-8") + b"\0")
        h.update(np.ascontiguousarray(b.token_spans, dtype=np.int64).tobytes())
        h.update(np.ascontiguousarray(b.char_spans, dtype=np.int64).tobytes())
    if vectors is not None:
        h.update("\0".join(vectors.doc_ids).encode("utf-8") + b"\1")
        h.update(np.ascontiguousarray(vectors.chunk_index, dtype=np.int64).tobytes())
        h.update(np.ascontiguousarray(vectors.cu_chunks, dtype=np.int64).tobytes())
    return h.hexdigest()


# ----------------------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------------------


def _state_dependent(spec: str) -> bool:
    """True when a strategy's boundaries come from the late token states (``semantic`` with source=late)."""
    from latechunk.strategies.base import get_strategy

    s = get_strategy(spec)
    return bool(s.needs_sentence_vectors) and getattr(s, "source", "late") == "late"


def _same_boundaries(a: Sequence, b: Sequence) -> bool:
    return len(a) == len(b) and all(
        x.doc_id == y.doc_id and np.array_equal(x.token_spans, y.token_spans) and np.array_equal(x.char_spans, y.char_spans)
        for x, y in zip(a, b)
    )


def _machine() -> dict:
    """nproc, the first lines of lscpu, platform, torch threads."""
    import torch

    try:
        nproc = len(os.sched_getaffinity(0))
    except AttributeError:
        nproc = os.cpu_count() or 0
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10, check=False).stdout
        lscpu_head = lscpu.splitlines()[:15]
    except (OSError, subprocess.SubprocessError):
        lscpu_head = []
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"nproc": nproc, "lscpu_head": lscpu_head, "platform": platform.platform(),
            "torch_threads": torch.get_num_threads(), "gpu": gpu}


def _git_state() -> dict:
    """The checkout's HEAD commit and whether tracked files differ from it ('' / None outside git)."""
    root = str(Path(__file__).resolve().parents[1])
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=False).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=False).stdout.strip()
        return {"commit": head, "dirty": bool(dirty) if head else None}
    except (OSError, subprocess.SubprocessError):
        return {"commit": "", "dirty": None}


def _mean_std(values: dict[str, float]) -> tuple[float, float]:
    mean = mean_over_queries(values)
    var = math.fsum((float(v) - mean) ** 2 for v in values.values()) / len(values)
    return mean, math.sqrt(var)


def _label(mode: str, macro_window: int | None, multi: bool, overlap: int | None = None, multi_o: bool = False) -> str:
    """A system's row label: ``late``, ``late w=256``, ``late w=256 o=32`` (an overlap sweep), ``naive``, ..."""
    what = f"w={macro_window}" + (f" o={overlap}" if multi_o else "")
    if mode in ("late", "fused"):
        return f"{mode} {what}" if multi or multi_o else mode
    return f"{mode} ({what} cuts)" if (multi or multi_o) and macro_window is not None else mode


# ----------------------------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------------------------


def run_compare(
    config: CompareConfig,
    out_dir: str | os.PathLike | None = None,
    *,
    encoder=None,
    dataset: EvalDataset | None = None,
    progress: bool = False,
    command: str | None = None,
) -> CompareResult:
    """Run the comparison (see the module doc) and, with ``out_dir``, write the report folder.

    Args:
        config: What to compare.
        out_dir: Report folder (created); ``None`` writes nothing.
        encoder: A pre-built :class:`~latechunk.encoder.Encoder` (tests); it serves every macro window of the
            sweep, and its ``backend`` must be ``config.backend``.
        dataset: A pre-loaded dataset (tests); else ``config.dataset`` is loaded through the parse cache.
        progress: Progress bars.
        command: The command line, for the manifest.

    Returns:
        A :class:`CompareResult`.

    Raises:
        ValueError: on a dataset that does not load, has neither answer spans nor document qrels for its
            queries, or has no document that embeds (none, or all skipped), a model that does not load (or does
            not export to ONNX with an ONNX backend), an ``encoder`` of another backend than the config's,
            macro-window sizes that repeat once the default is resolved or that the model cannot take (over
            its limit, or under its frame + 16 content tokens), or an index that cannot be built.
        FileNotFoundError: if the dataset path does not exist.
        RuntimeError: if two macro-window passes embedded other documents or (for strategies whose chunks do
            not depend on the late states) gave other boundaries, or late and naive of one strategy ended up
            with different chunk records (bugs).
    """
    import faiss

    from latechunk.config import PipelineConfig
    from latechunk.encoder import Encoder
    from latechunk.index import build_index, index_bytes, query_transform, search_index
    from latechunk.models import ModelFacts
    from latechunk.pipeline import contextual_vectors, embed, fused_vectors, naive_vectors
    from latechunk.sentences import SentenceSegmenter
    from latechunk.titles import document_title
    from latechunk.types import ChunkVectors

    t_start = time.perf_counter()
    seconds: dict[str, float] = {}

    def step(msg: str) -> None:  # one stderr line per post-encoding step (with progress): no silent minutes
        if progress:
            print(f"[compare {time.perf_counter() - t_start:7.1f}s] {msg}", file=sys.stderr, flush=True)

    specs = config.specs()
    # fused systems are made here from the late and naive systems of the same chunks (late of each pass), so the
    # embed() calls run late and naive whenever fused is asked for
    fused = "fused" in config.modes
    pipe_modes = tuple(m for m in config.modes if m != "fused")
    if fused:
        pipe_modes = tuple(dict.fromkeys(("late", *pipe_modes, "naive")))

    def run_config(i: int, w: int | None, ov: int | None) -> PipelineConfig:  # late pass i (naive in the first)
        return PipelineConfig(tuple(specs), modes=pipe_modes if i == 0 else ("late",),
                              include_special=config.include_special, macro_window=w,
                              macro_window_overlap=ov, sentence_workers=config.sentence_workers,
                              late_pooling=config.late_pooling)

    # the settings that need the model (late pooling, each macro window) against its files, before the dataset is
    # parsed or a weight loads; embed() checks them again with the loaded encoder
    facts = encoder.facts if encoder is not None else ModelFacts.read(config.model)
    for i, (w, ov) in enumerate(config.late_passes()):
        run_config(i, w, ov).check_model(facts)

    # 1. the dataset, parsed once
    t0 = time.perf_counter()
    if dataset is None:
        ds, cache_info = load_cached(config.dataset, config.cache_dir, config.use_cache)
    else:
        ds, cache_info = dataset, {"sha256": "", "cache_hit": False, "cache_file": "", "parse_seconds": 0.0}
    seconds["load_dataset"] = time.perf_counter() - t0
    for note in ds.notes:  # what the loader left out (SQuAD v2.0's unanswerable questions)
        print(f"dataset {ds.name}: {note}", file=sys.stderr)
    queries: list[Query] = list(ds.queries)[: config.max_queries] if config.max_queries else list(ds.queries)
    qids = [q.query_id for q in queries]
    references = {q.query_id: q.spans for q in queries}
    has_spans = any(q.spans for q in queries)
    all_qrels = ds.doc_qrels()
    qrels = {qid: all_qrels[qid] for qid in qids if qid in all_qrels}
    if not has_spans and not qrels:
        raise ValueError(f"dataset {ds.name!r} has neither answer spans nor document qrels for its queries"
                         + "".join(f"; {n}" for n in ds.notes))
    all_spans = [s for q in queries for s in q.spans]

    # 2. the encoder (one for every macro window: each is a plan passed to it) and the query vectors, once
    t0 = time.perf_counter()
    if encoder is None:
        encoder = Encoder(config.model, device=config.device, dtype=config.dtype, batch_tokens=config.batch_tokens,
                          backend=config.backend, compile=config.compile,
                          trust_remote_code=config.trust_remote_code)
    elif getattr(encoder, "backend", "torch") != config.backend:
        raise ValueError(f"the encoder given runs backend {encoder.backend!r}, the config asks for {config.backend!r}")
    base = encoder
    default_size = base.macro_window().size  # the model's default window (its sentence-transformers max_seq_length)
    macro_windows = [w if w is not None else default_size for w in config.windows]
    if len(set(macro_windows)) != len(macro_windows):
        raise ValueError(f"window sizes repeat once the default is resolved: {macro_windows}")
    for w in macro_windows:
        if w > base.max_length:
            raise ValueError(f"--window {w} exceeds the model's limit of {base.max_length} tokens")
    # the late passes: (window, overlap) in tokens, defaults resolved and checked before work
    plans = {}
    for w in macro_windows:
        for ov in config.window_overlap:
            plan = base.macro_window(w, ov)
            if (plan.size, plan.overlap) in plans:
                raise ValueError(f"window overlaps repeat once the default is resolved: {list(config.window_overlap)}")
            plans[(plan.size, plan.overlap)] = plan
    passes = list(plans)
    first = passes[0]
    overlaps = list(dict.fromkeys(ov for _, ov in passes))
    multi_o = len(overlaps) > 1
    for spec in config.index_specs():
        spec.index_dim(base.dim)  # a --truncate-dim above the model's dimension fails before any embedding
    seconds["load_model"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    q_before = dict(base.stats)
    xq = base.encode_query([q.text for q in queries], normalize=True)
    seconds["encode_queries"] = time.perf_counter() - t0
    xq_info = {"n": int(xq.shape[0]), "dim": int(xq.shape[1]), "kind": "query", "prompt": base.query_tokenizer.prefix,
               "tokens": base.stats["tokens"] - q_before["tokens"],
               "sha256": hashlib.sha256(np.ascontiguousarray(xq, dtype=np.float32).tobytes()).hexdigest()}

    # 3. one embed() call per macro window: one late pass for every strategy; naive in the first one's call
    embeds = {}
    macro_window_info = []
    # (mode, spec, window) -> naive/contextual vectors of a further window's cuts (state-dependent strategies)
    naive_extra: dict[tuple[str, str, int], tuple[np.ndarray, int, int, float]] = {}
    encoders_of = {"naive": naive_vectors, "contextual": contextual_vectors}
    text_modes = [m for m in pipe_modes if m != "late"]
    # one segmenter for every macro window: each document's sentences are segmented once for the comparison
    segmenter = SentenceSegmenter(workers=config.sentence_workers)  # its workers also end at exit on an error
    for i, lp in enumerate(passes):
        w, ov = lp
        modes = pipe_modes if i == 0 else ("late",)
        t0 = time.perf_counter()
        res = embed(list(ds.documents), base, run_config(i, w, ov), progress=progress, segmenter=segmenter)
        wall = time.perf_counter() - t0
        if not res.documents:  # nothing to index or score: say so instead of failing deep in a metric
            segmenter.close()
            why = "; ".join(f"{s.doc_id}: {s.reason}" for s in res.skipped[:3]) + ("; ..." if len(res.skipped) > 3 else "")
            raise ValueError(f"dataset {ds.name!r}: no document to embed ({len(ds.documents)} documents"
                             + (f", all skipped: {why})" if res.skipped else ")"))
        embeds[lp] = res
        extra_s = 0.0
        if i > 0:
            for spec in specs:
                if not _state_dependent(spec):
                    continue
                for mode in text_modes:  # vectors exactly as embed() makes them, of this window's cuts
                    t1 = time.perf_counter()
                    v, tokens, calls = encoders_of[mode](base, res.documents, res.run(spec).boundaries)
                    naive_extra[(mode, spec, lp)] = (v, tokens, calls, time.perf_counter() - t1)
                    extra_s += naive_extra[(mode, spec, lp)][3]
        # a further window re-encodes naive/contextual for the strategies whose cuts depend on it (semantic): say so
        recut = {m: [sp for sp in specs if (m, sp, lp) in naive_extra] for m in text_modes}
        recut = {m: v for m, v in recut.items() if v}
        macro_window_info.append({
            "window": w, "overlap": ov, "modes": list(modes) + list(recut), "recut": recut,
            "late_tokens": res.stats.tokens["late"], "late_forward_calls": res.stats.forward_calls["late"],
            "naive_tokens": res.stats.tokens["naive"]
            + sum(v[1] for (m, s, ww), v in naive_extra.items() if ww == lp and m == "naive"),
            "naive_forward_calls": res.stats.forward_calls["naive"]
            + sum(v[2] for (m, s, ww), v in naive_extra.items() if ww == lp and m == "naive"),
            **({"contextual_tokens": res.stats.tokens.get("contextual", 0)
                + sum(v[1] for (m, s, ww), v in naive_extra.items() if ww == lp and m == "contextual"),
                "contextual_forward_calls": res.stats.forward_calls.get("contextual", 0)
                + sum(v[2] for (m, s, ww), v in naive_extra.items() if ww == lp and m == "contextual")}
               if "contextual" in config.modes else {}),
            "content_tokens": res.stats.content_tokens, "documents_in": res.stats.documents_in,
            "documents_embedded": len(res.documents),
            "skipped": [{"doc_id": s.doc_id, "reason": s.reason} for s in res.skipped],
            "seconds": {**{k: float(v) for k, v in res.stats.seconds.items()}, "naive_extra": extra_s,
                        "wall": wall + extra_s},
        })
        seconds[f"embed_w{w}" + (f"_o{ov}" if multi_o else "")] = wall + extra_s
    segmenter.close()
    main = embeds[first]
    for lp in passes[1:]:
        if [d.doc_id for d in embeds[lp].documents] != [d.doc_id for d in main.documents]:
            raise RuntimeError(f"window {lp} embedded other documents than window {first}")
        for spec in specs:
            if not _state_dependent(spec) and not _same_boundaries(embeds[lp].run(spec).boundaries,
                                                                   main.run(spec).boundaries):
                raise RuntimeError(f"{spec}: window {lp} gave other boundaries than window {first} (a bug)")

    # 4. systems: (strategy, mode, window, overlap) with their boundaries and vectors
    multi = len(macro_windows) > 1
    n_content = {t_doc.doc_id: tok.n_content for t_doc, tok in zip(main.documents, main.tokenizations)}
    sys_inputs = []  # (System, boundaries, ChunkVectors, encode_seconds, tokens, forward_calls)
    for spec in specs:
        dep = _state_dependent(spec)
        if "late" in pipe_modes:  # (fused needs the late systems too; dropped below if not asked for)
            for w, ov in passes:
                res = embeds[(w, ov)]
                run = res.run(spec)
                late_s = res.stats.seconds["late_encode"]
                sys_inputs.append((System(spec, "late", w, _label("late", w, multi, ov, multi_o), window_overlap=ov),
                                   run.boundaries,
                                   run.vectors["late"], late_s, run.seconds.get("late", late_s) - late_s,
                                   res.stats.tokens["late"], res.stats.forward_calls["late"]))
        for mode in text_modes:  # naive, contextual: made in the first window's call (and per window if dep)
            for i, lp in enumerate(passes if dep else passes[:1]):
                w, ov = lp
                res = embeds[lp]
                run = res.run(spec)
                if i == 0:
                    vec = run.vectors[mode]
                    enc_s, tokens = run.seconds.get(mode, 0.0), run.tokens_encoded.get(mode, 0)
                    calls = None
                else:
                    v, tokens, calls, enc_s = naive_extra[(mode, spec, lp)]
                    late_vec = run.vectors["late"]
                    vec = ChunkVectors(v, late_vec.doc_ids, late_vec.chunk_index, late_vec.cu_chunks, mode,
                                       normalized=True)
                sys_inputs.append((System(spec, mode, w if dep else None,
                                          _label(mode, w if dep else None, multi, ov, multi_o),
                                          window_overlap=ov if dep else None),
                                   run.boundaries, vec, enc_s, 0.0, tokens, calls))

    if fused:  # late (each pass) + naive of the same chunks: latechunk.pipeline.fused_vectors, as embed makes them
        made = []
        for t in sys_inputs:
            s = t[0]
            if s.mode != "late":
                continue
            dep = _state_dependent(s.strategy)
            nv = next(u for u in sys_inputs if u[0].mode == "naive" and u[0].strategy == s.strategy
                      and (u[0].window, u[0].window_overlap) == ((s.window, s.window_overlap) if dep else (None, None)))
            lv = t[2]
            vec = ChunkVectors(fused_vectors(lv.vectors, nv[2].vectors, True), lv.doc_ids, lv.chunk_index,
                               lv.cu_chunks, "fused", normalized=True)
            made.append((System(s.strategy, "fused", s.window, _label("fused", s.window, multi, s.window_overlap,
                                                                      multi_o), window_overlap=s.window_overlap),
                         t[1], vec, t[3] + nv[3], t[4], t[5] + nv[5], None))
        sys_inputs = [t for t in sys_inputs if t[0].mode in config.modes] + made

    # 5. one index per system, one IndexConfig, one depth; then the metrics
    ispecs = config.index_specs()  # the main index first, then the other compact-vector settings
    ispec = ispecs[0]
    k_max = max(config.ks)
    depth_span = k_max * (config.dedup_factor if config.dedup else 1)
    depth = max(depth_span, config.doc_depth if qrels else 0)
    systems: list[System] = []
    chunk_cache: dict[str, dict] = {}  # strategy chunk-records hash -> strategy-level figures
    t_metrics = 0.0
    step(f"index, search and score {len(sys_inputs)} systems x {len(qids)} queries")
    for system, boundaries, vec, enc_s, pool_s, tokens, calls in sys_inputs:
        system.chunks_sha256 = chunk_records_sha256(boundaries, vec)
        t0 = time.perf_counter()
        index = build_index(vec.vectors, ispec, dim=base.dim)
        t_index = time.perf_counter() - t0
        n_bytes = index_bytes(index)
        t0 = time.perf_counter()
        D, I = search_index(index, query_transform(xq, ispec), min(depth, max(index.ntotal, 1)))  # unit-norm
        t_search = time.perf_counter() - t0
        t0 = time.perf_counter()
        # row i of the index = chunk i of the concatenated boundaries
        row_doc = np.repeat(np.arange(len(boundaries)), [len(b) for b in boundaries])
        char_spans = np.concatenate([b.char_spans for b in boundaries]) if boundaries else np.zeros((0, 2), np.int32)
        token_spans = np.concatenate([b.token_spans for b in boundaries]) if boundaries else np.zeros((0, 2), np.int32)
        doc_ids = [b.doc_id for b in boundaries]
        chunk_index = vec.chunk_index

        def score(D, I, doc_ids=doc_ids, row_doc=row_doc, char_spans=char_spans, chunk_index=chunk_index):
            # the per-query metrics of one index's ranking (every setting scored alike)
            rankings: dict[str, list[tuple]] = {}
            for qi, qid in enumerate(qids):
                items = []
                for score, row in zip(D[qi].tolist(), I[qi].tolist()):
                    if row < 0:
                        continue
                    items.append((doc_ids[row_doc[row]], int(char_spans[row, 0]), int(char_spans[row, 1]),
                                  int(chunk_index[row]), float(score)))
                rankings[qid] = items
            per_query: dict[str, dict[str, float]] = {}
            if has_spans:
                span_run = {qid: r[:depth_span] for qid, r in rankings.items()}
                scored_run = ({qid: drop_overlapping(r, k_max) for qid, r in span_run.items()} if config.dedup
                              else span_run)
                for k in config.ks:
                    m = span_metrics(scored_run, references, k)
                    m[f"Dup@{k}"] = {qid: float(duplicate_slots(span_run[qid], k)) for qid in m[f"Dup@{k}"]}
                    per_query.update(m)
            if qrels:
                chunk_run = {qid: {(it[0], it[3]): it[4] for it in r} for qid, r in rankings.items()}
                per_query.update(doc_metrics(qrels, doc_run_from_chunk_run(chunk_run), DEFAULT_DOC_MEASURES))
            return per_query

        per_query = score(D, I)
        system.top_hits = {qid: " | ".join(f"{doc_ids[row_doc[r]]}:{int(char_spans[r, 0])}-{int(char_spans[r, 1])}"
                                           for r in I[qi, :k_max].tolist() if r >= 0)
                           for qi, qid in enumerate(qids)}
        compact = {}
        if len(ispecs) > 1:  # the other compact-vector settings: same vectors, same queries, same scoring
            k_main = 5 if 5 in config.ks else k_max
            compact[ispec.label] = _compact_entry(ispec, per_query, n_bytes, index.ntotal, I, I, k_main,
                                                  time.perf_counter() - t0 + t_search, t_index)
            for other in ispecs[1:]:
                t1 = time.perf_counter()
                idx2 = build_index(vec.vectors, other, dim=base.dim)
                t_index2 = time.perf_counter() - t1
                t1 = time.perf_counter()
                D2, I2 = search_index(idx2, query_transform(xq, other), min(depth, max(idx2.ntotal, 1)))
                compact[other.label] = _compact_entry(other, score(D2, I2), index_bytes(idx2), idx2.ntotal, I2, I,
                                                      k_main, time.perf_counter() - t1, t_index2)
                del idx2
        system.compact = compact
        if config.dedup_threshold is not None:  # embed --dedup's index beside this one: NearDup@k, dedup:<metric>
            extra, n_dropped = dedup_scores(
                vec.vectors, I, qids, lambda v: search_index(build_index(v, ispec, dim=base.dim),
                                                             query_transform(xq, ispec), min(depth, max(len(v), 1))),
                score, config.dedup_threshold, config.ks)
            per_query.update(extra)
        # strategy-level figures (independent of the mode): once per chunk-record set
        fig = chunk_cache.get(system.chunks_sha256)
        if fig is None:
            by_doc = {b.doc_id: b.char_spans for b in boundaries}
            fig = {"omega": {}, "fp": None}
            if has_spans:
                fig["omega"] = {q.query_id: precision_omega(by_doc, q.spans) for q in queries if q.spans}
                fig["fp"] = facts_protected(by_doc, all_spans)
            chunk_cache[system.chunks_sha256] = fig
        if fig["omega"]:
            per_query[OMEGA] = dict(fig["omega"])
        system.per_query = per_query
        for name, values in per_query.items():
            system.aggregates[name], system.std[name] = _mean_std(values)
        if fig["fp"] is not None:
            system.aggregates["FactsProtected"] = fig["fp"]
        t_metrics += time.perf_counter() - t0
        lengths = (token_spans[:, 1].astype(np.int64) - token_spans[:, 0]) if len(token_spans) else np.zeros(0)
        char_lengths = (char_spans[:, 1].astype(np.int64) - char_spans[:, 0]) if len(char_spans) else np.zeros(0)
        strat = _strategy(system.strategy)
        theo = None
        if strat.name == "fixed":
            theo = theoretical_overlap_multiplier(strat.size, strat.overlap)
        system.costs = {
            "chunks": len(lengths),
            "mean_chunk_tokens": float(lengths.mean()) if len(lengths) else 0.0,
            "mean_chunk_chars": float(char_lengths.mean()) if len(char_lengths) else 0.0,
            "tokens_encoded": int(tokens),
            "tokens_encoded_shared": system.mode == "late",
            "forward_calls": calls,
            "overlap_observed": observed_overlap_multiplier({b.doc_id: b.token_spans for b in boundaries},
                                                            {b.doc_id: n_content[b.doc_id] for b in boundaries}),
            "overlap_theoretical": theo,
            "index_bytes": n_bytes,
            "index_ntotal": int(index.ntotal),
            "seconds_encode": float(enc_s),
            "seconds_pool": float(pool_s),
            "seconds": float(enc_s + pool_s),
            "seconds_index": t_index,
            "seconds_search": t_search,
        }
        if config.dedup_threshold is not None:
            system.costs["dedup_dropped"] = n_dropped
        systems.append(system)
    seconds["index_search_metrics"] = t_metrics

    # identical chunk records for every mode of one strategy (and window, for state-dependent cuts)
    for s in systems:
        if s.mode == "late":
            continue
        for other in systems:
            if other is s or other.strategy != s.strategy or other.mode == s.mode:
                continue
            same = (s.window is None or (s.window, s.window_overlap) == (other.window, other.window_overlap)
                    if other.mode == "late" else (s.window, s.window_overlap) == (other.window, other.window_overlap))
            if same and other.chunks_sha256 != s.chunks_sha256:
                raise RuntimeError(f"{s.strategy}: {other.mode} ({other.label}) and {s.mode} ({s.label}) index "
                                   "different chunk records; the comparison would not be fair")

    metric_names = _metric_order(systems, config.ks)
    headline = [m for m in metric_names if m.startswith(("AR@", "SpanRecall@"))] or [
        m for m in metric_names if m in DEFAULT_DOC_MEASURES]
    main_k = 5 if 5 in config.ks else max(config.ks)

    # 6. statistics
    t0 = time.perf_counter()
    step(f"paired bootstrap intervals ({config.n_resamples} resamples)")
    comparisons = _comparisons(systems, config, metric_names, headline, passes)
    seconds["bootstrap"] = time.perf_counter() - t0
    seconds["total"] = time.perf_counter() - t_start

    manifest = {
        "command": command or "",
        "git_commit": (git := _git_state())["commit"],
        "git_dirty": git["dirty"],
        "dataset": {"spec": config.dataset, "name": ds.name, "sha256": cache_info["sha256"],
                    "content_sha256": _dataset_content_sha256(ds),
                    "content_sha256_of": "documents, queries" + (", qrels" if ds.qrels is not None else ""),
                    "cache_hit": cache_info["cache_hit"],
                    "cache_file": cache_info["cache_file"], "documents": len(ds.documents),
                    "queries_total": len(ds.queries), "queries": len(queries),
                    "queries_with_spans": sum(1 for q in queries if q.spans), "spans": len(all_spans),
                    "doc_qrels_queries": len(qrels), "qrels_source": "given" if ds.qrels is not None else "spans",
                    "notes": list(ds.notes)},
        "model": {**base.describe(plans[first]), "batch_tokens": base.batch_tokens},
        "strategies": specs,
        "state_dependent_strategies": [s for s in specs if _state_dependent(s)],
        "modes": list(config.modes),
        "titles": _title_origins(main.documents, document_title),
        "ks": list(config.ks),
        "windows": macro_window_info,
        "index": {**ispec.to_dict(), "gpu": ispec.gpu, "faiss": getattr(faiss, "__version__", "?"),
                  "search_depth": depth, "span_depth": depth_span, "doc_depth": config.doc_depth if qrels else 0,
                  "compact_settings": [{"label": x.label, **x.to_dict(), "faiss_factory": x.faiss_factory}
                                       for x in ispecs]},
        "dedup": config.dedup,
        "query_vectors": xq_info,
        "units": {"span_metrics": "characters (Python str indices) of the source document",
                  "tokens": "model tokens (the model's own tokenizer, frame tokens excluded from chunks)"},
        "doc_level": {"measures": list(DEFAULT_DOC_MEASURES) if qrels else [],
                      "document_score": "max over its retrieved chunks (MaxP)"},
        "bootstrap": {"n_resamples": config.n_resamples, "confidence": config.confidence, "seed": config.seed,
                      "method": "paired percentile bootstrap of the mean per-query difference"},
        "versions": versions("ir_measures"),
        "machine": _machine(),
        "seconds": seconds,
    }
    kept = set(qids)
    cut_qrels = None if ds.qrels is None else {q: r for q, r in ds.qrels.items() if q in kept}
    result = CompareResult(config, systems, comparisons, metric_names, headline, main_k, manifest, embeds,
                           EvalDataset(ds.name, ds.documents, tuple(queries), cut_qrels))
    if out_dir is not None:
        t0 = time.perf_counter()
        write_report(result, out_dir, log=step if progress else None)
        seconds["report"] = time.perf_counter() - t0
        seconds["total"] = time.perf_counter() - t_start
        write_report(result, out_dir, plot=False)  # rewrite results.json/report.md with the final times
    return result


def _compact_entry(spec, per_query: dict, n_bytes: int, ntotal: int, I, I_main, k: int, search_s: float,
                   index_s: float) -> dict:
    """One compact-vector setting of one system: its metrics (means over queries), index bytes and the mean
    share of the main index's top-k ids it also returns in its top k."""
    shared = [len(set(a[:k].tolist()) & set(b[:k].tolist()) - {-1}) / max(1, len(set(b[:k].tolist()) - {-1}))
              for a, b in zip(np.asarray(I), np.asarray(I_main))]
    return {"precision": spec.precision, "truncate_dim": spec.truncate_dim, "faiss_factory": spec.faiss_factory,
            "metrics": {m: mean_over_queries(v) for m, v in per_query.items()},
            "index_bytes": int(n_bytes), "index_ntotal": int(ntotal),
            "overlap_k": int(k), "overlap_with_main": float(np.mean(shared)) if shared else 1.0,
            "seconds_index": float(index_s), "seconds_search_and_score": float(search_s)}


def _title_origins(documents: Sequence, document_title) -> dict:
    """How many documents got their title from each origin (:data:`latechunk.titles.TITLE_ORIGINS` order), and
    a few examples: ``{"origins": {origin: count}, "examples": [{"doc_id", "title", "origin"}, ...]}``."""
    from latechunk.titles import TITLE_ORIGINS

    counts = dict.fromkeys(TITLE_ORIGINS, 0)
    examples = []
    for d in documents:
        title, origin = document_title(d)
        counts[origin] = counts.get(origin, 0) + 1
        if len(examples) < 5:
            examples.append({"doc_id": d.doc_id, "title": title, "origin": origin})
    return {"origins": {k: v for k, v in counts.items() if v}, "examples": examples}


def _strategy(spec: str):
    from latechunk.strategies.base import get_strategy

    return get_strategy(spec)


def _dataset_content_sha256(ds: EvalDataset) -> str:
    """sha256 of what is scored: the documents, the queries with their spans and, where given, the qrels (sorted;
    a dataset without qrels hashes as before they were included, so its recorded runs still merge)."""
    h = hashlib.sha256()
    for d in ds.documents:
        h.update(d.doc_id.encode() + b"\0" + d.text.encode("utf-8") + b"\1")
    for q in ds.queries:
        h.update(q.query_id.encode() + b"\0" + q.text.encode("utf-8") + repr(q.spans).encode() + b"\1")
    if ds.qrels is not None:
        h.update(b"qrels\0" + json.dumps(ds.qrels, sort_keys=True, ensure_ascii=False).encode("utf-8"))
    return h.hexdigest()


def _metric_order(systems: Sequence[System], ks: Sequence[int]) -> list[str]:
    present = set()
    for s in systems:
        present.update(s.per_query)
    order = []
    for prefix in ("AR", "SpanRecall", "SpanPrecision", "SpanIoU"):
        order += [f"{prefix}@{k}" for k in ks]
    order.append(OMEGA)
    order += [f"Dup@{k}" for k in ks]
    order += list(DEFAULT_DOC_MEASURES)
    order += [f"NearDup@{k}" for k in ks]  # compare --dedup-threshold: the full index, then the deduplicated one
    order += [f"{DEDUP_PREFIX}{m}" for m in order]
    return [m for m in order if m in present]


def _boot(a: dict, b: dict, config: CompareConfig) -> dict:
    r = paired_bootstrap(a, b, n_resamples=config.n_resamples, confidence=config.confidence, seed=config.seed)
    return r.to_dict()


def _comparisons(systems: Sequence[System], config: CompareConfig, metric_names: Sequence[str],
                 headline: Sequence[str], passes: Sequence[tuple[int, int]]) -> list[dict]:
    """Paired bootstrap comparisons (each dict: kind, a, b, strategy/mode/window/window_overlap, metric and the
    result). ``passes``: the late passes ``(window, overlap)`` in tokens, the first being the main one. Kinds: mode
    pairs (:data:`MODE_PAIRS`) per strategy and pass; ``strategy`` (A minus B within a mode, late: the first
    pass); ``window`` (window w minus the first window, both at the first overlap); ``overlap`` (overlap o minus
    the first overlap, at the same window)."""
    out: list[dict] = []
    by_key = {s.key: s for s in systems}
    specs = list(dict.fromkeys(s.strategy for s in systems))
    paired_metrics = [m for m in metric_names if m != OMEGA]
    # mode A minus mode B (late - naive, late - contextual, naive - contextual), per strategy and window
    for mode_a, mode_b in MODE_PAIRS:
        if mode_a not in config.modes or mode_b not in config.modes:
            continue
        for s in systems:
            if s.mode != mode_a:
                continue
            other = (by_key.get((s.strategy, mode_b, s.window, s.window_overlap))
                     or by_key.get((s.strategy, mode_b, None, None)))
            if other is None:
                continue
            for m in paired_metrics:
                if m in s.per_query and m in other.per_query:
                    out.append({"kind": f"{mode_a}-{mode_b}", "strategy": s.strategy, "window": s.window,
                                "window_overlap": s.window_overlap, "a": s.label, "b": other.label, "metric": m,
                                **_boot(s.per_query[m], other.per_query[m], config)})
    # strategy A minus B, within a mode (late: the first window)
    for mode in config.modes:
        group: list[System] = []
        for s in systems:  # the first system of each strategy in this mode (late: the first window)
            if (s.mode == mode and (mode == "naive" or (s.window, s.window_overlap) == tuple(passes[0]))
                    and s.strategy not in {g.strategy for g in group}):
                group.append(s)
        for a, b in itertools.combinations(group, 2):
            for m in headline:
                if m in a.per_query and m in b.per_query:
                    out.append({"kind": "strategy", "mode": mode, "window": a.window if mode == "late" else None,
                                "window_overlap": a.window_overlap if mode == "late" else None, "a": a.strategy, "b": b.strategy, "metric": m,
                                **_boot(a.per_query[m], b.per_query[m], config)})
    # window w minus the first window (at the first overlap), and overlap o minus the first overlap (same window)
    windows = list(dict.fromkeys(w for w, _ in passes))
    overlaps = list(dict.fromkeys(o for _, o in passes))
    for spec in specs:
        pairs = [("window", (w, overlaps[0]), (windows[0], overlaps[0])) for w in windows[1:]]
        pairs += [("overlap", (w, o), (w, overlaps[0])) for w in windows for o in overlaps[1:]]
        for kind, (w, o), (rw, ro) in pairs:
            s, ref = by_key.get((spec, "late", w, o)), by_key.get((spec, "late", rw, ro))
            if ref is None or s is None:
                continue
            for m in headline:
                out.append({"kind": kind, "strategy": spec, "window": w, "window_overlap": o, "a": s.label,
                            "b": ref.label, "metric": m, **_boot(s.per_query[m], ref.per_query[m], config)})
    return out
