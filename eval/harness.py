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

The stages, each its own function: :func:`_load_data` (1), :func:`_load_encoder` and :func:`_encode_queries` (2),
:func:`eval.systems.embed_passes` (3) and :func:`eval.systems.system_inputs` (the systems, fused ones made by
:func:`latechunk.pipeline.fused_chunk_vectors` from the late and naive vectors of the same chunks),
:class:`eval.scoring.Scoring` (4, 5), :func:`_comparisons` (6), :func:`_manifest` and
:func:`eval.report.write_report` (7).

Every number except wall times is a function of the inputs: two runs give identical numbers (flat index, fixed
bootstrap seed, deterministic batching). Tests: ``tests/eval/test_eval_harness.py``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from latechunk.provenance import versions

from .cache import load_cached
from .config import DEFAULT_STRATEGIES, CompareConfig
from .datasets import EvalDataset, Query
from .metrics import DEDUP_PREFIX, DEFAULT_DOC_MEASURES
from .report import write_report
from .result import MODE_PAIRS, CompareResult, System
from .scoring import OMEGA, Scoring, check_same_chunks, chunk_records_sha256
from .stats import paired_bootstrap
from .systems import ComparePlan, LatePasses, embed_passes, state_dependent, system_inputs

__all__ = [
    "DEFAULT_STRATEGIES",
    "MODE_PAIRS",
    "OMEGA",
    "CompareConfig",
    "CompareResult",
    "System",
    "chunk_records_sha256",
    "run_compare",
]

log = logging.getLogger("latechunk.eval")


# ----------------------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------------------------
# The run, in stages
# ----------------------------------------------------------------------------------------------------------


class _Clock:
    """The run's wall seconds per stage (``manifest["seconds"]``) and, with ``progress``, one stderr line per
    post-encoding step (no silent minutes)."""

    def __init__(self, progress: bool) -> None:
        self.t_start = time.perf_counter()
        self.seconds: dict[str, float] = {}
        self.progress = progress

    def step(self, msg: str) -> None:
        if self.progress:
            print(f"[compare {time.perf_counter() - self.t_start:7.1f}s] {msg}", file=sys.stderr, flush=True)

    def total(self) -> None:
        self.seconds["total"] = time.perf_counter() - self.t_start


@dataclass
class _Data:
    """The dataset, parsed once, and the queries scored (``--max-queries``) with their document qrels."""

    ds: EvalDataset
    cache_info: dict
    queries: list[Query]
    qrels: dict

    @property
    def all_spans(self) -> list:
        return [s for q in self.queries for s in q.spans]


def _load_data(config: CompareConfig, dataset: EvalDataset | None, seconds: dict) -> _Data:
    """Stage 1: the dataset through the parse cache (or the one given), its queries and their qrels.

    Raises:
        ValueError: if the queries have neither answer spans nor document qrels.
    """
    t0 = time.perf_counter()
    if dataset is None:
        ds, cache_info = load_cached(config.dataset, config.cache_dir, config.use_cache)
    else:
        ds, cache_info = dataset, {"sha256": "", "cache_hit": False, "cache_file": "", "parse_seconds": 0.0}
    seconds["load_dataset"] = time.perf_counter() - t0
    for note in ds.notes:  # what the loader left out (SQuAD v2.0's unanswerable questions)
        print(f"dataset {ds.name}: {note}", file=sys.stderr)
    queries: list[Query] = list(ds.queries)[: config.max_queries] if config.max_queries else list(ds.queries)
    all_qrels = ds.doc_qrels()
    qrels = {q.query_id: all_qrels[q.query_id] for q in queries if q.query_id in all_qrels}
    if not any(q.spans for q in queries) and not qrels:
        raise ValueError(f"dataset {ds.name!r} has neither answer spans nor document qrels for its queries"
                         + "".join(f"; {n}" for n in ds.notes))
    return _Data(ds, cache_info, queries, qrels)


def _load_encoder(config: CompareConfig, encoder, seconds: dict):
    """Stage 2: the encoder (one for every macro window: each is a plan passed to it) and the late passes, checked
    before any work: ``(encoder, passes)``.

    Raises:
        ValueError: on an encoder of another backend, macro-window sizes or overlaps that repeat once the default
            is resolved, a window over the model's limit, or a ``--truncate-dim`` above its dimension.
    """
    from latechunk.encoder import Encoder

    t0 = time.perf_counter()
    if encoder is None:
        encoder = Encoder(config.model, device=config.device, dtype=config.dtype, batch_tokens=config.batch_tokens,
                          backend=config.backend, compile=config.compile,
                          trust_remote_code=config.trust_remote_code)
    elif getattr(encoder, "backend", "torch") != config.backend:
        raise ValueError(f"the encoder given runs backend {encoder.backend!r}, the config asks for {config.backend!r}")
    default_size = encoder.macro_window().size  # the model's default window (its sentence-transformers max_seq_length)
    macro_windows = [w if w is not None else default_size for w in config.macro_windows]
    if len(set(macro_windows)) != len(macro_windows):
        raise ValueError(f"window sizes repeat once the default is resolved: {macro_windows}")
    for w in macro_windows:
        if w > encoder.max_length:
            raise ValueError(f"--window {w} exceeds the model's limit of {encoder.max_length} tokens")
    plans = {}
    for w in macro_windows:
        for ov in config.macro_window_overlaps:
            plan = encoder.macro_window(w, ov)
            if (plan.size, plan.overlap) in plans:
                raise ValueError(f"window overlaps repeat once the default is resolved: {list(config.macro_window_overlaps)}")
            plans[(plan.size, plan.overlap)] = plan
    for spec in config.index_specs():
        spec.index_dim(encoder.dim)  # a --truncate-dim above the model's dimension fails before any embedding
    seconds["load_model"] = time.perf_counter() - t0
    return encoder, LatePasses(plans, macro_windows)


