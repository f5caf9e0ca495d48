"""Tokenize once, encode once, pool many times: late and naive chunk vectors for many strategies.

Late chunking (Günther, Mohr, Williams, Wang, Xiao 2024, "Late Chunking: Contextual Chunk Embeddings Using
Long-Context Embedding Models", arXiv:2409.04701): the document is encoded once (or in overlapping macro windows)
and each chunk vector is the mean of the token states in its token span. Naive chunking: each chunk's original
substring is encoded on its own with the model's own pooling. Contextual headers (seed 001 of the design notes;
Anthropic, "Introducing Contextual Retrieval", 2024): each chunk is encoded as in naive mode, with its contextual
header ``[title > section path]`` (:func:`latechunk.titles.contextual_header`) and a blank line before it, the other
way to give a chunk its context. All modes use the *same* Boundaries; the stored chunk text is always the exact
slice, never the header.

In late mode the token states of one document serve every strategy of the run: N strategies cost one forward
pass per document (or per macro window), not N. Input items are processed in groups (a token budget), so memory
stays bounded by the group, not the corpus; and the late pass pools each forward batch as it is done, so memory
stays bounded by one batch and the chunk vectors, not by the longest document's token states. Each token's
state comes from exactly one macro window (their keep ranges tile the document), so a chunk's mean is the sum,
over the windows, of its kept states in each window, divided by its length: the pass adds each batch into
float32 sums between the *cut points* of every document (the ends of every span the group pools: the chunks of
every strategy split before the pass, and for ``semantic:source=late`` its :meth:`Strategy.cut_points`: sentence
spans and every possible chunk end), one segment-mean launch per batch (the Triton kernel on CUDA); a span's mean
is then the sum of its segments' sums over its length.

Data flow of :func:`iter_embed` (two threads, one hand-off per group):

- prefetch thread (`_Run.prepared_groups`): read input items, tokenize documents in batches, screen them
  (no content tokens, too long with ``long_documents="skip"``), form groups by token budget, segment the group's
  sentences ahead (:meth:`SentenceSegmenter.presegment`) and split every strategy that needs no sentence
  vectors. It fills the group's tokenize/split timings, then hands the group over.
- calling thread (`_Run.embed_group`): the split of strategies whose sentence vectors come from a named model,
  the streamed late pass (:meth:`Encoder.iter_token_states` into the segment sums), the split of strategies that
  read the late pass's sentence vectors (``semantic``), late vectors from the sums, and naive encoding
  (:func:`naive_vectors`) and contextual encoding (:func:`contextual_vectors`). Progress is reported in bytes of document text as forward batches finish
  (``on_text_bytes``).

Each :class:`GroupResult` carries its input positions (``start``, ``items``) and its own :class:`PipelineStats`,
written by one thread at a time.
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from latechunk.config import PipelineConfig
from latechunk.encoder import Encoder, StateBatch
from latechunk.io import surrogate_reason
from latechunk.pooling import segment_mean
from latechunk.sentences import SentenceSegmenter
from latechunk.strategies.base import SentenceVectors, Strategy, get_strategy
from latechunk.titles import contextual_header, document_title
from latechunk.types import Boundaries, ChunkVectors, Document, Skipped, Tokenization

__all__ = [
    "EmbedResult",
    "GroupResult",
    "GroupRunner",
    "PipelineStats",
    "Skipped",
    "StrategyRun",
    "chunk_documents",
    "contextual_headers",
    "contextual_texts",
    "contextual_vectors",
    "embed",
    "iter_embed",
    "late_vectors",
    "naive_texts",
    "naive_vectors",
    "presegment_for",
    "unreadable_reason",
]

log = logging.getLogger("latechunk")

STAGES = ("tokenize", "split", "late_encode", "pool", "naive_encode", "contextual_encode")
"""The timed stages of the pipeline (keys of :attr:`PipelineStats.seconds`)."""


@dataclass
class PipelineStats:
    """Counters of a pipeline run or of one group (add groups with :meth:`add`).

    Attributes:
        documents_in: Documents read (input items that are documents; io-level skips not counted).
        content_tokens: Content tokens of the embedded documents (frame excluded).
        tokens: Tokens sent through the encoder per mode (``late``: the shared pass, frame and macro-window
            overlaps included; ``naive``: every chunk's input; ``contextual``: every chunk's input with its
            header, only where that mode runs).
        forward_calls: Encoder forward calls per mode.
        naive_tokens_by_strategy: Naive tokens per strategy SPEC.
        contextual_tokens_by_strategy: Contextual tokens per strategy SPEC (empty unless that mode runs).
        seconds: Wall seconds per stage (:data:`STAGES`); ``late_encode`` includes adding each forward batch
            into the segment sums of the streamed late pass, ``pool`` the chunk means taken from them.
        seconds_by_strategy: Per strategy SPEC: ``{"pool": s, "naive": s}`` (and ``"contextual": s`` where that
            mode runs).
    """

    documents_in: int = 0
    content_tokens: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: {"late": 0, "naive": 0})
    forward_calls: dict[str, int] = field(default_factory=lambda: {"late": 0, "naive": 0})
    naive_tokens_by_strategy: dict[str, int] = field(default_factory=dict)
    contextual_tokens_by_strategy: dict[str, int] = field(default_factory=dict)
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
                             (self.contextual_tokens_by_strategy, other.contextual_tokens_by_strategy),
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
            **({"contextual_tokens_by_strategy": dict(self.contextual_tokens_by_strategy)}
               if self.contextual_tokens_by_strategy else {}),
            "seconds": dict(self.seconds),
            "seconds_by_strategy": {k: dict(v) for k, v in self.seconds_by_strategy.items()},
        }


@dataclass
class StrategyRun:
    """One strategy's output over all embedded documents: Boundaries per document, and vectors per mode.

    Attributes:
        strategy: The strategy.
        boundaries: One Boundaries per embedded document, in document order.
        vectors: ``{mode: ChunkVectors}`` (``late``, ``naive``, ``contextual``, ``fused``) for the modes asked for; row i of
            each is chunk i of the concatenated boundaries (identical chunk records in every mode).
        tokens_encoded: Tokens through the encoder per mode (late: the shared pass, counted once per run).
        seconds: Seconds per mode (late: the shared encode plus this strategy's pooling; naive and contextual: its
            encode).
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
        unknown_chars: Per embedded document, its characters read as the tokenizer's unknown token
            (:meth:`~latechunk.tokenize.DocumentTokenizer.unknown_chars`: content in no vector); empty where
            the encoder's tokenizer cannot tell.
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
    unknown_chars: list[int] = field(default_factory=list)
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
def _late_sentence_vectors(states: torch.Tensor) -> SentenceVectors:
    def sentence_vectors(doc: Document, tok: Tokenization, spans: np.ndarray) -> np.ndarray:
        return segment_mean(states, spans, normalize=True).cpu().numpy()

    return sentence_vectors


