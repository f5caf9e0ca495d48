"""Stage 5 of ``latechunk compare`` (:func:`eval.harness.run_compare`): one index per system, searched and scored.

Every system (strategy x mode x macro window) is indexed from one :class:`~latechunk.config.IndexConfig`, searched
with the same query vectors to one depth, and scored by the same code (:class:`Scoring`): answer-contained recall,
Chroma's span metrics and duplicate slots at each k, document-level measures through ir_measures where the dataset
has qrels, precision Ω and facts protected (once per set of chunk records), the other compact-vector settings
(``System.compact``) and ``--dedup-threshold``'s deduplicated index, and the system's costs. Metrics come from
:mod:`eval.metrics` only. Tests: ``tests/eval/test_eval_harness.py``, ``tests/pipeline/test_fused.py``.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .config import CompareConfig
from .datasets import Query
from .metrics import (
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
from .result import System

if TYPE_CHECKING:
    from latechunk.types import Boundaries, ChunkVectors

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


@dataclass
class SystemInput:
    """One system before it is indexed: its chunks, its vectors and what making them cost.

    Attributes:
        system: The system (strategy, mode, macro window, overlap, label); scored in place.
        boundaries: The strategy's Boundaries, one per embedded document, in order.
        vectors: Its :class:`~latechunk.types.ChunkVectors` (row i = chunk i of the concatenated boundaries).
        encode_s: Wall seconds of its encoding (late: the shared pass).
        pool_s: Wall seconds of its pooling (late and fused; 0 otherwise).
        tokens: Tokens sent through the encoder for it (late: the shared pass).
        calls: Encoder forward calls, or None where they are not told apart.
    """

    system: System
    boundaries: list[Boundaries]
    vectors: ChunkVectors
    encode_s: float
    pool_s: float
    tokens: int
    calls: int | None


@dataclass
class _Rows:
    """Row i of a system's index = chunk i of its concatenated boundaries: its document and spans."""

    doc_ids: list[str]
    row_doc: np.ndarray
    char_spans: np.ndarray
    token_spans: np.ndarray
    chunk_index: np.ndarray

    @classmethod
    def of(cls, boundaries: Sequence, chunk_index: np.ndarray) -> _Rows:
        empty = np.zeros((0, 2), np.int32)
        return cls([b.doc_id for b in boundaries],
                   np.repeat(np.arange(len(boundaries)), [len(b) for b in boundaries]),
                   np.concatenate([b.char_spans for b in boundaries]) if boundaries else empty,
                   np.concatenate([b.token_spans for b in boundaries]) if boundaries else empty,
                   chunk_index)

    def hit(self, row: int) -> str:
        """``doc_id:char_start-char_end`` of index row ``row``."""
        return f"{self.doc_ids[self.row_doc[row]]}:{int(self.char_spans[row, 0])}-{int(self.char_spans[row, 1])}"


