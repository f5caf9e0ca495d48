"""Tokenize once, encode once, pool many times: late and naive chunk vectors for many strategies.

The package's modules are split by concern in the next step; every name is importable from ``latechunk.pipeline``
as it was from the one module before (:mod:`latechunk.pipeline.run` holds them for now).
"""

from latechunk.pipeline.run import _TRIM_CHARS as _TRIM_CHARS
from latechunk.pipeline.run import (
    CONTEXTUAL_SEPARATOR,
    PIPELINE_SKIP_PREFIXES,
    STAGES,
    EmbedResult,
    GroupResult,
    GroupRunner,
    PipelineStats,
    Skipped,
    StrategyRun,
    chunk_documents,
    contextual_headers,
    contextual_texts,
    contextual_vectors,
    embed,
    fused_vectors,
    is_pipeline_skip,
    iter_embed,
    late_vectors,
    naive_texts,
    naive_vectors,
    presegment_for,
    text_bytes,
    unreadable_reason,
)
from latechunk.pipeline.run import _late_sentence_vectors as _late_sentence_vectors
from latechunk.pipeline.run import _prefetch as _prefetch
from latechunk.pipeline.run import _release_free_heap as _release_free_heap
from latechunk.pipeline.run import _Run as _Run
from latechunk.pipeline.run import _SegmentSums as _SegmentSums

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
    "fused_vectors",
    "is_pipeline_skip",
    "iter_embed",
    "late_vectors",
    "naive_texts",
    "naive_vectors",
    "presegment_for",
    "text_bytes",
    "unreadable_reason",
]
