"""Ray's half-and-half form of the pipeline: :class:`GroupRunner` runs :func:`~latechunk.pipeline.iter_embed`'s
two halves (the prefetch thread's and the calling thread's) on one group at a time, for an engine that runs them in
different processes (``embed --engine ray``: :mod:`latechunk.ingest.ray_engine`).
"""

from __future__ import annotations

from collections.abc import Sequence

from latechunk.config import PipelineConfig
from latechunk.encoder import Encoder
from latechunk.pipeline.results import GroupResult
from latechunk.pipeline.run import _Run, _sentence_encoders
from latechunk.sentences import SentenceSegmenter
from latechunk.types import Document, Skipped


class GroupRunner:
    """The two halves of :func:`~latechunk.pipeline.iter_embed` for an engine that runs them in different processes (``embed --engine
    ray``: the first as a CPU task, the second in an encoder actor), on one group of input items at a time.

    :meth:`prepare` is the prefetch thread's work (tokenize, screen, segment sentences, split every strategy that
    needs no sentence vectors); :meth:`embed` is the calling thread's (the streamed late pass, pooling, the
    sentence-vector strategies, naive/contextual encoding). Its result equals :func:`~latechunk.pipeline.iter_embed`'s for the same
    group, so shards written from it equal a single process's.

    Args:
        encoder: The encoder (its tokenizer and facts serve :meth:`prepare`; its model serves :meth:`embed`).
        config: Strategies, modes and pooling settings.
        segmenter: The sentence segmenter (default: one without worker processes).
        sentence_encoders: Encoders for ``semantic:source=MODEL`` by model name (loaded here otherwise).

    Raises:
        ValueError: as :func:`~latechunk.pipeline.iter_embed`.
    """

    def __init__(self, encoder: Encoder, config: PipelineConfig, segmenter: SentenceSegmenter | None = None,
                 sentence_encoders: dict[str, Encoder] | None = None) -> None:
        self._run = _Run(encoder, config, segmenter or SentenceSegmenter(workers=0),
                         _sentence_encoders(config, encoder, sentence_encoders))

    def prepare(self, items: Sequence[Document | Skipped], index: int, start: int) -> tuple[GroupResult, list]:
        """Tokenize, screen and pre-split ``items``, which must form exactly one group (as :func:`~latechunk.pipeline.iter_embed`
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
            The :class:`GroupResult` (as :func:`~latechunk.pipeline.iter_embed` yields it).
        """
        g, entries = prepared
        return self._run.embed_group(g, entries, False)