def _encode_queries(encoder, queries: Sequence[Query], seconds: dict) -> tuple[np.ndarray, dict]:
    """Stage 2b: every query encoded once, with the model's query prompt and pooling: ``(xq, manifest entry)``;
    every system searches with the same ``xq``."""
    t0 = time.perf_counter()
    q_before = dict(encoder.stats)
    xq = encoder.encode_query([q.text for q in queries], normalize=True)
    seconds["encode_queries"] = time.perf_counter() - t0
    xq_info = {"n": int(xq.shape[0]), "dim": int(xq.shape[1]), "kind": "query",
               "prompt": encoder.query_tokenizer.prefix, "tokens": encoder.stats["tokens"] - q_before["tokens"],
               "sha256": hashlib.sha256(np.ascontiguousarray(xq, dtype=np.float32).tobytes()).hexdigest()}
    return xq, xq_info


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
    clock = _Clock(progress)
    plan = ComparePlan.of(config)
    plan.check_model(encoder)
    data = _load_data(config, dataset, clock.seconds)  # 1. the dataset, parsed once
    base, lp = _load_encoder(config, encoder, clock.seconds)  # 2. the encoder and the query vectors, once
    xq, xq_info = _encode_queries(base, data.queries, clock.seconds)
    embeds, pass_info, recut = embed_passes(plan, lp, data.ds, base, progress, clock.seconds)  # 3. the late passes
    inputs = system_inputs(plan, lp, embeds, recut)  # the systems: strategy x mode x window
    main = embeds[lp.first]
    n_content = {d.doc_id: tok.n_content for d, tok in zip(main.documents, main.tokenizations)}
    scoring = Scoring(config, xq, base.dim, data.queries, data.qrels, n_content)  # 4. and 5.: index, metrics
    systems, clock.seconds["index_search_metrics"] = scoring.score_all(inputs, clock.step)
    check_same_chunks(systems)
    metric_names = _metric_order(systems, config.ks)
    headline = [m for m in metric_names if m.startswith(("AR@", "SpanRecall@"))] or [
        m for m in metric_names if m in DEFAULT_DOC_MEASURES]
    main_k = 5 if 5 in config.ks else max(config.ks)
    t0 = time.perf_counter()  # 6. statistics
    clock.step(f"paired bootstrap intervals ({config.n_resamples} resamples)")
    comparisons = _comparisons(systems, config, metric_names, headline, lp.passes)
    clock.seconds["bootstrap"] = time.perf_counter() - t0
    clock.total()
    manifest = _manifest(plan, data, base, lp, main.documents, pass_info, scoring, xq_info, clock.seconds, command)
    kept = {q.query_id for q in data.queries}
    ds = data.ds
    cut_qrels = None if ds.qrels is None else {q: r for q, r in ds.qrels.items() if q in kept}
    result = CompareResult(config, systems, comparisons, metric_names, headline, main_k, manifest, embeds,
                           EvalDataset(ds.name, ds.documents, tuple(data.queries), cut_qrels))
    if out_dir is not None:  # 7. the report
        t0 = time.perf_counter()
        write_report(result, out_dir, log=clock.step if progress else None)
        clock.seconds["report"] = time.perf_counter() - t0
        clock.total()
        write_report(result, out_dir, plot=False)  # rewrite results.json/report.md with the final times
    return result


def _manifest(plan: ComparePlan, data: _Data, base, lp: LatePasses, documents: Sequence, pass_info: list[dict],
              scoring: Scoring, xq_info: dict, seconds: dict, command: str | None) -> dict:
    """The report's manifest: the command and checkout, the dataset and its hashes, the model, the strategies and
    modes, the late passes, the index settings and depths, the query vectors, units, the bootstrap, versions,
    the machine and the seconds per stage (``seconds`` itself, so later stages still show)."""
    import faiss

    from latechunk.titles import document_title

    config, ds, qrels, ispec = plan.config, data.ds, data.qrels, scoring.ispec
    all_spans = data.all_spans
    return {
        "command": command or "",
        "git_commit": (git := _git_state())["commit"],
        "git_dirty": git["dirty"],
        "dataset": {"spec": config.dataset, "name": ds.name, "sha256": data.cache_info["sha256"],
                    "content_sha256": _dataset_content_sha256(ds),
                    "content_sha256_of": "documents, queries" + (", qrels" if ds.qrels is not None else ""),
                    "cache_hit": data.cache_info["cache_hit"],
                    "cache_file": data.cache_info["cache_file"], "documents": len(ds.documents),
                    "queries_total": len(ds.queries), "queries": len(data.queries),
                    "queries_with_spans": sum(1 for q in data.queries if q.spans), "spans": len(all_spans),
                    "doc_qrels_queries": len(qrels), "qrels_source": "given" if ds.qrels is not None else "spans",
                    "notes": list(ds.notes)},
        "model": {**base.describe(lp.plans[lp.first]), "batch_tokens": base.batch_tokens},
        "strategies": plan.specs,
        "state_dependent_strategies": [s for s in plan.specs if state_dependent(s)],
        "modes": list(config.modes),
        "titles": _title_origins(documents, document_title),
        "ks": list(config.ks),
        "windows": pass_info,
        "index": {**ispec.to_dict(), "gpu": ispec.gpu, "faiss": getattr(faiss, "__version__", "?"),
                  "search_depth": scoring.depth, "span_depth": scoring.depth_span,
                  "doc_depth": config.doc_depth if qrels else 0,
                  "compact_settings": [{"label": x.label, **x.to_dict(), "faiss_factory": x.faiss_factory}
                                       for x in scoring.ispecs]},
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
