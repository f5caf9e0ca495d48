"""The run of one :func:`~latechunk.pipeline.iter_embed` call (:class:`_Run`): one group's work in two halves.

- prefetch thread (:meth:`_Run.prepared_groups`): read input items, tokenize documents in batches, screen them
  (no content tokens, too long with ``long_documents="skip"``), form groups by token budget, segment the group's
  sentences ahead (:func:`~latechunk.pipeline.items.presegment_for`) and split every strategy that needs no
  sentence vectors. It fills the group's tokenize/split timings, then hands the group over.
- calling thread (:meth:`_Run.embed_group`): the split of strategies whose sentence vectors come from a named
  model, the streamed late pass (:meth:`Encoder.iter_token_states <latechunk.encoder.Encoder.iter_token_states>`
  into the segment sums of :mod:`latechunk.pipeline.sums`), the split of strategies that read the late pass's
  sentence vectors (``semantic``), late vectors from the sums, and naive, fused and contextual vectors
  (:mod:`latechunk.pipeline.modes`).

:func:`_sentence_encoders` loads the models of ``semantic:source=MODEL`` before any work.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from latechunk.config import PipelineConfig
from latechunk.encoder import Encoder
from latechunk.pipeline.items import (
    _Entry,
    _item_batches,
    _split_failed,
    _TextMeter,
    _tokenize_batch,
    presegment_for,
)
from latechunk.pipeline.modes import (
    _model_sentence_vectors,
    _pool_spans,
    contextual_vectors,
    fused_vectors,
    naive_vectors,
)
from latechunk.pipeline.prefetch import _TRIM_CHARS, _release_free_heap
from latechunk.pipeline.results import GroupResult, PipelineStats
from latechunk.pipeline.sums import _reads_late_sentences, _SegmentSums, _summed_sentence_vectors
from latechunk.sentences import SentenceSegmenter
from latechunk.strategies.base import Strategy
from latechunk.types import Boundaries, Document, Skipped, Tokenization

log = logging.getLogger("latechunk")


def _sentence_encoders(config: PipelineConfig, encoder: Encoder,
                       given: dict[str, Encoder] | None) -> dict[str, Encoder]:
    """The encoders of ``semantic:source=MODEL`` by model name: ``given``, and each other model a strategy names,
    loaded here on ``encoder``'s device (so a bad name fails before any work)."""
    run_encoders = dict(given or {})
    for s in config.strategies:
        source = getattr(s, "source", "late")
        if s.needs_sentence_vectors and source != "late" and source not in run_encoders:
            run_encoders[source] = Encoder(source, device=str(encoder.device))
    return run_encoders