class Scoring:
    """Index, search and score systems alike: one :class:`~latechunk.config.IndexConfig` per compact-vector
    setting (the first is the main index), one search depth, one scoring code.

    Args:
        config: The comparison's settings (ks, dedup, depths, index settings).
        xq: (n_queries, dim) float32 unit query vectors, rows in ``queries`` order.
        dim: The model's vector dimension.
        queries: The scored queries (their answer spans, if any).
        qrels: Document qrels of the queries that have them (``{}``: none).
        n_content: Content tokens per document id (for the observed overlap multiplier).
    """

    def __init__(self, config: CompareConfig, xq: np.ndarray, dim: int, queries: Sequence[Query],
                 qrels: dict, n_content: dict[str, int]) -> None:
        self.config, self.xq, self.dim, self.queries, self.qrels, self.n_content = config, xq, dim, queries, qrels, n_content
        self.qids = [q.query_id for q in queries]
        self.references = {q.query_id: q.spans for q in queries}
        self.has_spans = any(q.spans for q in queries)
        self.all_spans = [s for q in queries for s in q.spans]
        self.ispecs = config.index_specs()  # the main index first, then the other compact-vector settings
        self.ispec = self.ispecs[0]
        self.k_max = max(config.ks)
        self.depth_span = self.k_max * (config.dedup_factor if config.dedup else 1)
        self.depth = max(self.depth_span, config.doc_depth if qrels else 0)
        self.chunk_cache: dict[str, dict] = {}  # strategy chunk-records hash -> strategy-level figures

    def score_all(self, inputs: Sequence[SystemInput], step: Callable[[str], None]) -> tuple[list[System], float]:
        """Index, search and score every system, in order: ``(systems, seconds spent scoring)``."""
        systems: list[System] = []
        t_metrics = 0.0
        step(f"index, search and score {len(inputs)} systems x {len(self.qids)} queries")
        for inp in inputs:
            t_metrics += self.score(inp)
            systems.append(inp.system)
        return systems, t_metrics

    def score(self, inp: SystemInput) -> float:
        """Index, search and score one system (its ``chunks_sha256``, ``per_query``, ``aggregates``, ``std``,
        ``top_hits``, ``compact`` and ``costs`` are set); returns the seconds spent scoring."""
        from latechunk.index import build_index, index_bytes, query_transform, search_index

        system, vec, config = inp.system, inp.vectors, self.config
        system.chunks_sha256 = chunk_records_sha256(inp.boundaries, vec)
        t0 = time.perf_counter()
        index = build_index(vec.vectors, self.ispec, dim=self.dim)
        t_index = time.perf_counter() - t0
        n_bytes = index_bytes(index)
        t0 = time.perf_counter()
        D, I = search_index(index, query_transform(self.xq, self.ispec), min(self.depth, max(index.ntotal, 1)))
        t_search = time.perf_counter() - t0
        t0 = time.perf_counter()
        rows = _Rows.of(inp.boundaries, vec.chunk_index)
        per_query = self.per_query(rows, D, I)
        system.top_hits = {qid: " | ".join(rows.hit(r) for r in I[qi, :self.k_max].tolist() if r >= 0)
                           for qi, qid in enumerate(self.qids)}
        system.compact = {}
        if len(self.ispecs) > 1:  # the other compact-vector settings: same vectors, same queries, same scoring
            main = (per_query, n_bytes, index.ntotal, I, time.perf_counter() - t0 + t_search, t_index)
            system.compact = self._compact(vec.vectors, rows, main)
        n_dropped = None
        if config.dedup_threshold is not None:  # embed --dedup's index beside this one: NearDup@k, dedup:<metric>
            extra, n_dropped = dedup_scores(
                vec.vectors, I, self.qids,
                lambda v: search_index(build_index(v, self.ispec, dim=self.dim), query_transform(self.xq, self.ispec),
                                       min(self.depth, max(len(v), 1))),
                lambda D2, I2: self.per_query(rows, D2, I2), config.dedup_threshold, config.ks)
            per_query.update(extra)
        fig = self._figures(system.chunks_sha256, inp.boundaries)
        if fig["omega"]:
            per_query[OMEGA] = dict(fig["omega"])
        system.per_query = per_query
        for name, values in per_query.items():
            system.aggregates[name], system.std[name] = _mean_std(values)
        if fig["fp"] is not None:
            system.aggregates["FactsProtected"] = fig["fp"]
        t_metrics = time.perf_counter() - t0
        system.costs = self._costs(inp, rows, n_bytes, int(index.ntotal), t_index, t_search)
        if n_dropped is not None:
            system.costs["dedup_dropped"] = n_dropped
        return t_metrics

    def per_query(self, rows: _Rows, D: np.ndarray, I: np.ndarray) -> dict[str, dict[str, float]]:
        """The per-query metrics of one index's ranking (every setting scored alike): ``{metric: {qid: value}}``."""
        config = self.config
        rankings: dict[str, list[tuple]] = {}
        for qi, qid in enumerate(self.qids):
            items = []
            for score, row in zip(D[qi].tolist(), I[qi].tolist()):
                if row < 0:
                    continue
                items.append((rows.doc_ids[rows.row_doc[row]], int(rows.char_spans[row, 0]),
                              int(rows.char_spans[row, 1]), int(rows.chunk_index[row]), float(score)))
            rankings[qid] = items
        per_query: dict[str, dict[str, float]] = {}
        if self.has_spans:
            span_run = {qid: r[:self.depth_span] for qid, r in rankings.items()}
            scored_run = ({qid: drop_overlapping(r, self.k_max) for qid, r in span_run.items()} if config.dedup
                          else span_run)
            for k in config.ks:
                m = span_metrics(scored_run, self.references, k)
                m[f"Dup@{k}"] = {qid: float(duplicate_slots(span_run[qid], k)) for qid in m[f"Dup@{k}"]}
                per_query.update(m)
        if self.qrels:
            chunk_run = {qid: {(it[0], it[3]): it[4] for it in r} for qid, r in rankings.items()}
            per_query.update(doc_metrics(self.qrels, doc_run_from_chunk_run(chunk_run), DEFAULT_DOC_MEASURES))
        return per_query

    def _compact(self, vectors: np.ndarray, rows: _Rows, main: tuple) -> dict:
        """Every compact-vector setting of one system: the main index's entry from ``main`` (its per-query
        metrics, bytes, ntotal, ranking, search-and-score and index seconds), then one more index per setting."""
        from latechunk.index import build_index, index_bytes, query_transform, search_index

        per_query, n_bytes, ntotal, I, search_s, index_s = main
        k_main = 5 if 5 in self.config.ks else self.k_max
        compact = {self.ispec.label: _compact_entry(self.ispec, per_query, n_bytes, ntotal, I, I, k_main, search_s,
                                                    index_s)}
        for other in self.ispecs[1:]:
            t1 = time.perf_counter()
            idx2 = build_index(vectors, other, dim=self.dim)
            t_index2 = time.perf_counter() - t1
            t1 = time.perf_counter()
            D2, I2 = search_index(idx2, query_transform(self.xq, other), min(self.depth, max(idx2.ntotal, 1)))
            compact[other.label] = _compact_entry(other, self.per_query(rows, D2, I2), index_bytes(idx2), idx2.ntotal,
                                                  I2, I, k_main, time.perf_counter() - t1, t_index2)
            del idx2
        return compact

    def _figures(self, chunks_sha256: str, boundaries: Sequence) -> dict:
        """Strategy-level figures (independent of the mode), once per chunk-record set: precision Ω per query
        and facts protected (answer spans only)."""
        fig = self.chunk_cache.get(chunks_sha256)
        if fig is None:
            by_doc = {b.doc_id: b.char_spans for b in boundaries}
            fig = {"omega": {}, "fp": None}
            if self.has_spans:
                fig["omega"] = {q.query_id: precision_omega(by_doc, q.spans) for q in self.queries if q.spans}
                fig["fp"] = facts_protected(by_doc, self.all_spans)
            self.chunk_cache[chunks_sha256] = fig
        return fig

    def _costs(self, inp: SystemInput, rows: _Rows, n_bytes: int, ntotal: int, t_index: float,
               t_search: float) -> dict:
        """A system's costs: chunks and their mean length, tokens and forward calls, overlap multipliers, index
        size and the seconds of each step."""
        token_spans, char_spans, boundaries = rows.token_spans, rows.char_spans, inp.boundaries
        lengths = (token_spans[:, 1].astype(np.int64) - token_spans[:, 0]) if len(token_spans) else np.zeros(0)
        char_lengths = (char_spans[:, 1].astype(np.int64) - char_spans[:, 0]) if len(char_spans) else np.zeros(0)
        strat = _strategy(inp.system.strategy)
        theo = None
        if strat.name == "fixed":
            theo = theoretical_overlap_multiplier(strat.size, strat.overlap)
        return {
            "chunks": len(lengths),
            "mean_chunk_tokens": float(lengths.mean()) if len(lengths) else 0.0,
            "mean_chunk_chars": float(char_lengths.mean()) if len(char_lengths) else 0.0,
            "tokens_encoded": int(inp.tokens),
            "tokens_encoded_shared": inp.system.mode == "late",
            "forward_calls": inp.calls,
            "overlap_observed": observed_overlap_multiplier({b.doc_id: b.token_spans for b in boundaries},
                                                            {b.doc_id: self.n_content[b.doc_id] for b in boundaries}),
            "overlap_theoretical": theo,
            "index_bytes": n_bytes,
            "index_ntotal": ntotal,
            "seconds_encode": float(inp.encode_s),
            "seconds_pool": float(inp.pool_s),
            "seconds": float(inp.encode_s + inp.pool_s),
            "seconds_index": t_index,
            "seconds_search": t_search,
        }


def check_same_chunks(systems: Sequence[System]) -> None:
    """Identical chunk records for every mode of one strategy (and macro window, for state-dependent cuts).

    Raises:
        RuntimeError: if two modes of one strategy index different chunk records (the comparison would not be
            fair).
    """
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


def _mean_std(values: dict[str, float]) -> tuple[float, float]:
    mean = mean_over_queries(values)
    var = math.fsum((float(v) - mean) ** 2 for v in values.values()) / len(values)
    return mean, math.sqrt(var)


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


def _strategy(spec: str):
    from latechunk.strategies.base import get_strategy

    return get_strategy(spec)
