"""Sharded, resumable ingest: stream the inputs through :func:`~latechunk.pipeline.iter_embed`, write each
pipeline group as a checksummed shard, and assemble the output folder from the shards at the end.

The folder's layout, file names and keys are :mod:`latechunk.output`'s. The pieces, each readable alone:

- :mod:`~latechunk.ingest.files`: sha256, fsync, atomic commit, JSON writes, the fault-injection hook;
- :mod:`~latechunk.ingest.shards`: write, scan and check a shard;
- :mod:`~latechunk.ingest.folder`: the folder policy (fresh / ``--force`` / ``--resume``, the settings diff);
- :mod:`~latechunk.ingest.stream`: the pipeline groups as shards, and resume;
- :mod:`~latechunk.ingest.ranks`: several processes sharing one run (file rendezvous);
- :mod:`~latechunk.ingest.ray_engine`: ``embed --engine ray``, the same shards from a Ray Data pipeline (a CPU
  stage and an encoder actor pool), assembled by this process;
- :mod:`~latechunk.ingest.assemble`: index.faiss, chunks.parquet and manifest.json from the shards;
- :mod:`~latechunk.ingest.append`: new inputs added to a finished folder (``embed --append``,
  ``latechunk.Index.add``): new shards, then assembled again.

Guarantees:

- every file is written to ``NAME.tmp``, flushed to disk and ``os.replace``-d, so a file either exists whole or
  not at all. A shard counts once its ``.json`` exists and the checksums in it match its data files; the
  ``.json`` is written after both. The assembled files (index, chunk table, manifest) are all written whole
  under their temp names, then committed together through a journal (``commit.json``,
  :meth:`latechunk.output.OutputFolder.begin_commit`): a folder killed before the journal serves its last state,
  one killed after it is finished by its next reader or writer, so the index and the chunk table never disagree.
- ``--resume`` keeps the complete shards, deletes whatever follows the first incomplete one, and skips the input
  items the complete shards consumed (checked against a running digest of those items). The result equals an
  uninterrupted run: the input order is fixed (:func:`latechunk.io.iter_inputs` sorts), a shard is exactly one
  pipeline group, and a group's token budget restarts at every group boundary, so a run resumed at a boundary
  forms the same groups, the same forward batches and the same vectors as the run it continues.
- ``--dedup THRESHOLD`` drops near-duplicate chunks (:mod:`latechunk.dedup`) in each group before its shard is
  written (:func:`~latechunk.ingest.stream.write_group`), so rows, vectors and records agree everywhere; resume and
  append rebuild the kept set from the shards already written. Single process only.
- each document's record carries its source type and content tokens; assembly turns them into the manifest's
  parse ``alarms`` (:mod:`latechunk.alarms`).
- memory stays flat in the corpus size: inputs are streamed, one group is in memory at a time, and assembly reads
  one shard at a time (vectors memory-mapped). What grows is the FAISS index and the manifest's document lines.

Tests: ``tests/ingest/test_ingest.py`` (SIGKILL at three points, resume, compare with an uninterrupted run),
``tests/test_multiprocess.py`` (two ranks against one process, a killed rank, resume with two ranks).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

from latechunk.config import RECORDED_MODEL_FACTS, EmbedConfig, dist_env
from latechunk.ingest.assemble import assemble
from latechunk.ingest.files import sha256_file, sha256_text, write_json
from latechunk.ingest.folder import FolderLocked, prepare_output, writer_lock
from latechunk.ingest.shards import check_shard_files, clean_shards, scan_shards
from latechunk.io import iter_inputs
from latechunk.output import OutputFolder

# ranks and stream run the pipeline (torch): imported on first use, so that the command line can check the output
# folder (latechunk.ingest.folder) before torch is imported


def __getattr__(name: str):
    if name == "RankError":
        from latechunk.ingest.ranks import RankError

        return RankError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["FolderLocked", "RankError", "check_shard_files", "dist_env", "ingest", "prepare_output", "run_settings", "scan_shards",
           "sha256_file", "sha256_text"]

#: the encoder facts that decide the vectors, recorded in the settings beside the config's model options: the
#: model's own (:data:`~latechunk.config.RECORDED_MODEL_FACTS`), and its name and dtype as the encoder resolved them
_MODEL_FACTS = frozenset({"name", "dtype"}) | RECORDED_MODEL_FACTS


def run_settings(config: EmbedConfig, encoder) -> dict:
    """Everything that decides the output of a run (``run.json``'s settings); a resumed run must match it.

    Args:
        config: The run.
        encoder: Its encoder (the model's weight hash, dimension and prompt are facts of the loaded model).

    Returns:
        ``config.to_dict()`` with ``model`` extended by the encoder's facts (those of its description among
        ``name``, ``sha256``, ``dim``, ``dtype``, ``max_length``, ``window``, ``window_overlap``, ``pooling``,
        ``document_prompt``), and ``batch_tokens`` resolved (the encoder's budget in tokens where the config
        leaves it to the device's default: 4,096 on the CPU), so that a folder records the budget it was embedded
        with and older readers, which expect a number, read it (never compared:
        :data:`latechunk.ingest.folder.NOT_COMPARED`). ``window`` and ``window_overlap`` are the macro window's
        size and overlap in tokens (keys kept from earlier run.json files, so that ``--resume`` still matches them).

    Raises:
        ValueError: if the config's macro window does not fit the model (:meth:`Encoder.macro_window
            <latechunk.encoder.Encoder.macro_window>`).
    """
    settings = config.to_dict()
    plan = encoder.macro_window(config.pipeline.macro_window, config.pipeline.macro_window_overlap)
    described = encoder.describe(plan)
    # in the order the encoder describes them (run.json's key order)
    settings["model"] = {**settings.get("model", {}), **{k: v for k, v in described.items() if k in _MODEL_FACTS}}
    if settings["model"].get("batch_tokens") is None:
        settings["model"]["batch_tokens"] = encoder.batch_tokens
    return settings


def ingest(
    config: EmbedConfig,
    encoder,
    *,
    progress: bool = False,
    header: dict | None = None,
    on_shard: Callable[[dict], None] | None = None,
    rank: int | None = None,
    world_size: int | None = None,
    rank_timeout: float | None = None,
    reuse: str | os.PathLike | None = None,
) -> dict | None:
    """Chunk, embed and index ``config.inputs`` into ``config.out`` through checksummed shards; resumable.

    Args:
        config: The run: inputs, output folder and policy (``force``/``resume``), one strategy and one mode,
            the index.
        encoder: The :class:`~latechunk.encoder.Encoder`.
        progress: Show a progress bar in bytes of document text, with rate and time left (see
            :func:`~latechunk.ingest.stream.stream`).
        header: Extra manifest fields (model, strategy, inputs, versions), written as given.
            ``None``: none.
        on_shard: Called with each new shard record after it is committed (by the process that wrote it).
        rank: This process's place among ``world_size`` processes sharing the run (default ``$RANK``, see
            :func:`dist_env`). With ``world_size > 1`` this process writes the shards ``k`` with
            ``k % world_size == rank``, and rank 0 assembles (:mod:`latechunk.ingest.ranks`).
        world_size: Number of processes sharing the run (default ``$WORLD_SIZE``, else 1).
        rank_timeout: Several processes: seconds a process waits without any progress from the others
            (default ``$LATECHUNK_RANK_TIMEOUT`` or 1800).
        reuse: ``embed --reuse OLD``: an earlier output folder whose unchanged documents' chunks and vectors are
            taken instead of encoded (:mod:`latechunk.ingest.reuse`); one process, no ``--dedup``.

    Returns:
        The manifest (also written to ``out/manifest.json``); ``None`` on ranks other than 0.

    Raises:
        FolderLocked: (a ValueError) at once, when another process is writing ``config.out`` (its writer lock,
            :func:`~latechunk.ingest.folder.writer_lock`; rank 0 holds it for a run of several processes).
        ValueError: on ``rank``/``world_size`` out of range, a macro window that does not fit the model, a
            folder that may not be written (see :func:`prepare_output`), settings that differ from the
            interrupted run's, inputs that changed under a resumed run (:func:`~latechunk.ingest.stream.
            skip_consumed`), or an index that cannot be built (:func:`latechunk.index.add_batches`).
        RankError: several processes: another one failed, died or stalled, or they disagree on the groups.
        RuntimeError: if the pipeline's groups, vectors and chunk rows do not add up (a bug).
        OSError: if a file of the output folder cannot be written.
    """
    from latechunk.ingest.ranks import ingest_rank
    from latechunk.ingest.ranks import rank_timeout as _rank_timeout

    t_start = time.time()
    if rank is None or world_size is None:
        env_rank, env_world, _ = dist_env()
        rank = env_rank if rank is None else rank
        world_size = env_world if world_size is None else world_size
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is outside 0..{world_size - 1} (world size {world_size})")
    if config.dedup is not None and world_size > 1:
        # a shard's drops depend on every earlier shard's kept chunks, which other ranks are still writing
        raise ValueError(f"--dedup runs in one process ($WORLD_SIZE is {world_size}): whether a chunk is kept "
                         "depends on every earlier shard")
    settings = run_settings(config, encoder)
    store = None
    if reuse is not None:
        if world_size > 1 or config.dedup is not None:
            raise ValueError("--reuse runs in one process and without --dedup")
        from latechunk.ingest.reuse import ReuseStore

        store = ReuseStore(reuse, settings, config.out)
    # one writer per folder: this process (rank 0 of several) holds the folder's lock for the whole run
    with writer_lock(config.out) if rank == 0 else contextlib.nullcontext():
        if world_size > 1:
            return ingest_rank(config, encoder, settings, header or {}, rank, world_size,
                               _rank_timeout(rank_timeout), t_start, on_shard, progress=progress)
        return _ingest_one(config, encoder, settings, t_start, progress, header, on_shard, store)


def _ingest_one(config: EmbedConfig, encoder, settings: dict, t_start: float, progress: bool, header: dict | None,
                on_shard: Callable[[dict], None] | None, reuse=None) -> dict:
    """One process's run (:func:`ingest` with ``world_size == 1``), under the folder's writer lock."""
    from latechunk.ingest.stream import DedupState, ShardInput, skip_consumed, stream, write_group

    out = config.out
    folder = OutputFolder(out)
    records = prepare_output(out, settings, force=config.force, resume=config.resume,
                             extra={"reuse": str(Path(reuse.folder.path).resolve())} if reuse is not None else None)
    # seconds.total covers the interrupted run(s) too: count from a start moved back by the time they spent
    t_start -= _earlier_seconds(folder, records) if config.resume else 0.0
    items = iter_inputs(config.inputs, config.fields)
    consumed = records[-1]["inputs"][1] if records else 0
    consumed_bytes = [0]  # where a resumed run's progress bar starts
    digest = skip_consumed(items, consumed, records[-1]["inputs_digest"] if records else "", records,
                           consumed_bytes)
    if reuse is not None:
        from latechunk.ingest.reuse import mark_reused

        items = mark_reused(items, reuse)
    if config.resume:
        n_kept = len(records)
        clean_shards(out, lambda i: i < n_kept)
    # --dedup: the kept set, rebuilt from the kept shards on --resume (they hold only kept chunks)
    dedup = None if config.dedup is None else DedupState.from_shards(folder, records, encoder.dim, config.dedup)

    def progress_record(end: int) -> None:
        write_json(folder.progress_path, {"shards": len(records), "inputs_consumed": end,
                                          "chunks": sum(r["rows"] for r in records),
                                          "seconds": round(time.time() - t_start, 3)})

    def write(s: ShardInput) -> None:
        rec = write_group(folder, config, encoder.dim, s, dedup, reuse)
        records.append(rec)
        if on_shard is not None:
            on_shard(rec)
        progress_record(s.end)

    stream(config, encoder, items, consumed, digest, len(records), None, write, progress=progress,
           bar_bytes=consumed_bytes[0] if consumed else None, bar_skipped=sum(len(r["skipped"]) for r in records))
    if records and not folder.progress_path.is_file():  # resumed with every shard kept: --resume's clean-up took it
        progress_record(records[-1]["inputs"][1])
    return assemble(out, records, settings, config.index, encoder.dim, header or {}, t_start)


def _earlier_seconds(folder: OutputFolder, records: list[dict]) -> float:
    """Wall seconds the interrupted run(s) spent on the kept shards, for a resumed run's ``seconds.total``.

    Args:
        folder: The output folder, before ``--resume`` cleans it (its progress.json is the interrupted run's).
        records: The kept shard records.

    Returns:
        progress.json's ``seconds`` (wall seconds of the earlier runs up to their last complete shard); without
        it, the largest of the kept shards' per-stage sums (a lower bound: each stage runs in one thread, and the
        stages overlap, so their sum over-counted: 41 s for a 25 s run); 0.0 when no shard is kept.
    """
    if not records:
        return 0.0
    try:
        recorded = float(OutputFolder.read_json(folder.progress_path).get("seconds", 0.0))
    except (ValueError, TypeError, AttributeError):  # missing, damaged or without seconds: the shards' stage times
        recorded = 0.0
    if recorded > 0:  # the wall time itself (the stages overlap: tokenizing and splitting run beside the encoder)
        return recorded
    per_stage: dict[str, float] = {}
    for r in records:
        for key, v in r.get("stats", {}).get("seconds", {}).items():
            per_stage[key] = per_stage.get(key, 0.0) + float(v)
    return max(per_stage.values(), default=0.0)  # each stage runs in one thread: its sum is at most the wall time
