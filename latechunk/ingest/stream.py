"""Streaming and resume: the input items through :func:`latechunk.pipeline.iter_embed`, one shard per group.

Each :class:`~latechunk.pipeline.GroupResult` carries its input positions (``start``, ``items``), so a shard's
input range and the running digest of the input items (:func:`chain`) come straight from it. ``--resume`` skips
the items the complete shards consumed (:func:`skip_consumed`, checked against that digest) and starts the
pipeline at the next item: groups are formed from token counts alone and a group's budget restarts at every
group boundary, so the resumed run forms the same groups, forward batches and vectors as an uninterrupted one.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from latechunk.config import EmbedConfig
from latechunk.ingest.files import sha256_text
from latechunk.ingest.shards import write_shard
from latechunk.io import count_input_bytes, count_inputs
from latechunk.output import OutputFolder
from latechunk.pipeline import GroupResult, iter_embed
from latechunk.types import Document, Skipped

__all__ = ["ShardInput", "chain", "shard_stats", "skip_consumed", "stream", "write_group"]


def chain(digest: str, item: Document | Skipped) -> str:
    """Running digest of the consumed input items: ``sha256(prev | type | doc_id | text sha256 or reason)``
    (``type`` is ``D`` for a document, ``S`` for a skipped item, whose source is hashed too).

    Args:
        digest: The digest before ``item`` (``""`` before the first item).
        item: The next input item.

    Returns:
        The digest after ``item`` (sha256 hex).
    """
    if isinstance(item, Document):
        part = f"D\0{item.doc_id}\0{sha256_text(item.text)}"
    else:
        part = f"S\0{item.doc_id}\0{item.reason}\0{item.source}"
    return hashlib.sha256(f"{digest}\0{part}".encode()).hexdigest()


def skip_consumed(items: Iterator, consumed: int, expected_digest: str) -> str:
    """Read the first ``consumed`` input items (those the kept shards consumed) and check their digest.

    Args:
        items: The input stream (advanced by ``consumed`` items).
        consumed: Items to skip.
        expected_digest: The last kept shard's ``inputs_digest`` (``""`` when ``consumed == 0``).

    Returns:
        The running digest after them.

    Raises:
        ValueError: if the inputs now hold fewer items, or other ones ("the inputs changed").
    """
    digest = ""
    for i in range(consumed):
        try:
            digest = chain(digest, next(items))
        except StopIteration:
            raise ValueError(f"--resume: the inputs now hold {i} items, but the interrupted run had consumed "
                             f"{consumed}; pass --force to start over") from None
    if digest != expected_digest:
        raise ValueError("--resume: the inputs changed since the interrupted run (the items it consumed differ); "
                         "pass --force to start over")
    return digest


@dataclass(frozen=True)
class ShardInput:
    """What one shard is made of.

    Attributes:
        k: Shard number.
        start / end: Input items ``[start, end)`` it covers (positions in the whole input stream).
        digest: Running digest of the input items up to ``end``.
        group: The pipeline group (``None`` for the one empty shard of a run without input items).
        skipped: Its skipped items as records ``{"doc_id", "reason", "source"}``, in input order.
    """

    k: int
    start: int
    end: int
    digest: str
    group: GroupResult | None
    skipped: list[dict]

    @property
    def inputs(self) -> tuple[int, int]:
        """``(start, end)``."""
        return self.start, self.end


def _skipped_records(g: GroupResult) -> list[dict]:
    """The group's skipped items as records, in input order; a document the pipeline skipped takes its source
    from the document's metadata."""
    embedded = {id(d) for d in g.documents}
    out, j = [], 0
    for item in g.items:
        if isinstance(item, Document) and id(item) in embedded:
            continue
        if j >= len(g.skipped) or g.skipped[j].doc_id != item.doc_id:
            raise RuntimeError(f"pipeline group {g.index}: skipped items do not follow the input order at "
                               f"{item.doc_id!r}")
        s = g.skipped[j]
        j += 1
        source = item.source if isinstance(item, Skipped) else str(item.metadata.get("source", ""))
        out.append({"doc_id": s.doc_id, "reason": s.reason, "source": s.source or source})
    if j != len(g.skipped):
        raise RuntimeError(f"pipeline group {g.index}: {len(g.skipped) - j} skipped items are not among its inputs")
    return out


def shard_stats(g: GroupResult | None, mode: str) -> dict:
    """A shard record's ``stats``: ``{"content_tokens", "tokens_encoded", "forward_calls", "seconds"}`` of the
    run's ``mode`` (tokens through the encoder, forward calls, wall seconds per pipeline stage).

    Args:
        g: The shard's group; None for the one empty shard of a run without input items (all zero).
        mode: ``"late"`` or ``"naive"``.

    Returns:
        The stats dict (counts in tokens and calls, ``seconds`` per stage).
    """
    if g is None:
        return {"content_tokens": 0, "tokens_encoded": 0, "forward_calls": 0, "seconds": {}}
    s = g.stats
    return {"content_tokens": s.content_tokens, "tokens_encoded": s.tokens.get(mode, 0),
            "forward_calls": s.forward_calls.get(mode, 0), "seconds": dict(s.seconds)}


