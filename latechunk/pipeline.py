"""Tokenize once, encode once, pool many times: late and naive chunk vectors for many strategies.

Late chunking (Günther, Mohr, Williams, Wang, Xiao 2024, "Late Chunking: Contextual Chunk Embeddings Using
Long-Context Embedding Models", arXiv:2409.04701): the document is encoded once (or in overlapping macro windows)
and each chunk vector is the mean of the token states in its token span. Naive chunking: each chunk's original
substring is encoded on its own with the model's own pooling. Both modes use the *same* Boundaries.

In late mode the token states of one document serve every strategy of the run: N strategies cost one forward
pass per document (or per macro window), not N. Input items are processed in groups (a token budget), so memory
stays bounded by the group, not the corpus.

Data flow of :func:`iter_embed` (two threads, one hand-off per group):

- prefetch thread (`_Run.prepared_groups`): read input items, tokenize documents in batches, screen them
  (no content tokens, too long with ``long_documents="skip"``), form groups by token budget, segment the group's
  sentences ahead (:meth:`SentenceSegmenter.presegment`) and split every strategy that needs no sentence
  vectors. It fills the group's tokenize/split timings, then hands the group over.
- calling thread (`_Run.embed_group`): the late pass (:meth:`Encoder.token_states`), the split of
  strategies that read sentence vectors (``semantic``), late pooling (:func:`late_vectors`) and naive encoding
  (:func:`naive_vectors`).

Each :class:`GroupResult` carries its input positions (``start``, ``items``) and its own :class:`PipelineStats`,
written by one thread at a time.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from latechunk.config import PipelineConfig
from latechunk.encoder import Encoder
from latechunk.pooling import segment_mean
from latechunk.sentences import SentenceSegmenter
from latechunk.strategies.base import SentenceEmbedder, Strategy, get_strategy
from latechunk.types import Boundaries, ChunkVectors, Document, Skipped, Tokenization

__all__ = [
    "EmbedResult",
    "GroupResult",
    "PipelineStats",
    "Skipped",
    "StrategyRun",
    "chunk_documents",
    "embed",
    "iter_embed",
    "late_vectors",
    "naive_texts",
    "naive_vectors",
    "presegment_for",
]

log = logging.getLogger("latechunk")

STAGES = ("tokenize", "split", "late_encode", "pool", "naive_encode")
"""The timed stages of the pipeline (keys of :attr:`PipelineStats.seconds`)."""


@dataclass
class PipelineStats:
    """Counters of a pipeline run or of one group (add groups with :meth:`add`).

    Attributes:
        documents_in: Documents read (input items that are documents; io-level skips not counted).
        content_tokens: Content tokens of the embedded documents (frame excluded).
        tokens: Tokens sent through the encoder per mode (``late``: the shared pass, frame and macro-window
            overlaps included; ``naive``: every chunk's input).
        forward_calls: Encoder forward calls per mode.
        naive_tokens_by_strategy: Naive tokens per strategy SPEC.
        seconds: Wall seconds per stage (:data:`STAGES`).
        seconds_by_strategy: Per strategy SPEC: ``{"pool": s, "naive": s}``.
    """

    documents_in: int = 0
    content_tokens: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: {"late": 0, "naive": 0})
    forward_calls: dict[str, int] = field(default_factory=lambda: {"late": 0, "naive": 0})
    naive_tokens_by_strategy: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    seconds_by_strategy: dict[str, dict[str, float]] = field(default_factory=dict)

    def add(self, other: PipelineStats) -> None:
        """Add ``other``'s counters to these (in place).

        Args:
            other: The counters of another group or run; it is not changed.
        """
        self.documents_in += other.documents_in
        self.content_tokens += other.content_tokens
        for mine, theirs in ((self.tokens, other.tokens), (self.forward_calls, other.forward_calls),
                             (self.naive_tokens_by_strategy, other.naive_tokens_by_strategy),
                             (self.seconds, other.seconds)):
            for k, v in theirs.items():
                mine[k] = mine.get(k, 0) + v
        for spec, d in other.seconds_by_strategy.items():
            mine = self.seconds_by_strategy.setdefault(spec, {"pool": 0.0, "naive": 0.0})
            for k, v in d.items():
                mine[k] = mine.get(k, 0.0) + v

    def to_dict(self) -> dict:
        """JSON-ready counters.

        Returns:
            A new dict with the fields of this class as keys (nested dicts copied): counts in documents and
            tokens, ``seconds`` in wall seconds.
        """
        return {
            "documents_in": self.documents_in,
            "content_tokens": self.content_tokens,
            "tokens": dict(self.tokens),
            "forward_calls": dict(self.forward_calls),
            "naive_tokens_by_strategy": dict(self.naive_tokens_by_strategy),
            "seconds": dict(self.seconds),
            "seconds_by_strategy": {k: dict(v) for k, v in self.seconds_by_strategy.items()},
        }


@dataclass
class StrategyRun:
    """One strategy's output over all embedded documents: Boundaries per document, and vectors per mode.

    Attributes:
        strategy: The strategy.
        boundaries: One Boundaries per embedded document, in document order.
        vectors: ``{"late": ChunkVectors, "naive": ChunkVectors}`` for the modes asked for; row i of each is
            chunk i of the concatenated boundaries (identical chunk records in both modes).
        tokens_encoded: Tokens through the encoder per mode (late: the shared pass, counted once per run).
        seconds: Seconds per mode (late: the shared encode plus this strategy's pooling; naive: its encode).
    """

    strategy: Strategy
    boundaries: list[Boundaries] = field(default_factory=list)
    vectors: dict[str, ChunkVectors] = field(default_factory=dict)
    tokens_encoded: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def n_chunks(self) -> int:
        """Chunks over all embedded documents."""
        return sum(len(b) for b in self.boundaries)


@dataclass
class EmbedResult:
    """The output of :func:`embed`.

    Attributes:
        documents: The embedded documents, in input order.
        tokenizations: Their tokenizations (same order).
        skipped: Input items not embedded, with reasons, in input order.
        runs: ``{strategy spec: StrategyRun}``, in the order the strategies were given.
        stats: The run's counters.
    """

    documents: list[Document]
    tokenizations: list[Tokenization]
    skipped: list[Skipped]
    runs: dict[str, StrategyRun]
    stats: PipelineStats

    def run(self, spec: str | Strategy) -> StrategyRun:
        """The run of a strategy given by any SPEC form (``fixed`` finds ``fixed:size=256,overlap=0``).

        Args:
            spec: A SPEC string (defaults filled in, aliases accepted) or a Strategy.

        Returns:
            The :class:`StrategyRun` of that strategy.

        Raises:
            ValueError: on an unknown strategy or parameter.
            KeyError: if the strategy was not part of this result.
        """
        return self.runs[get_strategy(spec).spec]


@dataclass
class GroupResult:
    """One group of input items from :func:`iter_embed`: a contiguous run of the input stream.

    Attributes:
        index: The group's number in the stream (0, 1, ...), whether selected or not.
        start: Input position (0-based, counting every item: documents and skipped ones) of the first item.
        items: The group's input items, in input order; the next group starts at ``start + len(items)``.
        documents / tokenizations: The embedded documents and their tokenizations, in input order.
        skipped: Every item of the group that is not embedded (from the reader or from the pipeline), with its
            reason, in input order. ``len(documents) + len(skipped) == len(items)``.
        boundaries: ``{spec: [Boundaries per document]}``.
        vectors: ``{spec: {mode: (n_chunks, dim) float32}}``, rows in document then chunk order.
        selected: False for a group that ``select_group`` left out: ``documents`` are then its documents that
            tokenized (not chunked), ``skipped`` those that did not, and ``tokenizations``, ``boundaries`` and
            ``vectors`` are empty.
        stats: This group's counters.
    """

    index: int
    start: int
    items: list[Document | Skipped]
    documents: list[Document] = field(default_factory=list)
    tokenizations: list[Tokenization] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    boundaries: dict[str, list[Boundaries]] = field(default_factory=dict)
    vectors: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    selected: bool = True
    stats: PipelineStats = field(default_factory=PipelineStats)

    @property
    def end(self) -> int:
        """Input position one past the group's last item."""
        return self.start + len(self.items)


# ------------------------------------------------------------------------------------------------ pooling
def _late_embedder(states: torch.Tensor) -> SentenceEmbedder:
    def embed_sentences(doc: Document, tok: Tokenization, spans: np.ndarray) -> np.ndarray:
        return segment_mean(states, spans, normalize=True).cpu().numpy()

    return embed_sentences


def _model_embedder(encoder: Encoder) -> SentenceEmbedder:
    def embed_sentences(doc: Document, tok: Tokenization, spans: np.ndarray) -> np.ndarray:
        offs = tok.offsets
        texts = [doc.text[int(offs[a, 0]) : int(offs[b - 1, 1])] for a, b in spans.tolist()]
        return encoder.encode(texts, normalize=True)

    return embed_sentences


def _pool_spans(b: Boundaries, tok: Tokenization, include_special: bool) -> np.ndarray:
    spans = b.token_spans.astype(np.int64, copy=True)
    if include_special and len(spans):
        # jina's convention: the first chunk absorbs the lead frame, the last the trail frame
        spans[0, 0] = 0
        spans[-1, 1] = len(tok)
    return spans


def naive_texts(doc: Document, b: Boundaries) -> list[str]:
    """The texts naive mode encodes for ``b``'s chunks: each chunk's original substring, preceded by its
    embedding context line where it has one (e.g. a table header for a chunk of table rows).

    Args:
        doc: The document.
        b: Its boundaries.

    Returns:
        ``len(b)`` strings, in chunk order.
    """
    texts = []
    for (cs, ce), ctx in zip(b.char_spans.tolist(), b.contexts):
        chunk = doc.text[cs:ce]
        texts.append(f"{ctx}\n{chunk}" if ctx else chunk)
    return texts


def naive_vectors(
    encoder: Encoder, documents: Sequence[Document], boundaries: Sequence[Boundaries], normalize: bool = True
) -> tuple[np.ndarray, int, int]:
    """Naive-mode vectors of the chunks of several documents, in one length-sorted encode call.

    Each chunk's :func:`naive_texts` entry is encoded on its own, with the document prompt and the model's own
    pooling (:meth:`Encoder.encode_document`).

    Args:
        encoder: The encoder.
        documents: The documents, in order.
        boundaries: Their boundaries, same order.
        normalize: L2-normalise each vector.

    Returns:
        ``(vectors, tokens, forward_calls)``: (total_chunks, dim) float32, rows in document then chunk order;
        the tokens sent through the encoder (frame included) and its forward calls.

    Raises:
        ValueError: if a document is paired with the boundaries of another document.
    """
    texts = []
    for doc, b in zip(documents, boundaries):
        if doc.doc_id != b.doc_id:
            raise ValueError(f"document {doc.doc_id!r} paired with boundaries of {b.doc_id!r}")
        texts.extend(naive_texts(doc, b))
    before = dict(encoder.stats)
    vectors = encoder.encode_document(texts, normalize=normalize)
    tokens = encoder.stats["tokens"] - before["tokens"]
    return vectors, tokens, encoder.stats["forward_calls"] - before["forward_calls"]


def late_vectors(
    states: Sequence[torch.Tensor],
    toks: Sequence[Tokenization],
    boundaries: Sequence[Boundaries],
    normalize: bool = True,
    include_special: bool = False,
    dim: int | None = None,
    packed: torch.Tensor | None = None,
) -> np.ndarray:
    """Late-chunking vectors of several documents in one segment-mean call (packed, one kernel launch on CUDA).

    Args:
        states: Per document (n_tokens_i, dim) float token states.
        toks: Their tokenizations.
        boundaries: Their boundaries.
        normalize: L2-normalise each chunk vector.
        include_special: Let the first/last chunk absorb the frame tokens (default: excluded).
        dim: Vector dimension, used for the empty result when there are no states.
        packed: ``torch.cat(states)`` when the caller already has it (the pipeline packs a group once and
            pools every strategy from it); built here otherwise.

    Returns:
        (total_chunks, dim) float32 on the host; row order = documents in order, chunks in order. Row i is
        the mean of the token states in chunk i's token span (:func:`~latechunk.pooling.segment_mean`).

    Raises:
        ValueError: if ``packed`` does not have one row per token of the documents, or a span is empty or
            outside the packed states.
    """
    spans, offset = [], 0
    for st, tok, b in zip(states, toks, boundaries):
        spans.append(_pool_spans(b, tok, include_special) + offset)
        offset += st.shape[0]
    if not spans or offset == 0:
        d = states[0].shape[1] if states else (dim or 0)
        return np.zeros((0, d), dtype=np.float32)
    if packed is None:
        packed = states[0] if len(states) == 1 else torch.cat(list(states), dim=0)
    elif packed.shape[0] != offset:
        raise ValueError(f"packed states have {packed.shape[0]} rows, the documents {offset} tokens")
    out = segment_mean(packed, np.concatenate(spans).reshape(-1, 2), normalize=normalize)
    return out.cpu().numpy().astype(np.float32, copy=False)


def presegment_for(strats: Sequence[Strategy], pairs: Sequence[tuple[Document, Tokenization]],
                   segmenter: SentenceSegmenter) -> dict | None:
    """Segment ahead the sentences ``strats`` will read in these documents (one pass shared by all of them).

    Args:
        strats: The strategies of the run.
        pairs: ``(document, tokenization)`` pairs.
        segmenter: The run's segmenter (its cache then serves every strategy's split).

    Returns:
        What :meth:`SentenceSegmenter.presegment` returns, or None when no strategy reads sentences. The
        paragraphs are those of :meth:`Strategy.sentence_paragraphs` (the least demanding hint wins).
    """
    hints = [h for h in (s.sentence_paragraphs() for s in strats) if h is not None]
    if not hints:
        return None
    return segmenter.presegment([d.text for d, _ in pairs], min(hints),
                                [t.offsets[t.content_start : t.content_end, 0] for _, t in pairs])


# ------------------------------------------------------------------------------------------------ the stream
@dataclass
class _Entry:
    """One input item on its way through the prefetch thread."""

    pos: int
    item: Document | Skipped
    tok: Tokenization | None = None  # None for a skipped item
    skip: Skipped | None = None  # set when the item is (or becomes) skipped
    pre: list[Boundaries | None] | None = None  # per strategy; None where the split needs sentence vectors


def _item_batches(items: Iterable[Document | Skipped], max_chars: int = 1 << 18,
                  max_docs: int = 64) -> Iterator[list[_Entry]]:
    """Input items with their positions, in lists of at most ``max_docs`` documents and about ``max_chars``
    characters (the unit of one batch tokenizer call)."""
    batch: list[_Entry] = []
    chars = docs = 0
    for pos, item in enumerate(items):
        batch.append(_Entry(pos, item))
        if isinstance(item, Document):
            docs += 1
            chars += len(item.text)
            if chars >= max_chars or docs >= max_docs:
                yield batch
                batch, chars, docs = [], 0, 0
    if batch:
        yield batch


def _tokenize_batch(encoder: Encoder, batch: list[_Entry], max_tokens: int | None) -> None:
    """Tokenize the batch's documents (one call on all cores, else one by one so only a bad document fails)
    and screen them: set ``tok`` or ``skip`` on each entry."""
    entries = [e for e in batch if isinstance(e.item, Document)]
    for e in batch:
        if isinstance(e.item, Skipped):
            e.skip = e.item
    if not entries:
        return
    toks: list = []
    batch_tokenize = getattr(encoder.tokenizer, "batch", None)
    if batch_tokenize is not None and len(entries) > 1:
        try:
            toks = batch_tokenize([e.item for e in entries])
        except Exception:  # noqa: BLE001  (one by one below, so only a bad document is skipped)
            toks = []
    if not toks:
        for e in entries:
            try:
                toks.append(encoder.tokenizer(e.item))
            except Exception as err:  # noqa: BLE001  (a bad document is listed, never fatal)
                toks.append(err)
    for e, tok in zip(entries, toks):
        doc_id = e.item.doc_id
        if isinstance(tok, Exception):
            e.skip = Skipped(doc_id, f"tokenizer failed: {type(tok).__name__}: {tok}")
        elif tok.n_content == 0:
            e.skip = Skipped(doc_id, "empty or whitespace-only (no tokens)")
        elif max_tokens is not None and len(tok) > max_tokens:
            e.skip = Skipped(doc_id, f"{len(tok)} tokens > model limit {max_tokens} and macro windows are off")
        else:
            e.tok = tok


def _split_failed(doc: Document, err: Exception) -> Skipped:
    log.warning("document %r skipped: %s: %s", doc.doc_id, type(err).__name__, err)
    return Skipped(doc.doc_id, f"chunking failed: {type(err).__name__}: {err}")


class _Run:
    """What one :func:`iter_embed` call holds: the encoder, the config, the macro-window plan, the sentence
    segmenter and the sentence encoders of ``semantic:source=MODEL``."""

    def __init__(self, encoder: Encoder, config: PipelineConfig, segmenter: SentenceSegmenter,
                 sentence_encoders: dict[str, Encoder]) -> None:
        self.encoder = encoder
        self.config = config
        self.strats = config.strategies
        self.segmenter = segmenter
        self.sentence_encoders = sentence_encoders
        # the one validation of the macro window against this model (before any document is read)
        self.macro_window = encoder.macro_window(config.macro_window, config.macro_window_overlap)
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
            tokenize_s += time.perf_counter() - t0
            for e in batch:
                group.append(e)
                if e.tok is not None:
                    tokens += len(e.tok)
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
        g = GroupResult(index=gi, start=group[0].pos, items=[e.item for e in group])
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
                e.pre = [None if s.needs_embedder else s.split(e.item, e.tok, sentences=self.segmenter)
                         for s in self.strats]
            except Exception as err:  # noqa: BLE001  (a bad document is listed, never fatal)
                e.skip, e.tok = _split_failed(e.item, err), None
        g.stats.seconds["split"] = time.perf_counter() - t0
        return g, group

    # -------------------------------------------------------------------- calling thread
    def embed_group(self, g: GroupResult, entries: list[_Entry], progress: bool) -> GroupResult:
        """Encode, split (sentence-vector strategies), pool and naive-encode one group, in place."""
        if not g.selected:  # someone else's group: which documents it holds, nothing chunked or encoded
            g.documents = [e.item for e in entries if e.tok is not None]
            g.skipped = [e.skip for e in entries if e.tok is None]
            return g
        stats, enc, cfg = g.stats, self.encoder, self.config
        live = [e for e in entries if e.tok is not None]
        states: list[torch.Tensor] = []
        if cfg.needs_token_states and live:
            before = dict(enc.stats)
            t0 = time.perf_counter()
            states = enc.token_states([e.tok for e in live], self.macro_window, progress=progress)
            stats.seconds["late_encode"] += time.perf_counter() - t0
            stats.tokens["late"] += enc.stats["tokens"] - before["tokens"]
            stats.forward_calls["late"] += enc.stats["forward_calls"] - before["forward_calls"]
        t0 = time.perf_counter()
        kept: list[tuple[_Entry, list[Boundaries]]] = []
        kept_states: list[torch.Tensor] = []
        for i, e in enumerate(live):
            try:
                per = [b if b is not None else s.split(e.item, e.tok, self._sentence_embedder(s, states, i),
                                                        sentences=self.segmenter)
                       for s, b in zip(self.strats, e.pre)]
            except Exception as err:  # noqa: BLE001  (a failing document is skipped for every strategy)
                e.skip, e.tok = _split_failed(e.item, err), None
                continue
            kept.append((e, per))
            if states:
                kept_states.append(states[i])
        stats.seconds["split"] += time.perf_counter() - t0
        del states
        g.documents = [e.item for e, _ in kept]
        g.tokenizations = [e.tok for e, _ in kept]
        g.skipped = [e.skip for e in entries if e.tok is None]
        stats.content_tokens += sum(t.n_content for t in g.tokenizations)
        packed = None
        if kept_states and "late" in cfg.modes:
            # pack the group once; every strategy pools from it (one segment-mean launch per strategy)
            packed = kept_states[0] if len(kept_states) == 1 else torch.cat(kept_states, dim=0)
            kept_states = list(torch.split(packed, [st.shape[0] for st in kept_states]))  # views: copies freed
        for j, s in enumerate(self.strats):
            b_list = [per[j] for _, per in kept]
            g.boundaries[s.spec] = b_list
            g.vectors[s.spec] = {}
            by = stats.seconds_by_strategy.setdefault(s.spec, {"pool": 0.0, "naive": 0.0})
            if "late" in cfg.modes:
                t0 = time.perf_counter()
                g.vectors[s.spec]["late"] = late_vectors(kept_states, g.tokenizations, b_list, cfg.normalize,
                                                         cfg.include_special, enc.dim, packed)
                dt = time.perf_counter() - t0
                stats.seconds["pool"] += dt
                by["pool"] += dt
            if "naive" in cfg.modes:  # the strategy's chunk texts of the group in one length-sorted encode call
                t0 = time.perf_counter()
                g.vectors[s.spec]["naive"], n_tok, n_calls = naive_vectors(enc, g.documents, b_list, cfg.normalize)
                dt = time.perf_counter() - t0
                stats.seconds["naive_encode"] += dt
                by["naive"] += dt
                stats.tokens["naive"] += n_tok
                stats.naive_tokens_by_strategy[s.spec] = stats.naive_tokens_by_strategy.get(s.spec, 0) + n_tok
                stats.forward_calls["naive"] += n_calls
        return g

    def _sentence_embedder(self, s: Strategy, states: list[torch.Tensor], i: int) -> SentenceEmbedder | None:
        if not s.needs_embedder:
            return None
        source = getattr(s, "source", "late")
        if source == "late":
            return _late_embedder(states[i])
        return _model_embedder(self.sentence_encoders[source])


def _prefetch(it: Iterator, depth: int = 1) -> Iterator:
    """Run ``it`` one step ahead in a background thread (tokenization overlaps device work; the Rust
    tokenizer releases the GIL). Order is preserved and exceptions are re-raised in the caller."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    done = object()
    stop = threading.Event()

    def worker() -> None:
        try:
            for x in it:
                if stop.is_set():
                    return
                q.put((True, x))
                if stop.is_set():
                    return
            q.put((True, done))
        except BaseException as err:  # noqa: BLE001  (re-raised in the consumer)
            q.put((False, err))

    t = threading.Thread(target=worker, daemon=True, name="latechunk-tokenize")
    t.start()
    try:
        while True:
            ok, x = q.get()
            if not ok:
                raise x
            if x is done:
                return
            yield x
    finally:
        # a consumer that stops early (an error, a break) waits for the worker to finish its item, draining the
        # queue so it cannot block: a thread left inside native code at interpreter exit aborts the process
        stop.set()
        while t.is_alive():
            try:
                q.get(timeout=0.05)
            except queue.Empty:
                pass


def iter_embed(
    items: Iterable[Document | Skipped],
    encoder: Encoder,
    config: PipelineConfig,
    *,
    select_group: Callable[[int], bool] | None = None,
    progress: bool = False,
    sentence_encoders: dict[str, Encoder] | None = None,
    segmenter: SentenceSegmenter | None = None,
) -> Iterator[GroupResult]:
    """Streaming form of :func:`embed`: one :class:`GroupResult` per group of about ``config.group_tokens``
    tokens, so memory stays bounded by a group, not the corpus.

    Args:
        items: The input stream: documents and the reader's skipped items (as
            :func:`latechunk.io.iter_inputs` yields them), consumed once, in order.
        encoder: The encoder (its tokenizer tokenizes every document once, with the document prompt).
        config: Strategies, modes and pooling settings.
        select_group: ``select_group(i)`` (default: every group) picks the groups to chunk and encode, by
            group number. Groups are formed from token counts alone, so they are the same whichever are
            selected; an unselected group is still tokenized and yielded, as a light record with
            ``selected=False``. Several processes can so split one stream (``latechunk.ingest`` with
            ``WORLD_SIZE > 1``). Called from the prefetch thread, once per group, in order.
        progress: Show a progress bar of the late pass (tokens) per group.
        sentence_encoders: Encoders for ``semantic:source=MODEL`` by model name (loaded here otherwise).
        segmenter: The sentence segmenter (default: one for this run with ``config.sentence_workers`` workers,
            closed when the stream ends).

    Returns:
        An iterator of :class:`GroupResult`, in input order; ``groups[i + 1].start == groups[i].end``. The
        prefetch thread starts at the first ``next()``; closing the iterator early stops it (and closes a
        segmenter made here).

    Raises:
        ValueError: on a macro window that does not fit the model (:meth:`MacroWindow.check
            <latechunk.macro_window.MacroWindow.check>`), or a ``semantic:source=MODEL`` model that does not
            load (when called, before any item is read).
        TypeError: if a ``semantic:source=MODEL`` model's tokenizer is not a fast tokenizer.

    Errors while the stream runs (reading, encoding) propagate from ``next()``; a document that fails to
    tokenize or split is a skipped item, not an error.
    """
    run_encoders = dict(sentence_encoders or {})
    for s in config.strategies:  # a named sentence model is loaded up front: a bad name fails before any work
        source = getattr(s, "source", "late")
        if s.needs_embedder and source != "late" and source not in run_encoders:
            run_encoders[source] = Encoder(source, device=str(encoder.device))
    own = segmenter is None
    seg = SentenceSegmenter(workers=config.sentence_workers) if own else segmenter
    run = _Run(encoder, config, seg, run_encoders)
    return _stream(run, items, select_group, progress, seg if own else None)


def _stream(run: _Run, items, select_group, progress: bool, owned: SentenceSegmenter | None) -> Iterator[GroupResult]:
    try:
        for g, entries in _prefetch(run.prepared_groups(items, select_group)):
            yield run.embed_group(g, entries, progress)
    finally:
        if owned is not None:
            owned.close()


def embed(
    documents: Iterable[Document],
    encoder: Encoder,
    config: PipelineConfig,
    *,
    progress: bool = False,
    sentence_encoders: dict[str, Encoder] | None = None,
    segmenter: SentenceSegmenter | None = None,
) -> EmbedResult:
    """Chunk and embed documents with several strategies and modes at once.

    Each document is tokenized once. In late mode its token states are computed once and pooled for every
    strategy. Naive mode encodes every chunk's text on its own. Strategies needing sentence vectors
    (``semantic``) get them from the same late states (``source=late``) or from the named model.

    Args:
        documents: Input documents (or the reader's items; consumed once, in groups).
        encoder: The :class:`Encoder`.
        config: Strategies, modes and pooling settings, e.g.
            ``PipelineConfig(("fixed:size=256", "semantic"), modes=("late", "naive"))``.
        progress: Show a progress bar (tokens of the late pass).
        sentence_encoders: Encoders for ``semantic:source=MODEL`` by model name (loaded on demand otherwise).
        segmenter: The sentence segmenter (default: one for this call).

    Returns:
        EmbedResult: embedded documents, skipped items with reasons, per-strategy boundaries and vectors.

    Raises:
        ValueError: as :func:`iter_embed` (before any work).
        RuntimeError: if a strategy's vectors do not match its chunk count (a bug).
    """
    stats = PipelineStats()
    strats = config.strategies
    runs = {s.spec: StrategyRun(strategy=s) for s in strats}
    vecs: dict[str, dict[str, list[np.ndarray]]] = {s.spec: {m: [] for m in config.modes} for s in strats}
    embedded: list[Document] = []
    toks_out: list[Tokenization] = []
    skipped: list[Skipped] = []
    for g in iter_embed(documents, encoder, config, progress=progress, sentence_encoders=sentence_encoders,
                        segmenter=segmenter):
        stats.add(g.stats)
        embedded.extend(g.documents)
        toks_out.extend(g.tokenizations)
        skipped.extend(g.skipped)
        for s in strats:
            runs[s.spec].boundaries.extend(g.boundaries[s.spec])
            for m, v in g.vectors[s.spec].items():
                vecs[s.spec][m].append(v)
    for s in strats:
        run = runs[s.spec]
        counts = np.asarray([len(b) for b in run.boundaries], dtype=np.int64)
        cu = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        chunk_index = (np.concatenate([np.arange(c, dtype=np.int32) for c in counts])
                       if len(counts) else np.zeros(0, np.int32))
        doc_ids = tuple(b.doc_id for b in run.boundaries)
        for m in config.modes:
            v = np.concatenate(vecs[s.spec][m]) if vecs[s.spec][m] else np.zeros((0, encoder.dim), np.float32)
            if v.shape[0] != int(cu[-1]):
                raise RuntimeError(f"{s.spec} {m}: {v.shape[0]} vectors for {int(cu[-1])} chunks")
            run.vectors[m] = ChunkVectors(v, doc_ids, chunk_index, cu, m, normalized=config.normalize)
        by = stats.seconds_by_strategy.get(s.spec, {"pool": 0.0, "naive": 0.0})
        if "late" in config.modes:
            run.tokens_encoded["late"] = stats.tokens["late"]
            run.seconds["late"] = stats.seconds["late_encode"] + by["pool"]
        if "naive" in config.modes:
            run.tokens_encoded["naive"] = stats.naive_tokens_by_strategy.get(s.spec, 0)
            run.seconds["naive"] = by["naive"]
    return EmbedResult(embedded, toks_out, skipped, runs, stats)


def chunk_documents(
    documents: Iterable[Document],
    strategy: str | Strategy,
    tokenizer,
    embed_sentences: SentenceEmbedder | None = None,
    segmenter: SentenceSegmenter | None = None,
) -> Iterator[tuple[Document, Boundaries | None, str]]:
    """Chunk documents without an encoder (all strategies but ``semantic`` need none).

    Args:
        documents: The documents (consumed lazily, one at a time).
        strategy: A SPEC or Strategy.
        tokenizer: A :class:`~latechunk.tokenize.DocumentTokenizer` (or any ``doc -> Tokenization`` callable);
            use the encoder's document tokenizer so that token spans equal ``embed``'s.
        embed_sentences: Sentence vectors for ``semantic`` (see :data:`~latechunk.strategies.base.SentenceEmbedder`).
        segmenter: The sentence segmenter (default: a fresh in-process one).

    Yields:
        ``(doc, boundaries, "")`` per chunked document, or ``(doc, None, reason)`` for a skipped one (no content
        tokens, or the tokenizer or strategy failed on it).

    Raises:
        ValueError: on an unknown strategy spec, or ``semantic`` without ``embed_sentences`` (at the first
            ``next()``: this is a generator).
    """
    strat = get_strategy(strategy)
    if strat.needs_embedder and embed_sentences is None:
        raise ValueError(f"strategy {strat.name!r} needs sentence vectors: run it through embed() or pass a model")
    seg = segmenter if segmenter is not None else SentenceSegmenter()
    for doc in documents:
        try:
            tok = tokenizer(doc)
            if tok.n_content == 0:
                yield doc, None, "empty or whitespace-only (no tokens)"
                continue
            yield doc, strat.split(doc, tok, embed_sentences, sentences=seg), ""
        except Exception as err:  # noqa: BLE001
            yield doc, None, f"chunking failed: {type(err).__name__}: {err}"