def _model_sentence_vectors(encoder: Encoder) -> SentenceVectors:
    def sentence_vectors(doc: Document, tok: Tokenization, spans: np.ndarray) -> np.ndarray:
        offs = tok.offsets
        texts = [doc.text[int(offs[a, 0]) : int(offs[b - 1, 1])] for a, b in spans.tolist()]
        return encoder.encode(texts, normalize=True)

    return sentence_vectors


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
    return _encode_chunk_texts(encoder, documents, boundaries, naive_texts, normalize)


def _encode_chunk_texts(encoder: Encoder, documents: Sequence[Document], boundaries: Sequence[Boundaries],
                        texts_of: Callable[[Document, Boundaries], list[str]], normalize: bool):
    """Encode ``texts_of(doc, b)`` of every document with the document prompt: ``(vectors, tokens, calls)``."""
    texts = []
    for doc, b in zip(documents, boundaries):
        if doc.doc_id != b.doc_id:
            raise ValueError(f"document {doc.doc_id!r} paired with boundaries of {b.doc_id!r}")
        texts.extend(texts_of(doc, b))
    before = dict(encoder.stats)
    vectors = encoder.encode_document(texts, normalize=normalize)
    tokens = encoder.stats["tokens"] - before["tokens"]
    return vectors, tokens, encoder.stats["forward_calls"] - before["forward_calls"]


CONTEXTUAL_SEPARATOR = "\n\n"
"""What stands between a chunk's contextual header and its text in contextual mode (a blank line)."""


def fused_vectors(late: np.ndarray, naive: np.ndarray, normalize: bool = True) -> np.ndarray:
    """Fused-mode vectors: each chunk's late and naive vectors, each L2-normalised, summed.

    The two views of a chunk err differently (the late vector carries the document's context, the naive one the
    chunk's own words). A unit query scores the summed vector by the sum of its two cosines; renormalised (the
    default) by that sum over ``sqrt(2 + 2 cos(late, naive))``, so chunks whose two views disagree weigh a little more. Measured on
    Chroma (472 questions, all-MiniLM-L6-v2, ``results/fused.md``). Costs both encodings (late pass + naive).

    Args:
        late: (n_chunks, dim) float32, late vectors (normalised or not).
        naive: (n_chunks, dim) float32, naive vectors of the same chunks, same order.
        normalize: L2-normalise the sum (else it is returned as summed, norm in [0, 2]).

    Returns:
        (n_chunks, dim) float32.

    Raises:
        ValueError: if the two arrays differ in shape.
    """
    late, naive = np.asarray(late, np.float32), np.asarray(naive, np.float32)
    if late.shape != naive.shape:
        raise ValueError(f"fused_vectors: late {late.shape} and naive {naive.shape} differ in shape")

    def unit(v: np.ndarray) -> np.ndarray:
        return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)

    s = unit(late) + unit(naive)
    return (unit(s) if normalize else s).astype(np.float32, copy=False)


def contextual_headers(doc: Document, b: Boundaries) -> list[str]:
    """The contextual header of each of ``b``'s chunks: ``[title > section path]``.

    The title is the document's (:func:`latechunk.titles.document_title`: front matter, first heading, record
    title, file name), the section path the chunk's heading path (``b.heading_paths``; empty for strategies that
    do not follow headings, whose chunks then get ``[title]``); both joined by
    :func:`latechunk.titles.contextual_header`, so the chunk table's ``header`` column holds the same string.

    Args:
        doc: The document.
        b: Its boundaries.

    Returns:
        ``len(b)`` strings, in chunk order; ``""`` for a chunk with neither title nor heading path.
    """
    title = document_title(doc)[0]
    return [contextual_header(title, path) for path in b.heading_paths]