class _Run:
    """What one :func:`~latechunk.pipeline.iter_embed` call holds: the encoder, the config, the macro-window
    plan, the sentence segmenter and the sentence encoders of ``semantic:source=MODEL``; and the work on one group,
    in two halves: :meth:`prepared_groups` (the prefetch thread) and :meth:`embed_group` (the calling thread)."""

    def __init__(self, encoder: Encoder, config: PipelineConfig, segmenter: SentenceSegmenter,
                 sentence_encoders: dict[str, Encoder], on_text_bytes: Callable[[int], None] | None = None) -> None:
        self.encoder = encoder
        self.on_text_bytes = on_text_bytes
        self.config = config
        # a parameter left to the model (semantic's max_tokens) is capped at the model's content limit
        content_limit = encoder.max_length - encoder.tokenizer.n_frame
        self.strats = tuple(s.for_model(content_limit) for s in config.strategies)
        self.segmenter = segmenter
        self.sentence_encoders = sentence_encoders
        # the one check of the settings that need the model (late pooling, the macro window), before any
        # document is read: the Python API gets what the command line checks before loading
        self.macro_window = config.check_model(encoder.facts)
        assert self.macro_window is not None  # a loaded encoder knows its input limit and frame
        self.max_tokens = self.macro_window.size if config.long_documents == "skip" else None

    # -------------------------------------------------------------------- prefetch thread
    def prepared_groups(self, items: Iterable[Document | Skipped],
                        select_group: Callable[[int], bool] | None) -> Iterator[tuple[GroupResult, list[_Entry]]]:
        """Groups of input items (with their entries), tokenized, screened and (for selected groups) split by every strategy that
        needs no sentence vectors. Runs in the prefetch thread; each group's stats are written here first."""
        group: list[_Entry] = []
        tokens, tokenize_s, gi = 0, 0.0, 0
        for batch in _item_batches(items):
            t0 = time.perf_counter()
            _tokenize_batch(self.encoder, batch, self.max_tokens)
            if sum(len(e.item.text) for e in batch if isinstance(e.item, Document)) >= _TRIM_CHARS:
                _release_free_heap()
            tokenize_s += time.perf_counter() - t0
            for e in batch:
                group.append(e)
                # a passed-through item may carry a weight (embed --reuse: a reused document's tokens), so that a
                # run of them still closes groups (shards) of about group_tokens
                weight = len(e.tok) if e.tok is not None else int(getattr(e.item, "tokens", 0) or 0)
                if weight:
                    tokens += weight
                    if tokens >= self.config.group_tokens:
                        yield self._presplit(gi, group, tokenize_s, select_group)
                        group, tokens, tokenize_s, gi = [], 0, 0.0, gi + 1
        if group:
            yield self._presplit(gi, group, tokenize_s, select_group)

    def _presplit(self, gi: int, group: list[_Entry], tokenize_s: float,
                  select_group: Callable[[int], bool] | None) -> tuple[GroupResult, list[_Entry]]:
        """Split a group by the strategies that need no sentence vectors. Groups depend on token counts alone
        (they are formed before the split, so a document whose chunking fails still counts its tokens), and an
        unselected group is not chunked at all."""
        g = GroupResult(index=gi, start=group[0].pos, items=[e.item for e in group], normalized=self.config.normalize)
        g.stats.documents_in = sum(isinstance(e.item, Document) for e in group)
        g.stats.seconds["tokenize"] = tokenize_s
        g.selected = select_group is None or select_group(gi)
        if not g.selected:
            return g, group
        t0 = time.perf_counter()
        docs = [(e.item, e.tok) for e in group if e.tok is not None]
        try:  # the group's sentences, segmented once for every strategy (in worker processes if set)
            presegment_for(self.strats, docs, self.segmenter)
        except Exception as err:  # noqa: BLE001  (a speed-up only: each split segments what it needs)
            log.warning("sentence segmentation ahead of the split failed: %s: %s", type(err).__name__, err)
        for e in group:
            if e.tok is None:
                continue
            try:
                e.pre = [None if s.needs_sentence_vectors else s.split(e.item, e.tok, sentences=self.segmenter)
                         for s in self.strats]
            except Exception as err:  # noqa: BLE001  (a bad document is listed, never fatal)
                e.skip, e.tok = _split_failed(e.item, err), None
        g.stats.seconds["split"] = time.perf_counter() - t0
        return g, group

    # -------------------------------------------------------------------- calling thread
    def embed_group(self, g: GroupResult, entries: list[_Entry], progress: bool) -> GroupResult:
        """Encode, split (sentence-vector strategies), pool, naive- and contextual-encode one group, in place.

        The late pass is streamed (:meth:`_late_pass`): each forward batch is pooled into the sums of the
        segments the group's spans need and dropped, so memory holds one batch and those sums, never a whole
        long document's token states. The steps: :meth:`_split_before_pass` (the cut points), the late pass,
        :meth:`_split_after_pass` (``semantic`` on the pass's sentence vectors), :meth:`_keep` (the embedded
        documents), :meth:`_late_spans` (where each chunk lies in the sums), then :meth:`_strategy_vectors` per
        strategy.
        """
        meter = _TextMeter(self.on_text_bytes, g.items)
        if not g.selected:  # someone else's group: which documents it holds, nothing chunked or encoded
            g.documents = [e.item for e in entries if e.tok is not None]
            g.skipped = [e.skip for e in entries if e.tok is None]
            meter.finish()
            return g
        live, points = self._split_before_pass(entries, g.stats)
        sums = None
        if self.config.needs_token_states and live:
            meter.start_pass([e.item for e in live], [e.tok for e in live])
            sums = self._late_pass([e.tok for e in live], points, g.stats, progress, meter,
                                   [e.window_ends for e in live])
        kept = self._split_after_pass(live, sums, g.stats)
        self._keep(g, entries, kept)
        spans: dict[tuple[str, int], np.ndarray] = {}  # (spec, kept index) -> pooled token spans
        ranges: dict[tuple[str, int], np.ndarray] = {}  # (spec, kept index) -> their segment ranges in sums
        if self.config.pools_late and kept:
            sums, spans, ranges = self._late_spans(sums, kept, g.stats)
        for j, s in enumerate(self.strats):
            self._strategy_vectors(g, s, [per[j] for _, _, per in kept], sums, spans, ranges)
        meter.finish()
        return g

    def _split_before_pass(self, entries: list[_Entry], stats: PipelineStats
                           ) -> tuple[list[_Entry], list[np.ndarray]]:
        """The group's documents that split before the late pass (:meth:`_presplit_late`), with the cut points of
        each; a document whose split fails is skipped for every strategy."""
        t0 = time.perf_counter()
        live: list[_Entry] = []
        points: list[np.ndarray] = []
        for e in entries:
            if e.tok is None:
                continue
            try:
                p = self._presplit_late(e, self.config.pools_late)
            except Exception as err:  # noqa: BLE001  (a failing document is skipped for every strategy)
                e.skip, e.tok = _split_failed(e.item, err), None
                continue
            live.append(e)
            points.append(p)
        stats.seconds["split"] += time.perf_counter() - t0
        return live, points

    def _split_after_pass(self, live: list[_Entry], sums: _SegmentSums | None, stats: PipelineStats
                          ) -> list[tuple[int, _Entry, list[Boundaries]]]:
        """Each live document's Boundaries per strategy, the strategies that read the late pass's sentence vectors
        split now: ``(index in sums, entry, boundaries per strategy)``; a document whose split fails is skipped
        for every strategy."""
        t0 = time.perf_counter()
        kept: list[tuple[int, _Entry, list[Boundaries]]] = []
        for i, e in enumerate(live):
            try:
                per = [b if b is not None else s.split(e.item, e.tok, _summed_sentence_vectors(sums, i),
                                                        sentences=self.segmenter)
                       for s, b in zip(self.strats, e.pre)]
            except Exception as err:  # noqa: BLE001  (a failing document is skipped for every strategy)
                e.skip, e.tok = _split_failed(e.item, err), None
                continue
            kept.append((i, e, per))
        stats.seconds["split"] += time.perf_counter() - t0
        return kept

    def _keep(self, g: GroupResult, entries: list[_Entry], kept: list[tuple[int, _Entry, list[Boundaries]]]) -> None:
        """Record the group's embedded documents, their tokenizations and unknown characters, and its skipped
        items."""
        g.documents = [e.item for _, e, _ in kept]
        g.tokenizations = [e.tok for _, e, _ in kept]
        count_unknown = getattr(self.encoder.tokenizer, "unknown_chars", None)
        g.unknown_chars = [count_unknown(t) for t in g.tokenizations] if callable(count_unknown) else []
        g.skipped = [e.skip for e in entries if e.tok is None]
        g.stats.content_tokens += sum(t.n_content for t in g.tokenizations)

    def _late_spans(self, sums: _SegmentSums, kept: list[tuple[int, _Entry, list[Boundaries]]],
                    stats: PipelineStats) -> tuple[_SegmentSums, dict, dict]:
        """The token spans late mode pools, per ``(spec, kept index)``, and their segment ranges in the sums
        (:meth:`_locate`, which may add a second pass): ``(sums, spans, ranges)``."""
        t0 = time.perf_counter()
        spans = {(s.spec, k): self._pooled_spans(e, j, per[j])
                 for k, (_, e, per) in enumerate(kept) for j, s in enumerate(self.strats)}
        sums, ranges = self._locate(sums, [i for i, _, _ in kept], [e.tok for _, e, _ in kept], spans, stats,
                                    [e.window_ends for _, e, _ in kept])
        stats.seconds["pool"] += time.perf_counter() - t0
        return sums, spans, ranges

    def _strategy_vectors(self, g: GroupResult, s: Strategy, b_list: list[Boundaries], sums: _SegmentSums | None,
                          spans: dict[tuple[str, int], np.ndarray], ranges: dict[tuple[str, int], np.ndarray]) -> None:
        """One strategy's boundaries and vectors of every mode of the run, into ``g``: late pooled from the sums,
        naive and contextual each in one length-sorted encode call, fused from the late and naive vectors."""
        cfg, stats = self.config, g.stats
        g.boundaries[s.spec] = b_list
        g.vectors[s.spec] = {}
        by = stats.seconds_by_strategy.setdefault(s.spec, {"pool": 0.0, "naive": 0.0})
        late_v = naive_v = None
        if cfg.pools_late:  # late or fused
            late_v = self._pooled(s, len(b_list), sums, spans, ranges, stats, by)
            if "late" in cfg.modes:
                g.vectors[s.spec]["late"] = late_v
        if cfg.encodes_naive:  # naive or fused
            naive_v = self._encoded("naive", s, g.documents, b_list, stats, by)
            if "naive" in cfg.modes:
                g.vectors[s.spec]["naive"] = naive_v
        if "fused" in cfg.modes:  # the two vectors of each chunk, unit-normalised and summed
            g.vectors[s.spec]["fused"] = fused_vectors(late_v, naive_v, cfg.normalize)
        if "contextual" in cfg.modes:  # header + blank line + naive text
            g.vectors[s.spec]["contextual"] = self._encoded("contextual", s, g.documents, b_list, stats, by)

    def _pooled(self, s: Strategy, n_docs: int, sums: _SegmentSums | None, spans: dict, ranges: dict,
                stats: PipelineStats, by: dict[str, float]) -> np.ndarray:
        """Late vectors of strategy ``s``'s chunks of the group's ``n_docs`` kept documents, in one call on the
        sums: (n_chunks, dim) float32."""
        t0 = time.perf_counter()
        keys = [(s.spec, k) for k in range(n_docs)]
        if keys:  # the strategy's chunks of the group in one call
            vecs = sums.means(np.concatenate([ranges[x] for x in keys]),
                              np.concatenate([spans[x] for x in keys]), self.config.normalize)
            late_v = vecs.cpu().numpy().astype(np.float32, copy=False)
        else:
            late_v = np.zeros((0, self.encoder.dim), np.float32)
        dt = time.perf_counter() - t0
        stats.seconds["pool"] += dt
        by["pool"] += dt
        return late_v

    def _encoded(self, mode: str, s: Strategy, docs: list[Document], b_list: list[Boundaries], stats: PipelineStats,
                 by: dict[str, float]) -> np.ndarray:
        """Naive or contextual vectors of strategy ``s``'s chunks in one length-sorted encode call (:func:`naive_vectors`,
        :func:`contextual_vectors`), counted in ``stats``: (n_chunks, dim) float32."""
        t0 = time.perf_counter()
        encode = naive_vectors if mode == "naive" else contextual_vectors
        vectors, n_tok, n_calls = encode(self.encoder, docs, b_list, self.config.normalize)
        dt = time.perf_counter() - t0
        if mode == "naive":
            stats.seconds["naive_encode"] += dt
            by["naive"] += dt
            stats.tokens["naive"] += n_tok
            stats.naive_tokens_by_strategy[s.spec] = stats.naive_tokens_by_strategy.get(s.spec, 0) + n_tok
            stats.forward_calls["naive"] += n_calls
        else:
            stats.seconds["contextual_encode"] += dt
            by["contextual"] = by.get("contextual", 0.0) + dt
            stats.tokens["contextual"] = stats.tokens.get("contextual", 0) + n_tok
            stats.contextual_tokens_by_strategy[s.spec] = stats.contextual_tokens_by_strategy.get(s.spec, 0) + n_tok
            stats.forward_calls["contextual"] = stats.forward_calls.get("contextual", 0) + n_calls
        return vectors

    def _presplit_late(self, e: _Entry, late: bool) -> np.ndarray:
        """Split what can be split before the late pass and return the cut points its sums need.

        Strategies whose sentence vectors come from a named model split here (their chunks are then known);
        those that read the late pass's own sentence vectors (``semantic``) split after it, and give their
        :meth:`Strategy.cut_points` instead (sentence spans and every possible chunk end). Returns the sorted
        unique token positions of the document (0 and ``len(tok)`` included) where the late pass cuts its
        sums: the ends of every span the group will pool. A strategy that cannot say where it may cut gets
        every token position (its document's sums are then as large as its token states).
        """
        tok, cfg = e.tok, self.config
        n = len(tok)
        ends: list[np.ndarray] = [np.asarray([0, n], dtype=np.int64)]
        # chunk-aligned macro windows stop only where every strategy of the pass may end a chunk
        align = cfg.macro_window_align == "chunks"
        shared: np.ndarray | None = None
        points: np.ndarray | None = None
        for j, s in enumerate(self.strats):
            b = e.pre[j]
            if b is None and not _reads_late_sentences(s):
                b = e.pre[j] = s.split(e.item, tok, _model_sentence_vectors(self.sentence_encoders[getattr(s, 'source', 'late')]),
                                       sentences=self.segmenter)
            if b is not None:
                if late:
                    ends.append(self._pooled_spans(e, j, b).reshape(-1))
                if align:
                    shared = _shared_ends(shared, b.token_spans[:, 1])
                continue
            cuts = s.cut_points(e.item, tok, self.segmenter)
            if cuts is None:
                points = np.arange(n + 1, dtype=np.int64)
                continue
            ends.append(np.asarray(cuts, dtype=np.int64).reshape(-1))
            if align:
                shared = _shared_ends(shared, ends[-1])
        e.window_ends = shared if align else None
        return points if points is not None else np.unique(np.concatenate(ends))

    def _pooled_spans(self, e: _Entry, j: int, b: Boundaries) -> np.ndarray:
        """The token spans late mode pools for strategy ``j``'s chunks ``b`` of entry ``e`` (its
        :meth:`~latechunk.strategies.base.Strategy.pool_spans`, the frame added with ``include_special``): (n, 2)
        int64 document token positions, computed once per entry and strategy (the cut points and the pooling
        both read them)."""
        if j not in e.pooled:
            s = self.strats[j]
            e.pooled[j] = _pool_spans(b, e.tok, self.config.include_special,
                                      s.pool_spans(b, e.item, e.tok, self.segmenter))
        return e.pooled[j]

    def _late_pass(self, toks: list[Tokenization], points: list[np.ndarray], stats: PipelineStats,
                   progress: bool, meter: _TextMeter | None,
                   window_ends: list[np.ndarray | None] | None = None) -> _SegmentSums:
        """One streamed late pass over ``toks``: the sums of token states between consecutive ``points`` of
        each document, pooled one forward batch at a time; ``window_ends`` per document: where a chunk-aligned
        macro window may stop keeping states (``None``: token-aligned windows)."""
        enc = self.encoder
        before = dict(enc.stats)
        t0 = time.perf_counter()
        sums = _SegmentSums(points, enc.dim, enc.device)
        for batch in enc.iter_token_states(toks, self.macro_window, progress=progress, window_ends=window_ends):
            sums.add(batch)
            if meter is not None:
                meter.encoded(batch.blocks)
        stats.seconds["late_encode"] += time.perf_counter() - t0
        stats.tokens["late"] += enc.stats["tokens"] - before["tokens"]
        stats.forward_calls["late"] += enc.stats["forward_calls"] - before["forward_calls"]
        return sums

    def _locate(self, sums: _SegmentSums, docs: list[int], toks: list[Tokenization],
                spans: dict[tuple[str, int], np.ndarray], stats: PipelineStats,
                window_ends: list[np.ndarray | None] | None = None
                ) -> tuple[_SegmentSums, dict[tuple[str, int], np.ndarray]]:
        """Where each span lies in ``sums`` (segment ranges); ``docs[k]`` is kept document k's index in
        ``sums``. A document whose chunks end where its cut points did not say (a strategy's
        :meth:`Strategy.cut_points` missed one) is encoded once more, cut at its actual chunk ends, so its
        vectors are exact all the same (in the same macro windows: ``window_ends[k]``, as the first pass)."""
        ranges: dict[tuple[str, int], np.ndarray] = {}
        again: list[int] = []
        for k, i in enumerate(docs):
            located = {s.spec: sums.locate(i, spans[s.spec, k]) for s in self.strats}
            if any(r is None for r in located.values()):
                again.append(k)
            else:
                ranges.update({(spec, k): r for spec, r in located.items()})
        if not again:
            return sums, ranges
        log.warning("%d document(s) encoded a second time to pool chunks that end outside their cut points: %s",
                    len(again), ", ".join(str(k) for k in again[:5]))
        points = [np.unique(np.concatenate([np.asarray([0, len(toks[k])], np.int64)]
                                           + [spans[s.spec, k].reshape(-1) for s in self.strats])) for k in again]
        extra = self._late_pass([toks[k] for k in again], points, stats, False, None,
                                None if window_ends is None else [window_ends[k] for k in again])
        merged = _SegmentSums.concat(sums, extra)
        for m, k in enumerate(again):
            for s in self.strats:
                ranges[s.spec, k] = merged.locate(len(sums.points) + m, spans[s.spec, k])
        return merged, ranges


def _shared_ends(shared: np.ndarray | None, ends: np.ndarray) -> np.ndarray:
    """The token positions in both ``shared`` (``None``: everything) and ``ends``: where a chunk-aligned macro
    window may stop for every strategy seen so far (sorted, unique int64)."""
    ends = np.unique(np.asarray(ends, dtype=np.int64))
    return ends if shared is None else np.intersect1d(shared, ends, assume_unique=True)
