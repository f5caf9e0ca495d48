"""Chunk vectors per mode, all from the same Boundaries (the stored chunk text is always the exact slice).

- **late** (Günther, Mohr, Williams, Wang, Xiao 2024, "Late Chunking: Contextual Chunk Embeddings Using
  Long-Context Embedding Models", arXiv:2409.04701): the document is encoded once (or in overlapping macro
  windows) and each chunk vector is the mean of the token states in its token span. :func:`late_vectors` is the
  reference form over whole-document states; the pipeline itself pools from the segment sums of its streamed
  pass (:mod:`latechunk.pipeline.sums`) and gives the same vectors to float32 rounding.
- **naive**: each chunk's original substring is encoded on its own with the model's own pooling
  (:func:`naive_texts`, :func:`naive_vectors`).
- **contextual** (seed 001 of the design notes; Anthropic, "Introducing Contextual Retrieval", 2024): each chunk
  is encoded as in naive mode, with its contextual header ``[title > section path]``
  (:func:`latechunk.titles.contextual_header`) and a blank line before it (:func:`contextual_texts`,
  :func:`contextual_vectors`).
- **fused**: each chunk's late and naive vectors, each unit-normalised, summed (:func:`fused_vectors` on arrays,
  :func:`fused_chunk_vectors` on two :class:`~latechunk.types.ChunkVectors` of the same chunks).

Also the sentence vectors that ``semantic`` splits on: from whole-document states or from a named model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from latechunk.encoder import Encoder
from latechunk.pipeline.results import pack_chunk_vectors
from latechunk.pooling import segment_mean
from latechunk.strategies.base import SentenceVectors
from latechunk.titles import contextual_header, document_title
from latechunk.types import Boundaries, ChunkVectors, Document, Tokenization


# ------------------------------------------------------------------------------------------------ late
def _pool_spans(b: Boundaries, tok: Tokenization, include_special: bool, pooled: np.ndarray | None = None
                ) -> np.ndarray:
    """The token spans late mode pools for ``b``'s chunks: ``pooled`` (a strategy's
    :meth:`~latechunk.strategies.base.Strategy.pool_spans`) or the chunks' own, the frame added at the ends with
    ``include_special``."""
    spans = (b.token_spans if pooled is None else pooled).astype(np.int64, copy=True)
    if include_special and len(spans):
        # jina's convention: the first chunk absorbs the lead frame, the last the trail frame
        spans[0, 0] = 0
        spans[-1, 1] = len(tok)
    return spans


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


# ------------------------------------------------------------------------------------------------ naive
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


# ------------------------------------------------------------------------------------------------ contextual
CONTEXTUAL_SEPARATOR = "\n\n"
"""What stands between a chunk's contextual header and its text in contextual mode (a blank line)."""


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


def encode_chunk_vectors(encoder: Encoder, mode: str, documents: Sequence[Document], boundaries: Sequence[Boundaries],
                         normalize: bool = True) -> tuple[ChunkVectors, int, int]:
    """Naive- or contextual-mode vectors of the chunks of several documents, with their chunk records.

    The same encode as :func:`naive_vectors` or :func:`contextual_vectors` (one length-sorted call), packed with
    :func:`~latechunk.pipeline.results.pack_chunk_vectors`.

    Args:
        encoder: The encoder.
        mode: ``"naive"`` or ``"contextual"``.
        documents: The documents, in order.
        boundaries: Their boundaries, same order.
        normalize: L2-normalise each vector.

    Returns:
        ``(vectors, tokens, forward_calls)``: a :class:`~latechunk.types.ChunkVectors` of that mode (rows in
        document then chunk order), the tokens sent through the encoder and its forward calls.

    Raises:
        ValueError: on another mode, or if a document is paired with the boundaries of another document.
    """
    texts_of = {"naive": naive_texts, "contextual": contextual_texts}.get(mode)
    if texts_of is None:
        raise ValueError(f"encode_chunk_vectors: mode {mode!r} is not a text mode (naive or contextual)")
    vectors, tokens, calls = _encode_chunk_texts(encoder, documents, boundaries, texts_of, normalize)
    return pack_chunk_vectors(boundaries, vectors, mode, normalize), tokens, calls


# ------------------------------------------------------------------------------------------------ fused
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


def fused_chunk_vectors(late: ChunkVectors, naive: ChunkVectors, normalize: bool = True) -> ChunkVectors:
    """Fused-mode vectors of chunks whose late and naive vectors were made apart (two passes, or one pass's late
    vectors and another's naive vectors of the same chunks): :func:`fused_vectors` with the chunk records kept.

    Args:
        late: Late-mode vectors.
        naive: Naive-mode vectors of the same chunk records (document ids, chunk index, cumulative counts).
        normalize: L2-normalise the sum.

    Returns:
        A ``"fused"`` :class:`~latechunk.types.ChunkVectors` with ``late``'s chunk records.

    Raises:
        ValueError: if ``late`` or ``naive`` is of another mode, or the two hold different chunk records.
    """
    if late.mode != "late" or naive.mode != "naive":
        raise ValueError(f"fused_chunk_vectors: takes late and naive vectors, got {late.mode} and {naive.mode}")
    if (late.doc_ids != naive.doc_ids or not np.array_equal(late.chunk_index, naive.chunk_index)
            or not np.array_equal(late.cu_chunks, naive.cu_chunks)):
        raise ValueError("fused_chunk_vectors: the late and naive vectors are of different chunk records")
    return ChunkVectors(fused_vectors(late.vectors, naive.vectors, normalize), late.doc_ids, late.chunk_index,
                        late.cu_chunks, "fused", normalized=normalize)