def write_group(folder: OutputFolder, config: EmbedConfig, dim: int, shard: ShardInput) -> dict:
    """Write ``shard`` (a selected group, or the empty shard) as shard ``shard.k``.

    Args:
        folder: The output folder.
        config: The run (its one strategy and mode pick the group's boundaries and vectors).
        dim: Vector dimension (for the (0, dim) vectors of an empty shard).
        shard: The shard's group, positions and digest.

    Returns:
        The shard record (:func:`~latechunk.ingest.shards.write_shard`).

    Raises:
        RuntimeError: if the group's vectors and chunk rows differ in number (a bug).
        OSError: if a shard file cannot be written.
    """
    spec, g = config.strategy.spec, shard.group
    docs, bounds, vecs = (g.documents, g.boundaries.get(spec, []), g.vectors.get(spec, {}).get(config.mode)) \
        if g is not None else ([], [], None)
    if vecs is None:
        vecs = np.zeros((0, dim), np.float32)
    return write_shard(folder, shard.k, shard.inputs, shard.digest, docs, bounds, vecs, shard.skipped, spec,
                       shard_stats(g, config.mode))


def stream(config: EmbedConfig, encoder, items: Iterator, start: int, digest: str, k0: int,
           select: Callable[[int], bool] | None, on_shard: Callable[[ShardInput], None],
           progress: bool = False, bar_start: int | None = None) -> tuple[int, int, str]:
    """Run the pipeline over ``items`` and hand each group to ``on_shard`` as shard ``k0, k0 + 1, ...``.

    Args:
        config: The run.
        encoder: The encoder.
        items: The input items from position ``start`` on.
        start: Position of the first of ``items`` in the whole input stream.
        digest: Running digest of the items before ``start``.
        k0: Number of the first shard.
        select: ``select(k)`` picks the shards to chunk and encode (default all); the others arrive as light
            groups (``group.selected`` False), whose positions and digest still count.
        on_shard: Called once per shard, in order.
        progress: Show a progress bar in bytes of document text (UTF-8), with its rate and time left: its
            total is counted ahead from the input files' sizes (:func:`~latechunk.io.count_input_bytes`), and
            it moves as each forward batch of the late pass finishes (one long document advances macro window
            by macro window; many small ones batch by batch) and as each group ends (naive mode, skipped
            items, other ranks' groups). Its postfix counts input items (counted ahead,
            :func:`~latechunk.io.count_inputs`).
        bar_start: Items of ``config.inputs`` consumed before ``items`` (for the progress bar); default ``start``
            (a resumed run). An append gives 0: its inputs start at ``items`` while ``start`` counts the
            folder's earlier items.

    Returns:
        ``(shards, items consumed, digest after them)``; ``shards`` counts from 0 (i.e. ``k0`` + new ones).
        A run without any input item gets one empty shard.

    Raises:
        ValueError: as :func:`~latechunk.pipeline.iter_embed` (a macro window that does not fit the model).
        RuntimeError: if a pipeline group arrives out of order or its skipped items do not follow the input
            order (a bug).
    """
    k, pos = k0, start
    bar, n_items = None, 0
    before = start if bar_start is None else bar_start  # items of config.inputs consumed before ``items``
    if progress:
        from tqdm.auto import tqdm

        n_items = max(count_inputs(config.inputs), before)
        total = count_input_bytes(config.inputs)
        # a resumed run: the consumed items' share of the bytes, estimated by their number
        initial = total * before // n_items if n_items else 0
        bar = tqdm(total=total, initial=initial, unit="B", unit_scale=True, desc="embed")
        bar.set_postfix_str(f"items {before}/{n_items}", refresh=False)
    groups = iter_embed(items, encoder, config.pipeline,
                        select_group=None if select is None else (lambda i: select(k0 + i)),
                        on_text_bytes=None if bar is None else bar.update)
    try:
        with contextlib.closing(groups):  # on an error, stop the prefetch thread before it propagates
            for g in groups:
                if k0 + g.index != k or start + g.start != pos:
                    raise RuntimeError(f"pipeline group {g.index} (input items from {start + g.start}) arrived "
                                       f"where group {k - k0} (from {pos}) was expected")
                for item in g.items:
                    digest = chain(digest, item)
                end = pos + len(g.items)
                on_shard(ShardInput(k, pos, end, digest, g, _skipped_records(g) if g.selected else []))
                if bar is not None:
                    done = end - start + before
                    bar.set_postfix_str(f"items {done}/{max(n_items, done)}", refresh=False)
                    bar.refresh()
                k, pos = k + 1, end
        if bar is not None and bar.n != bar.total:  # the total was an estimate: the run is complete
            bar.total = bar.n
            bar.refresh()
    finally:
        if bar is not None:
            bar.close()
    if k == 0:  # no input items at all: one empty shard, so the output has one
        on_shard(ShardInput(0, pos, pos, digest, None, []))
        k += 1
    return k, pos, digest