def contextual_texts(doc: Document, b: Boundaries, headers: Sequence[str] | None = None) -> list[str]:
    r"""The texts contextual mode encodes for ``b``'s chunks: ``header + "\n\n" + naive text``.

    The naive text is :func:`naive_texts`'s (the exact chunk slice, after its embedding context line where it has
    one); a chunk whose header is ``""`` is encoded exactly as in naive mode. The stored chunk text is never
    changed: the header exists only in the encoder's input (and in the chunk table's ``header`` column).

    Args:
        doc: The document.
        b: Its boundaries.
        headers: The chunks' headers (default :func:`contextual_headers`).

    Returns:
        ``len(b)`` strings, in chunk order.

    Raises:
        ValueError: if ``headers`` does not have one entry per chunk.
    """
    heads = contextual_headers(doc, b) if headers is None else list(headers)
    if len(heads) != len(b):
        raise ValueError(f"document {doc.doc_id!r}: {len(heads)} contextual headers for {len(b)} chunks")
    return [f"{h}{CONTEXTUAL_SEPARATOR}{t}" if h else t for h, t in zip(heads, naive_texts(doc, b))]


def contextual_vectors(
    encoder: Encoder, documents: Sequence[Document], boundaries: Sequence[Boundaries], normalize: bool = True
) -> tuple[np.ndarray, int, int]:
    """Contextual-mode vectors of the chunks of several documents, in one length-sorted encode call.

    Each chunk's :func:`contextual_texts` entry (``[title > section path]``, a blank line, the chunk text) is
    encoded on its own, with the document prompt and the model's own pooling (:meth:`Encoder.encode_document`),
    as naive mode does: an input longer than the model goes through the same macro windows, never truncated.
    Seed 001 of the design notes; Anthropic, "Introducing Contextual Retrieval" (2024), with a fixed header in
    place of a generated one.

    Args:
        encoder: The encoder.
        documents: The documents, in order.
        boundaries: Their boundaries, same order.
        normalize: L2-normalise each vector.

    Returns:
        ``(vectors, tokens, forward_calls)``: (total_chunks, dim) float32, rows in document then chunk order;
        the tokens sent through the encoder (frame and headers included) and its forward calls.

    Raises:
        ValueError: if a document is paired with the boundaries of another document.
    """
    return _encode_chunk_texts(encoder, documents, boundaries, contextual_texts, normalize)


