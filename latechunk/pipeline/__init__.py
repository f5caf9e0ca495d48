"""Tokenize once, encode once, pool many times: late and naive chunk vectors for many strategies.

Late chunking (Günther, Mohr, Williams, Wang, Xiao 2024, "Late Chunking: Contextual Chunk Embeddings Using
Long-Context Embedding Models", arXiv:2409.04701): the document is encoded once (or in overlapping macro windows)
and each chunk vector is the mean of the token states in its token span. Naive chunking: each chunk's original
substring is encoded on its own with the model's own pooling. Contextual headers (seed 001 of the design notes;
Anthropic, "Introducing Contextual Retrieval", 2024): each chunk is encoded as in naive mode, with its contextual
header ``[title > section path]`` (:func:`latechunk.titles.contextual_header`) and a blank line before it, the other
way to give a chunk its context. Fused: each chunk's late and naive vectors, each unit-normalised, summed. All modes
use the *same* Boundaries; the stored chunk text is always the exact slice, never the header.

In late mode the token states of one document serve every strategy of the run: N strategies cost one forward
pass per document (or per macro window), not N. Input items are processed in groups (a token budget), so memory
stays bounded by the group, not the corpus; and the late pass pools each forward batch as it is done, so memory
stays bounded by one batch and the chunk vectors, not by the longest document's token states (the segment sums of
:mod:`~latechunk.pipeline.sums`).

Data flow of :func:`iter_embed` (two threads, one hand-off per group):

- prefetch thread (``_Run.prepared_groups``): read input items, tokenize documents in batches, screen them
  (no content tokens, too long with ``long_documents="skip"``), form groups by token budget, segment the group's
  sentences ahead (:meth:`SentenceSegmenter.presegment`) and split every strategy that needs no sentence
  vectors. It fills the group's tokenize/split timings, then hands the group over.
- calling thread (``_Run.embed_group``): the split of strategies whose sentence vectors come from a named model,
  the streamed late pass (:meth:`Encoder.iter_token_states` into the segment sums), the split of strategies that
  read the late pass's sentence vectors (``semantic``), late vectors from the sums, and naive, fused and
  contextual vectors. Progress is reported in bytes of document text as forward batches finish
  (``on_text_bytes``).

Each :class:`GroupResult` carries its input positions (``start``, ``items``) and its own :class:`PipelineStats`,
written by one thread at a time; :meth:`GroupResult.chunk_vectors` and :class:`StrategyRun` ``.vectors`` give a
mode's vectors as :class:`~latechunk.types.ChunkVectors` (:func:`pack_chunk_vectors`, the one place they are
packed).

The package, one module per concern: :mod:`~latechunk.pipeline.results` (:class:`GroupResult`,
:class:`EmbedResult`, :class:`StrategyRun`, :class:`PipelineStats`, :func:`pack_chunk_vectors`),
:mod:`~latechunk.pipeline.modes` (the vectors of each mode: :func:`late_vectors`, :func:`naive_vectors`,
:func:`contextual_vectors`, :func:`fused_vectors`, :func:`fused_chunk_vectors`, :func:`encode_chunk_vectors`),
:mod:`~latechunk.pipeline.sums` (the streamed late pass's segment sums), :mod:`~latechunk.pipeline.items` (input
items: tokenize, screen, skip reasons, sentences ahead, progress in text bytes),
:mod:`~latechunk.pipeline.prefetch` (the prefetch thread, heap trimming), :mod:`~latechunk.pipeline.run` (one
group's work: ``_Run``), :mod:`~latechunk.pipeline.stream` (:func:`iter_embed`, :func:`embed`,
:func:`chunk_documents`) and :mod:`~latechunk.pipeline.group_runner` (:class:`GroupRunner`, for Ray). Every name is
importable from ``latechunk.pipeline`` as it was from the one module before; patch a seam where it is defined (e.g.
``latechunk.pipeline.sums._SegmentSums``).

Tests: ``tests/pipeline/test_pipeline.py``, ``tests/pipeline/test_contextual.py``, ``tests/pipeline/test_fused.py``,
``tests/encoder/test_encoder_overlap.py``, ``tests/test_tokenize_slices.py``.
"""

from latechunk.pipeline.group_runner import GroupRunner
from latechunk.pipeline.items import (
    PIPELINE_SKIP_PREFIXES,
    is_pipeline_skip,
    presegment_for,
    text_bytes,
    unreadable_reason,
)
from latechunk.pipeline.items import _Entry as _Entry
from latechunk.pipeline.items import _item_batches as _item_batches
from latechunk.pipeline.items import _split_failed as _split_failed
from latechunk.pipeline.items import _TextMeter as _TextMeter
from latechunk.pipeline.items import _tokenize_batch as _tokenize_batch
from latechunk.pipeline.modes import (
    CONTEXTUAL_SEPARATOR,
    contextual_headers,
    contextual_texts,
    contextual_vectors,
    encode_chunk_vectors,
    fused_chunk_vectors,
    fused_vectors,
    late_vectors,
    naive_texts,
    naive_vectors,
)
from latechunk.pipeline.modes import _encode_chunk_texts as _encode_chunk_texts
from latechunk.pipeline.modes import _late_sentence_vectors as _late_sentence_vectors
from latechunk.pipeline.modes import _model_sentence_vectors as _model_sentence_vectors
from latechunk.pipeline.modes import _pool_spans as _pool_spans
from latechunk.pipeline.prefetch import _TRIM_CHARS as _TRIM_CHARS
from latechunk.pipeline.prefetch import _malloc_trim as _malloc_trim
from latechunk.pipeline.prefetch import _prefetch as _prefetch
from latechunk.pipeline.prefetch import _release_free_heap as _release_free_heap
from latechunk.pipeline.prefetch import _stop_thread as _stop_thread
from latechunk.pipeline.prefetch import _Stopped as _Stopped
from latechunk.pipeline.results import (
    STAGES,
    EmbedResult,
    GroupResult,
    PipelineStats,
    StrategyRun,
    pack_chunk_vectors,
)
from latechunk.pipeline.run import _Run as _Run
from latechunk.pipeline.stream import _stream as _stream
from latechunk.pipeline.stream import chunk_documents, embed, iter_embed
from latechunk.pipeline.sums import _reads_late_sentences as _reads_late_sentences
from latechunk.pipeline.sums import _SegmentSums as _SegmentSums
from latechunk.pipeline.sums import _summed_sentence_vectors as _summed_sentence_vectors
from latechunk.types import Skipped

__all__ = [
    "CONTEXTUAL_SEPARATOR",
    "PIPELINE_SKIP_PREFIXES",
    "STAGES",
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
    "encode_chunk_vectors",
    "fused_chunk_vectors",
    "fused_vectors",
    "is_pipeline_skip",
    "iter_embed",
    "late_vectors",
    "naive_texts",
    "naive_vectors",
    "pack_chunk_vectors",
    "presegment_for",
    "text_bytes",
    "unreadable_reason",
]