def late_vectors(
    states: Sequence[torch.Tensor],
    toks: Sequence[Tokenization],
    boundaries: Sequence[Boundaries],
    normalize: bool = True,
    include_special: bool = False,
    dim: int | None = None,
    packed: torch.Tensor | None = None,
) -> np.ndarray:
    """Late-chunking vectors of several documents from their whole token states, in one segment-mean call.

    The reference form of late pooling, for callers that hold whole-document states (tests, benchmarks): the
    pipeline itself never holds them, it sums each forward batch's kept states per span as the batch finishes
    (``_SegmentSums``) and gives the same vectors to float32 rounding.

    Args:
        states: Per document (n_tokens_i, dim) float token states.
        toks: Their tokenizations.
        boundaries: Their boundaries.
        normalize: L2-normalise each chunk vector.
        include_special: Let the first/last chunk absorb the frame tokens (default: excluded).
        dim: Vector dimension, used for the empty result when there are no states.
        packed: ``torch.cat(states)`` when the caller already has it (to pool several strategies from one
            packed tensor); built here otherwise.

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


# ------------------------------------------------------------------------------------------------ streamed late pass
class _SegmentSums:
    """Sums of token states between consecutive cut points of each document, filled one forward batch at a time.

    A document's cut points (sorted, unique, ``0`` and ``len(tok)`` included) cut it into segments
    ``[points[k], points[k + 1])``; :meth:`add` adds a forward batch's states to the sums of the segments its
    blocks overlap (one segment-mean launch per batch: the Triton kernel on CUDA; on the CPU one ``index_add`` of
    the kept rows into their segments), so the sums are complete once
    every block of the document has been added (its blocks tile it). A span whose ends are cut points is a run
    of segments: its mean is the sum of their sums divided by its length (:meth:`means`). Memory: (segments,
    dim) float32, whatever the documents' lengths.
    """

    def __init__(self, points: Sequence[np.ndarray], dim: int, device: torch.device | str) -> None:
        self.points = [np.asarray(p, dtype=np.int64) for p in points]
        counts = [max(len(p) - 1, 0) for p in self.points]
        self.first = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int64)
        self.sums = torch.zeros((int(self.first[-1]), dim), dtype=torch.float32, device=device)

    @classmethod
    def concat(cls, a: _SegmentSums, b: _SegmentSums) -> _SegmentSums:
        """``a``'s documents, then ``b``'s."""
        out = cls.__new__(cls)
        out.points = a.points + b.points
        out.first = np.concatenate([a.first, b.first[1:] + a.first[-1]])
        out.sums = torch.cat([a.sums, b.sums.to(a.sums.device)])
        return out

    def add(self, batch: StateBatch) -> None:
        """Add one forward batch (:meth:`Encoder.iter_token_states`) to the segment sums."""
        spans, index = [], []
        for blk in batch.blocks:
            p = self.points[blk.doc]
            lo, hi = blk.start, blk.start + blk.n
            k0 = max(int(np.searchsorted(p, lo, side="right")) - 1, 0)  # the segment holding lo
            k1 = min(int(np.searchsorted(p, hi, side="left")), len(p) - 1)  # one past the last starting below hi
            if k1 <= k0:
                continue
            # segments clipped to the block (positions of the document), then rows of the batch
            clipped = np.stack([np.maximum(p[k0:k1], lo), np.minimum(p[k0 + 1 : k1 + 1], hi)], axis=1)
            spans.append(clipped + (blk.row - lo))
            index.append(np.arange(k0, k1, dtype=np.int64) + self.first[blk.doc])
        if not spans:
            return
        rows = np.concatenate(spans)
        if batch.states.device.type == "cpu" and self.sums.device.type == "cpu":
            # on the CPU, each kept row straight into its segment's sum (one index_add over the rows): no
            # averaging matrix, no mean times length (issue 15: the five-strategy pass cuts many segments)
            lens = rows[:, 1] - rows[:, 0]
            before = np.cumsum(lens) - lens
            row_ids = np.repeat(rows[:, 0] - before, lens) + np.arange(int(lens.sum()), dtype=np.int64)
            seg = np.repeat(np.concatenate(index), lens)
            self.sums.index_add_(0, torch.from_numpy(seg), batch.states[torch.from_numpy(row_ids)].float())
            return
        means = segment_mean(batch.states, rows)
        lens = torch.from_numpy(rows[:, 1] - rows[:, 0]).to(device=means.device, dtype=torch.float32)
        idx = torch.from_numpy(np.concatenate(index)).to(self.sums.device)
        self.sums.index_add_(0, idx, (means * lens[:, None]).to(self.sums.device))

    def locate(self, doc: int, spans: np.ndarray) -> np.ndarray | None:
        """The segment ranges of ``spans`` of document ``doc``: (n, 2) int64 ``[first, last + 1)`` rows of
        :attr:`sums`; None when an end of a span is not a cut point."""
        p = self.points[doc]
        s = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
        k = np.searchsorted(p, s)
        if s.size and (int(k.max()) >= len(p) or (p[k] != s).any()):
            return None
        return k + self.first[doc]

    def means(self, ranges: np.ndarray, spans: np.ndarray, normalize: bool) -> torch.Tensor:
        """(n, dim) float32 mean token state of each span, from its segment range (:meth:`locate`) and its
        token span (for its length); L2-normalised when ``normalize``."""
        n, dim = ranges.shape[0], self.sums.shape[1]
        if n == 0:
            return torch.zeros((0, dim), dtype=torch.float32, device=self.sums.device)
        counts = ranges[:, 1] - ranges[:, 0]
        crow = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        cols = np.repeat(ranges[:, 0] - crow[:-1], counts) + np.arange(crow[-1], dtype=np.int64)
        lengths = (spans[:, 1] - spans[:, 0]).astype(np.float32)
        vals = np.repeat(np.float32(1.0) / lengths, counts)
        dev = self.sums.device
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            avg = torch.sparse_csr_tensor(torch.from_numpy(crow).to(dev), torch.from_numpy(cols).to(dev),
                                          torch.from_numpy(vals).to(dev), size=(n, self.sums.shape[0]),
                                          check_invariants=False)
            out = avg @ self.sums
        if normalize:
            out = torch.nn.functional.normalize(out, p=2.0, dim=1)
        return out


def _summed_sentence_vectors(sums: _SegmentSums | None, doc: int) -> SentenceVectors:
    """Sentence vectors of the late pass for document ``doc`` of ``sums`` (normalised means of the spans)."""

    def sentence_vectors(d: Document, tok: Tokenization, spans: np.ndarray) -> np.ndarray:
        where = None if sums is None else sums.locate(doc, spans)
        if where is None:
            raise RuntimeError(f"document {d.doc_id!r}: sentence spans end outside the late pass's cut points "
                               "(the strategy's cut_points() must hold every sentence start and end)")
        return sums.means(where, np.asarray(spans, dtype=np.int64), normalize=True).cpu().numpy()

    return sentence_vectors


def _reads_late_sentences(s: Strategy) -> bool:
    """True for a strategy that splits on sentence vectors of the late pass (``semantic:source=late``)."""
    return s.needs_sentence_vectors and getattr(s, "source", "late") == "late"


def text_bytes(text: str) -> int:
    """UTF-8 bytes of ``text`` (its length when ASCII, without encoding it): the unit of progress.

    Args:
        text: A document text.

    Returns:
        Its UTF-8 length in bytes (lone surrogates count 3 bytes each).
    """
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class _TextMeter:
    """A group's progress in bytes of document text, reported to ``callback`` as forward batches finish (a
    document in several macro windows advances window by window); a group's reports add up to the text bytes
    of its documents, embedded or not (:meth:`finish`)."""

    def __init__(self, callback: Callable[[int], None] | None, items: Sequence[Document | Skipped]) -> None:
        self.callback = callback
        self.total = sum(text_bytes(x.text) for x in items if isinstance(x, Document)) if callback else 0
        self.done = 0.0
        self.reported = 0
        self.per_token: list[float] = []

    def start_pass(self, docs: Sequence[Document], toks: Sequence[Tokenization]) -> None:
        if self.callback is not None:
            self.per_token = [text_bytes(d.text) / max(len(t), 1) for d, t in zip(docs, toks)]

    def encoded(self, blocks) -> None:
        if self.callback is None:
            return
        self.done += sum(self.per_token[b.doc] * b.n for b in blocks)
        self._report(min(int(self.done), self.total))

    def finish(self) -> None:
        if self.callback is not None:
            self._report(self.total)

    def _report(self, upto: int) -> None:
        if upto > self.reported:
            self.callback(upto - self.reported)  # type: ignore[misc]
            self.reported = upto


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


_TRIM_CHARS = 1 << 20
"""A tokenizer call on this many characters or more is followed by :func:`_release_free_heap`."""


def _release_free_heap() -> None:
    """Give the heap memory that is free back to the OS (glibc's ``malloc_trim``; a no-op elsewhere).

    Tokenizing a long document makes a transient of several hundred bytes a token (the tokenizer's Python lists
    of ids and offset tuples); once freed, glibc keeps most of it in the heap, so without this the late pass
    would start from a resident size that grows with the longest document tokenized so far."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim():
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


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
    unk = getattr(encoder.tokenizer, "unk_token_id", None)
    for e, tok in zip(entries, toks):
        doc_id = e.item.doc_id
        if isinstance(tok, Exception):  # text that is not valid Unicode says so (the tokenizer's TypeError does not)
            e.skip = Skipped(doc_id, surrogate_reason(e.item.text) or f"tokenizer failed: {type(tok).__name__}: {tok}")
        elif reason := unreadable_reason(tok, unk):
            e.skip = Skipped(doc_id, reason)
        elif max_tokens is not None and len(tok) > max_tokens:
            e.skip = Skipped(doc_id, f"{len(tok)} tokens > macro window {max_tokens} and macro windows are off (--long-documents skip)")
        else:
            e.tok = tok


#: how the skip reasons the pipeline gives a document it has read begin (:func:`unreadable_reason`, a tokenizer
#: or splitter that failed, a lone surrogate, a document too long with macro windows off); every other skip
#: reason is :mod:`latechunk.io`'s, given when the source was read (``latechunk verify`` tells the two apart)
PIPELINE_SKIP_PREFIXES = ("empty or whitespace-only (no tokens)", "nothing the model can read", "tokenizer failed",
                          "chunking failed")


def is_pipeline_skip(reason: str) -> bool:
    """Whether a skip reason is the pipeline's (the document was read, then not embedded), not the reader's.

    Args:
        reason: A :class:`~latechunk.types.Skipped` reason.

    Returns:
        True for the reasons of :data:`PIPELINE_SKIP_PREFIXES`, ``"N tokens > macro window ..."`` and a lone
        surrogate in the text.
    """
    import re

    return reason.startswith(PIPELINE_SKIP_PREFIXES) or bool(
        re.match(r"\d+ tokens > macro window ", reason)) or " holds a lone surrogate " in reason


def unreadable_reason(tok: Tokenization, unk_token_id: int | None) -> str:
    """Why a tokenized document holds nothing to embed (``embed`` and ``chunk`` skip it with this reason), or ``""``.

    Args:
        tok: The document's tokenization.
        unk_token_id: The tokenizer's unknown-token id (None: the tokenizer has none).

    Returns:
        ``"empty or whitespace-only (no tokens)"`` for no content token; ``"nothing the model can read: ..."`` when
        every content token is the unknown token (a vector of nothing but [UNK] is the same for every such
        document: nothing of the text is in it); else ``""``.
    """
    if tok.n_content == 0:
        return "empty or whitespace-only (no tokens)"
    if unk_token_id is not None and bool(np.all(tok.input_ids[~tok.special_tokens_mask] == unk_token_id)):
        return (f"nothing the model can read: all {tok.n_content} content token(s) are the tokenizer's unknown "
                "token (a word over its length limit, or characters outside its vocabulary)")
    return ""


def _split_failed(doc: Document, err: Exception) -> Skipped:
    log.warning("document %r skipped: %s: %s", doc.doc_id, type(err).__name__, err)
    return Skipped(doc.doc_id, f"chunking failed: {type(err).__name__}: {err}")


class _Run:
    """What one :func:`iter_embed` call holds: the encoder, the config, the macro-window plan, the sentence
    segmenter and the sentence encoders of ``semantic:source=MODEL``."""

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
        long document's token states.
        """
        meter = _TextMeter(self.on_text_bytes, g.items)
        if not g.selected:  # someone else's group: which documents it holds, nothing chunked or encoded
            g.documents = [e.item for e in entries if e.tok is not None]
            g.skipped = [e.skip for e in entries if e.tok is None]
            meter.finish()
            return g
        stats, enc, cfg = g.stats, self.encoder, self.config
        late = cfg.pools_late  # late or fused
        t0 = time.perf_counter()
        live: list[_Entry] = []
        points: list[np.ndarray] = []
        for e in entries:
            if e.tok is None:
                continue
            try:
                p = self._presplit_late(e, late)
            except Exception as err:  # noqa: BLE001  (a failing document is skipped for every strategy)
                e.skip, e.tok = _split_failed(e.item, err), None
                continue
            live.append(e)
            points.append(p)
        stats.seconds["split"] += time.perf_counter() - t0
        sums = None
        if cfg.needs_token_states and live:
            meter.start_pass([e.item for e in live], [e.tok for e in live])
            sums = self._late_pass([e.tok for e in live], points, stats, progress, meter)
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
        g.documents = [e.item for _, e, _ in kept]
        g.tokenizations = [e.tok for _, e, _ in kept]
        count_unknown = getattr(enc.tokenizer, "unknown_chars", None)
        g.unknown_chars = [count_unknown(t) for t in g.tokenizations] if callable(count_unknown) else []
        g.skipped = [e.skip for e in entries if e.tok is None]
        stats.content_tokens += sum(t.n_content for t in g.tokenizations)
        spans: dict[tuple[str, int], np.ndarray] = {}  # (spec, kept index) -> pooled token spans
        ranges: dict[tuple[str, int], np.ndarray] = {}  # (spec, kept index) -> their segment ranges in sums
        if late and kept:
            t0 = time.perf_counter()
            spans = {(s.spec, k): _pool_spans(per[j], e.tok, cfg.include_special)
                     for k, (_, e, per) in enumerate(kept) for j, s in enumerate(self.strats)}
            sums, ranges = self._locate(sums, [i for i, _, _ in kept], [e.tok for _, e, _ in kept], spans, stats)
            stats.seconds["pool"] += time.perf_counter() - t0
        for j, s in enumerate(self.strats):
            b_list = [per[j] for _, _, per in kept]
            g.boundaries[s.spec] = b_list
            g.vectors[s.spec] = {}
            by = stats.seconds_by_strategy.setdefault(s.spec, {"pool": 0.0, "naive": 0.0})
            late_v = naive_v = None
            if late:
                t0 = time.perf_counter()
                keys = [(s.spec, k) for k in range(len(kept))]
                if keys:  # the strategy's chunks of the group in one call
                    vecs = sums.means(np.concatenate([ranges[x] for x in keys]),
                                      np.concatenate([spans[x] for x in keys]), cfg.normalize)
                    late_v = vecs.cpu().numpy().astype(np.float32, copy=False)
                else:
                    late_v = np.zeros((0, enc.dim), np.float32)
                if "late" in cfg.modes:
                    g.vectors[s.spec]["late"] = late_v
                dt = time.perf_counter() - t0
                stats.seconds["pool"] += dt
                by["pool"] += dt
            if cfg.encodes_naive:  # the strategy's chunk texts of the group in one length-sorted encode call
                t0 = time.perf_counter()
                naive_v, n_tok, n_calls = naive_vectors(enc, g.documents, b_list, cfg.normalize)
                if "naive" in cfg.modes:
                    g.vectors[s.spec]["naive"] = naive_v
                dt = time.perf_counter() - t0
                stats.seconds["naive_encode"] += dt
                by["naive"] += dt
                stats.tokens["naive"] += n_tok
                stats.naive_tokens_by_strategy[s.spec] = stats.naive_tokens_by_strategy.get(s.spec, 0) + n_tok
                stats.forward_calls["naive"] += n_calls
            if "fused" in cfg.modes:  # the two vectors of each chunk, unit-normalised and summed
                g.vectors[s.spec]["fused"] = fused_vectors(late_v, naive_v, cfg.normalize)
            if "contextual" in cfg.modes:  # header + blank line + naive text, one length-sorted encode call
                t0 = time.perf_counter()
                g.vectors[s.spec]["contextual"], n_tok, n_calls = contextual_vectors(enc, g.documents, b_list,
                                                                                     cfg.normalize)
                dt = time.perf_counter() - t0
                stats.seconds["contextual_encode"] += dt
                by["contextual"] = by.get("contextual", 0.0) + dt
                stats.tokens["contextual"] = stats.tokens.get("contextual", 0) + n_tok
                stats.contextual_tokens_by_strategy[s.spec] = stats.contextual_tokens_by_strategy.get(s.spec, 0) + n_tok
                stats.forward_calls["contextual"] = stats.forward_calls.get("contextual", 0) + n_calls
        meter.finish()
        return g

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
        for j, s in enumerate(self.strats):
            b = e.pre[j]
            if b is None and not _reads_late_sentences(s):
                b = e.pre[j] = s.split(e.item, tok, _model_sentence_vectors(self.sentence_encoders[getattr(s, 'source', 'late')]),
                                       sentences=self.segmenter)
            if b is not None:
                if late:
                    ends.append(_pool_spans(b, tok, cfg.include_special).reshape(-1))
                continue
            cuts = s.cut_points(e.item, tok, self.segmenter)
            if cuts is None:
                return np.arange(n + 1, dtype=np.int64)
            ends.append(np.asarray(cuts, dtype=np.int64).reshape(-1))
        return np.unique(np.concatenate(ends))

    def _late_pass(self, toks: list[Tokenization], points: list[np.ndarray], stats: PipelineStats,
                   progress: bool, meter: _TextMeter | None) -> _SegmentSums:
        """One streamed late pass over ``toks``: the sums of token states between consecutive ``points`` of
        each document, pooled one forward batch at a time."""
        enc = self.encoder
        before = dict(enc.stats)
        t0 = time.perf_counter()
        sums = _SegmentSums(points, enc.dim, enc.device)
        for batch in enc.iter_token_states(toks, self.macro_window, progress=progress):
            sums.add(batch)
            if meter is not None:
                meter.encoded(batch.blocks)
        stats.seconds["late_encode"] += time.perf_counter() - t0
        stats.tokens["late"] += enc.stats["tokens"] - before["tokens"]
        stats.forward_calls["late"] += enc.stats["forward_calls"] - before["forward_calls"]
        return sums

    def _locate(self, sums: _SegmentSums, docs: list[int], toks: list[Tokenization],
                spans: dict[tuple[str, int], np.ndarray], stats: PipelineStats
                ) -> tuple[_SegmentSums, dict[tuple[str, int], np.ndarray]]:
        """Where each span lies in ``sums`` (segment ranges); ``docs[k]`` is kept document k's index in
        ``sums``. A document whose chunks end where its cut points did not say (a strategy's
        :meth:`Strategy.cut_points` missed one) is encoded once more, cut at its actual chunk ends, so its
        vectors are exact all the same."""
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
        extra = self._late_pass([toks[k] for k in again], points, stats, False, None)
        merged = _SegmentSums.concat(sums, extra)
        for m, k in enumerate(again):
            for s in self.strats:
                ranges[s.spec, k] = merged.locate(len(sums.points) + m, spans[s.spec, k])
        return merged, ranges


class _Stopped(BaseException):
    """Raised inside the prefetch thread when its consumer has stopped (Ctrl-C, an error, a break)."""


def _stop_thread(t: threading.Thread) -> None:
    """Raise :class:`_Stopped` in thread ``t`` at its next Python instruction (CPython's
    ``PyThreadState_SetAsyncExc``): a thread inside a native call (one tokenizer slice, one pysbd block) stops
    when that call returns, not at the end of its document."""
    import ctypes

    if t.ident is not None and t.is_alive():
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(t.ident), ctypes.py_object(_Stopped))


def _prefetch(it: Iterator, depth: int = 1) -> Iterator:
    """Run ``it`` one step ahead in a background thread (tokenization overlaps device work; the Rust
    tokenizer releases the GIL). Order is preserved and exceptions are re-raised in the caller. A consumer that
    stops early (Ctrl-C, an error, a break) stops the thread where it is: a long document is tokenized and
    segmented in slices, so that takes one slice (well under a second), not the rest of the document."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    done = object()
    stop = threading.Event()

    def worker() -> None:
        try:
            try:
                for x in it:
                    if stop.is_set():
                        return
                    q.put((True, x))
                    if stop.is_set():
                        return
                q.put((True, done))
            except _Stopped:
                return
            except BaseException as err:  # noqa: BLE001  (re-raised in the consumer)
                q.put((False, err))
        except _Stopped:  # arrived while the error above was being handed over: nobody reads it any more
            return

    t = threading.Thread(target=worker, daemon=True, name="latechunk-tokenize")
    t.start()
    ended = False  # the worker has handed over its end (done or an error) and returns by itself
    try:
        while True:
            ok, x = q.get()
            if not ok:
                ended = True
                raise x
            if x is done:
                ended = True
                return
            yield x
    finally:
        # a consumer that stops early (an error, a break, Ctrl-C) stops the worker and waits for it, draining the
        # queue so it cannot block: a thread left inside native code at interpreter exit aborts the process
        stop.set()
        if not ended:
            _stop_thread(t)
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
    on_text_bytes: Callable[[int], None] | None = None,
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
        on_text_bytes: Progress in bytes of document text (:func:`text_bytes`), called from the consuming
            thread with the bytes done since the last call: as each forward batch of the late pass finishes (in
            proportion to the tokens of each document it encoded, so one long document advances macro window
            by macro window) and when a group ends. A group's calls add up to the text bytes of its documents,
            embedded, skipped or in an unselected group (the reader's skipped items have no text: 0).

    Returns:
        An iterator of :class:`GroupResult`, in input order; ``groups[i + 1].start == groups[i].end``. The
        prefetch thread starts at the first ``next()``; closing the iterator early stops it (and closes a
        segmenter made here).

    Raises:
        ValueError: on a macro window that does not fit the model (:meth:`MacroWindow.check
            <latechunk.macro_window.MacroWindow.check>`), late pooling of a model that does not mean-pool
            without ``config.late_pooling="mean"`` (:meth:`PipelineConfig.check_model
            <latechunk.config.PipelineConfig.check_model>`), or a ``semantic:source=MODEL`` model that does not
            load (when called, before any item is read).
        TypeError: if a ``semantic:source=MODEL`` model's tokenizer is not a fast tokenizer.

    Errors while the stream runs (reading, encoding) propagate from ``next()``; a document that fails to
    tokenize or split is a skipped item, not an error.
    """
    run_encoders = dict(sentence_encoders or {})
    for s in config.strategies:  # a named sentence model is loaded up front: a bad name fails before any work
        source = getattr(s, "source", "late")
        if s.needs_sentence_vectors and source != "late" and source not in run_encoders:
            run_encoders[source] = Encoder(source, device=str(encoder.device))
    own = segmenter is None
    seg = SentenceSegmenter(workers=config.sentence_workers) if own else segmenter
    run = _Run(encoder, config, seg, run_encoders, on_text_bytes)
    return _stream(run, items, select_group, progress, seg if own else None)


class GroupRunner:
    """The two halves of :func:`iter_embed` for an engine that runs them in different processes (``embed --engine
    ray``: the first as a CPU task, the second in an encoder actor), on one group of input items at a time.

    :meth:`prepare` is the prefetch thread's work (tokenize, screen, segment sentences, split every strategy that
    needs no sentence vectors); :meth:`embed` is the calling thread's (the streamed late pass, pooling, the
    sentence-vector strategies, naive/contextual encoding). Its result equals :func:`iter_embed`'s for the same
    group, so shards written from it equal a single process's.

    Args:
        encoder: The encoder (its tokenizer and facts serve :meth:`prepare`; its model serves :meth:`embed`).
        config: Strategies, modes and pooling settings.
        segmenter: The sentence segmenter (default: one without worker processes).
        sentence_encoders: Encoders for ``semantic:source=MODEL`` by model name (loaded here otherwise).

    Raises:
        ValueError: as :func:`iter_embed`.
    """

    def __init__(self, encoder: Encoder, config: PipelineConfig, segmenter: SentenceSegmenter | None = None,
                 sentence_encoders: dict[str, Encoder] | None = None) -> None:
        run_encoders = dict(sentence_encoders or {})
        for s in config.strategies:
            source = getattr(s, "source", "late")
            if s.needs_sentence_vectors and source != "late" and source not in run_encoders:
                run_encoders[source] = Encoder(source, device=str(encoder.device))
        self._run = _Run(encoder, config, segmenter or SentenceSegmenter(workers=0), run_encoders)

    def prepare(self, items: Sequence[Document | Skipped], index: int, start: int) -> tuple[GroupResult, list]:
        """Tokenize, screen and pre-split ``items``, which must form exactly one group (as :func:`iter_embed`
        with ``select_group`` returning False found them).

        Args:
            items: The group's input items, in input order.
            index: The group's number in the whole stream.
            start: Input position of its first item in the whole stream.

        Returns:
            ``(group, entries)``, picklable, for :meth:`embed`.

        Raises:
            RuntimeError: if ``items`` do not form exactly one group (the tokenizer differs from the one that
                formed the groups).
        """
        out = list(self._run.prepared_groups(items, None))
        if len(out) != 1:
            raise RuntimeError(f"group {index} (input items from {start}): its {len(items)} items formed "
                               f"{len(out)} groups here; the tokenizer differs from the one that formed them")
        g, entries = out[0]
        g.index, g.start = index, start
        for e in entries:
            e.pos += start
        return g, entries

    def embed(self, prepared: tuple[GroupResult, list]) -> GroupResult:
        """Encode, pool and finish splitting a group from :meth:`prepare`.

        Args:
            prepared: :meth:`prepare`'s result.

        Returns:
            The :class:`GroupResult` (as :func:`iter_embed` yields it).
        """
        g, entries = prepared
        return self._run.embed_group(g, entries, False)


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
    strategy. Naive mode encodes every chunk's text on its own; contextual mode the same text after its header
    ``[title > section path]`` and a blank line. Strategies needing sentence vectors
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
        if "contextual" in config.modes:
            run.tokens_encoded["contextual"] = stats.contextual_tokens_by_strategy.get(s.spec, 0)
            run.seconds["contextual"] = by.get("contextual", 0.0)
        if "fused" in config.modes:  # both encodings
            run.tokens_encoded["fused"] = stats.tokens["late"] + stats.naive_tokens_by_strategy.get(s.spec, 0)
            run.seconds["fused"] = stats.seconds["late_encode"] + by["pool"] + by["naive"]
    return EmbedResult(embedded, toks_out, skipped, runs, stats)


def chunk_documents(
    documents: Iterable[Document],
    strategy: str | Strategy,
    tokenizer,
    sentence_vectors: SentenceVectors | None = None,
    segmenter: SentenceSegmenter | None = None,
) -> Iterator[tuple[Document, Boundaries | None, str]]:
    """Chunk documents without an encoder (all strategies but ``semantic`` need none).

    Args:
        documents: The documents (consumed lazily, one at a time).
        strategy: A SPEC or Strategy.
        tokenizer: A :class:`~latechunk.tokenize.DocumentTokenizer` (or any ``doc -> Tokenization`` callable);
            use the encoder's document tokenizer so that token spans equal ``embed``'s.
        sentence_vectors: Sentence vectors for ``semantic`` (see :data:`~latechunk.strategies.base.SentenceVectors`).
        segmenter: The sentence segmenter (default: a fresh in-process one).

    Yields:
        ``(doc, boundaries, "")`` per chunked document, or ``(doc, None, reason)`` for a skipped one (no content
        tokens or nothing but the unknown token, :func:`unreadable_reason`, as ``embed`` skips; or the tokenizer or
        strategy failed on it).

    Raises:
        ValueError: on an unknown strategy spec, or ``semantic`` without ``sentence_vectors`` (at the first
            ``next()``: this is a generator).
    """
    strat = get_strategy(strategy)
    if strat.needs_sentence_vectors and sentence_vectors is None:
        raise ValueError(f"strategy {strat.name!r} needs sentence vectors: run it through embed() or pass a model")
    seg = segmenter if segmenter is not None else SentenceSegmenter()
    unk = getattr(tokenizer, "unk_token_id", None)
    for doc in documents:
        try:
            tok = tokenizer(doc)
            if len(doc.text) >= _TRIM_CHARS:  # the tokenizer's freed transient back to the OS before the split
                _release_free_heap()
            reason = unreadable_reason(tok, unk)
            if reason:  # the documents embed skips, skipped here too: chunk's rows are embed's chunk table
                yield doc, None, reason
                continue
            yield doc, strat.split(doc, tok, sentence_vectors, sentences=seg), ""
        except Exception as err:  # noqa: BLE001
            yield doc, None, f"chunking failed: {type(err).__name__}: {err}"
