"""``latechunk embed --engine ray``: the same sharded, resumable run on a Ray cluster (Ray Data).

The run's shards are the single process's: shard ``k`` is pipeline group ``k`` (groups are formed from token counts
alone, :func:`latechunk.pipeline.iter_embed`), written under the same name with the same checksummed record
(:func:`latechunk.ingest.stream.write_group`), and assembled by :func:`latechunk.ingest.assemble.assemble`. So
``chunks.parquet`` is byte-identical to a single-process run, the vectors agree to float rounding, and a folder may
be resumed by either engine.

The driver (this process):

1. checks and prepares the folder (fresh / ``--force`` / ``--resume``, :func:`~latechunk.ingest.folder.prepare_output`)
   under its writer lock; on resume it keeps every complete shard (checksums verified, gaps allowed);
2. reads the inputs with :func:`latechunk.io.iter_inputs` and tokenizes them once to find the group boundaries
   (the light groups of ``iter_embed(..., select_group=lambda k: False)``: no split, no encoder forward), checks
   that a kept shard covers exactly the input items (and running digest) this run puts in that group, and makes
   one Ray Data row per missing group: ``(k, start, end, digest, pickled items)``, one block each, so there are as
   many blocks as groups, many more than workers;
3. runs a Ray Data pipeline over them: a CPU stage (``map``, ``num_cpus=1`` tasks: tokenize, sentence
   segmentation, every split that needs no sentence vectors; :meth:`latechunk.pipeline.GroupRunner.prepare`;
   it replaces ``--sentence-workers``), then an actor pool (``map_batches`` with a callable class, one encoder per
   actor, ``num_gpus=1`` per actor and one actor per GPU of the cluster, or CPU actors on a cluster without GPUs;
   the late pass with latechunk's token-budget batches, pooling, the sentence-vector splits:
   :meth:`~latechunk.pipeline.GroupRunner.embed`) that writes each group's shard into ``--out`` and returns its
   record;
4. assembles ``index.faiss``, ``chunks.parquet`` and ``manifest.json`` from the records in shard order; the manifest
   records ``engine: ray``, the actors and ``ray.cluster_resources()``.

Failures: a shard is committed atomically (parquet, npy, then its record), so a task or actor that dies leaves no
partial shard that counts; Ray Data retries the task (or restarts the actor), which writes the same shard again.
A driver that dies loses nothing written: ``--resume`` keeps the complete shards and redoes only the missing
groups. Every worker writes into ``--out``, so on a cluster of several machines ``--out`` must be a file system
they all mount at the same path (NFS, a parallel file system).

Limits of this version: the driver reads and tokenizes the whole input stream itself (to form the groups exactly as
one process does) and hands the groups' items to Ray at once (``ray.data.from_items``), so its memory holds the
input text once; each CPU-stage worker loads the model for its tokenizer.

Batch inference with Ray Data: https://docs.ray.io/en/latest/data/batch_inference.html
Late chunking: Günther et al., arXiv:2409.04701.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import pickle
import sys
import time
from collections.abc import Callable
from pathlib import Path

from latechunk.config import EmbedConfig
from latechunk.ingest.assemble import assemble
from latechunk.ingest.files import write_json
from latechunk.ingest.folder import prepare_output, writer_lock
from latechunk.ingest.shards import clean_shards, complete_shards
from latechunk.io import iter_inputs
from latechunk.output import OutputFolder

__all__ = ["ENGINES", "RAY_STOP_ENV", "RayPlan", "import_ray", "ingest_ray", "plan_actors"]

ENGINES = ("local", "ray")
"""``embed --engine``: ``local`` (this process, or ``torchrun`` ranks) or ``ray`` (a Ray cluster)."""

RAY_STOP_ENV = "LATECHUNK_RAY_STOP_AFTER"
"""Fault injection for the tests: the driver raises after receiving this many new shards (a job killed midway)."""


def import_ray():
    """Import Ray with Ray Data, or fail with the extra to install.

    Returns:
        The ``ray`` module (``ray.data`` imported).

    Raises:
        ImportError: naming ``pip install 'latechunk[ray]'`` when Ray or Ray Data is missing.
    """
    try:
        import ray
        import ray.data
    except ImportError as err:
        raise ImportError(f"--engine ray needs Ray Data ({err}); install it with: pip install 'latechunk[ray]'"
                          ) from err
    return ray


@dataclasses.dataclass(frozen=True)
class RayPlan:
    """How the encoder actors use the cluster.

    Attributes:
        actors: Number of encoder actors (Ray Data ``concurrency``).
        num_gpus: GPUs per actor (1, or 0 on a cluster without GPUs).
        num_cpus: CPUs per actor (1).
        device: The encoder device inside an actor (``"cuda"``: the GPU Ray assigned it; or ``"cpu"``).
        threads: torch intra-op threads of a CPU actor (its ``num_cpus``).
    """

    actors: int
    num_gpus: int
    num_cpus: int
    device: str
    threads: int


def plan_actors(resources: dict, actors: int | None = None, device: str = "auto") -> RayPlan:
    """The encoder actor pool for a cluster.

    Args:
        resources: ``ray.cluster_resources()`` (``"CPU"``, ``"GPU"`` counts).
        actors: ``--ray-actors``: the number of actors; default one per GPU, or on a cluster without GPUs one per
            two CPUs (the other half runs the CPU stage), at least 1.
        device: ``--device``: ``cpu`` gives CPU actors even on a cluster with GPUs.

    Returns:
        The :class:`RayPlan`.

    Raises:
        ValueError: if ``actors < 1``, more actors than GPUs are asked for, CPU actors that leave no CPU for the
            CPU stage, or ``--device cuda`` on a cluster without GPUs.
    """
    gpus = int(resources.get("GPU", 0) or 0)
    cpus = int(resources.get("CPU", 0) or 0)
    if actors is not None and actors < 1:
        raise ValueError(f"--ray-actors must be >= 1, got {actors}")
    if device.startswith("cuda") and gpus == 0:
        raise ValueError(f"--device {device} but the Ray cluster has no GPU (resources {resources})")
    if gpus and device != "cpu":
        n = gpus if actors is None else actors
        if n > gpus:
            raise ValueError(f"--ray-actors {n}: the Ray cluster has {gpus} GPU(s), one actor per GPU")
        return RayPlan(actors=n, num_gpus=1, num_cpus=1, device="cuda", threads=1)
    n = max(1, cpus // 2) if actors is None else actors
    if n >= cpus:  # each actor holds a CPU for the run; the CPU stage's tasks need at least one more
        raise ValueError(f"--ray-actors {n}: the Ray cluster has {cpus} CPU(s) and no GPU; CPU actors hold one "
                         "CPU each and the CPU stage needs at least one more (give fewer actors)")
    return RayPlan(actors=n, num_gpus=0, num_cpus=1, device="cpu", threads=1)


#: bytes of memory a CPU-stage task asks Ray for
_CPU_TASK_MEMORY = 512 * 1024 * 1024


# ------------------------------------------------------------------------------------------- worker side
@functools.cache
def _worker_runner(config_blob: bytes, device: str, threads: int):
    """This worker process's encoder and :class:`~latechunk.pipeline.GroupRunner` (loaded once per process: Ray
    reuses a worker for the tasks of one function)."""
    import torch

    from latechunk.encoder import Encoder
    from latechunk.pipeline import GroupRunner
    from latechunk.sentences import SentenceSegmenter

    torch.set_num_threads(max(1, threads))
    config: EmbedConfig = pickle.loads(config_blob)
    encoder = Encoder.from_config(config.model, device=device)
    return config, encoder, GroupRunner(encoder, config.pipeline, SentenceSegmenter(workers=0))


def _prepare_row(row: dict, config_blob: bytes) -> dict:
    """CPU stage (one Ray task per group): tokenize, segment and pre-split one group's items."""
    _, _, runner = _worker_runner(config_blob, "cpu", 1)
    k, start = int(row["k"]), int(row["start"])
    prepared = runner.prepare(pickle.loads(row["items"]), k, start)
    return {"k": k, "start": start, "end": int(row["end"]), "digest": row["digest"],
            "prepared": pickle.dumps(prepared, protocol=pickle.HIGHEST_PROTOCOL)}


class _EmbedActor:
    """Encoder actor: the late pass, pooling and the shard write of one prepared group per call."""

    def __init__(self, config_blob: bytes, device: str, threads: int) -> None:
        self.config, self.encoder, self.runner = _worker_runner(config_blob, device, threads)
        self.folder = OutputFolder(self.config.out)

    def __call__(self, batch: dict) -> dict:
        import numpy as np

        from latechunk.ingest.stream import ShardInput, _skipped_records, write_group

        ks, records = [], []
        for i in range(len(batch["k"])):
            k, start, end = int(batch["k"][i]), int(batch["start"][i]), int(batch["end"][i])
            g = self.runner.embed(pickle.loads(batch["prepared"][i]))
            shard = ShardInput(k, start, end, str(batch["digest"][i]), g, _skipped_records(g))
            rec = write_group(self.folder, self.config, self.encoder.dim, shard)
            ks.append(k)
            records.append(json.dumps(rec))
        return {"k": np.asarray(ks, dtype=np.int64), "record": np.asarray(records, dtype=object)}


# ------------------------------------------------------------------------------------------- driver side
def _groups(config: EmbedConfig, encoder, kept: dict[int, dict], folder: OutputFolder) -> tuple[list[dict], int]:
    """The driver's pass over the inputs: the groups to encode as Ray Data rows, and the number of groups.

    Raises:
        ValueError: if a kept shard does not cover the input items this run puts in its group (inputs changed).
    """
    from latechunk.ingest.stream import chain
    from latechunk.pipeline import iter_embed
    from latechunk.sentences import SentenceSegmenter

    rows: list[dict] = []
    digest, n = "", 0
    seg = SentenceSegmenter(workers=0)  # light groups are never split: no sentence worker processes
    try:
        for g in iter_embed(iter_inputs(config.inputs, config.fields), encoder, config.pipeline, select_group=lambda k: False,
                            segmenter=seg):
            for item in g.items:
                digest = chain(digest, item)
            inputs = [g.start, g.end]
            n = g.index + 1
            if g.index in kept:
                rec = kept[g.index]
                if rec.get("inputs") != inputs or rec.get("inputs_digest") != digest:
                    raise ValueError(f"--resume: the inputs changed since the interrupted run (shards/"
                                     f"{folder.shard_name(g.index)} covered input items {rec.get('inputs')}, now "
                                     f"{inputs}); pass --force to start over")
                continue
            rows.append({"k": g.index, "start": g.start, "end": g.end, "digest": digest,
                         "items": pickle.dumps(g.items, protocol=pickle.HIGHEST_PROTOCOL)})
    finally:
        seg.close()
    beyond = sorted(k for k in kept if k >= max(n, 1))
    if beyond:
        raise ValueError(f"--resume: the inputs changed since the interrupted run (they now form {n} shards, but "
                         f"shards/{folder.shard_name(beyond[0])} is complete); pass --force to start over")
    return rows, n


def ingest_ray(config: EmbedConfig, encoder, *, header: dict | None = None, address: str | None = None,
               actors: int | None = None, progress: bool = False,
               on_shard: Callable[[dict], None] | None = None) -> dict:
    """Chunk, embed and index ``config.inputs`` into ``config.out`` on a Ray cluster; resumable.

    Args:
        config: The run (as for :func:`latechunk.ingest.ingest`; ``--dedup`` is refused: a chunk's fate depends on
            every earlier shard). ``config.pipeline.sentence_workers`` is not used: segmentation is a Ray stage.
        encoder: The driver's encoder: its tokenizer forms the groups, its facts make the run's settings (the
            actors load their own from ``config.model``).
        header: Extra manifest fields (model, strategy, inputs, versions); ``engine``, ``ray_actors`` and
            ``cluster_resources`` are added.
        address: ``--ray-address``: ``"auto"`` (the cluster this machine belongs to, or ``$RAY_ADDRESS``),
            ``HOST:PORT`` (its GCS), ``ray://HOST:PORT`` (Ray Client); None: an existing ``ray.init`` of this
            process, else a new local cluster on this machine.
        actors: ``--ray-actors``: encoder actors (default :func:`plan_actors`'s).
        progress: Show a progress bar in shards.
        on_shard: Called with each new shard record, on the driver, as it arrives (any order).

    Returns:
        The manifest (also written to ``out/manifest.json``).

    Raises:
        ImportError: without Ray Data (``pip install 'latechunk[ray]'``).
        FolderLocked: (a ValueError) when another process writes ``config.out``.
        ValueError: on ``--dedup``, a folder that may not be written, settings that differ on ``--resume``, inputs
            that changed under a resumed run, a bad actor count, or an index that cannot be built.
        RuntimeError: when a Ray task or actor fails beyond its retries (the message is Ray's); the complete shards
            are kept for ``--resume``.
    """
    from latechunk.ingest import run_settings

    if config.dedup is not None:
        raise ValueError("--dedup runs in one process (whether a chunk is kept depends on every earlier shard); "
                         "it does not combine with --engine ray")
    ray = import_ray()
    t_start = time.time()
    settings = run_settings(config, encoder)
    out = Path(config.out)
    folder = OutputFolder(out)
    started = False
    with writer_lock(out):
        if not ray.is_initialized():
            ray.init(address=address, log_to_driver=False, include_dashboard=False)
            started = True
        try:
            # the actors planned against the cluster before anything is written: a bad --ray-actors or --device
            # left a run.json and shards/ behind that the corrected command refused (trial)
            resources = {k: float(v) for k, v in sorted(ray.cluster_resources().items())
                         if not k.startswith(("node:", "accelerator_type:"))}
            plan = plan_actors(resources, actors, config.model.device)
            prepare_output(out, settings, force=config.force, resume=config.resume, scan=False)
            kept = complete_shards(out) if config.resume else {}
            clean_shards(out, lambda i: i in kept)
            rows, n = _groups(config, encoder, kept, folder)
            records: dict[int, dict] = dict(kept)
            if n == 0:  # no input item at all: the one empty shard, as a single process writes it
                from latechunk.ingest.stream import ShardInput, write_group

                if 0 not in records:
                    records[0] = write_group(folder, config, encoder.dim, ShardInput(0, 0, 0, "", None, []))
                n = 1
            if rows:
                _run_pipeline(ray, config, plan, rows, records, progress, on_shard)
        finally:
            if started:
                ray.shutdown()
        missing = [k for k in range(n) if k not in records]
        if missing:
            raise RuntimeError(f"the Ray job ended without shards/{folder.shard_name(missing[0])} "
                               f"({len(missing)} missing); run again with --resume")
        head = {**(header or {}), "engine": "ray", "ray_actors": dataclasses.asdict(plan),
                "cluster_resources": resources}
        write_json(folder.progress_path, {"shards": n, "inputs_consumed": records[n - 1]["inputs"][1],
                                          "chunks": sum(r["rows"] for r in records.values()),
                                          "seconds": round(time.time() - t_start, 3)})
        return assemble(out, [records[k] for k in range(n)], settings, config.index, encoder.dim, head, t_start,
                        world_size=plan.actors)


def _run_pipeline(ray, config: EmbedConfig, plan: RayPlan, rows: list[dict], records: dict[int, dict],
                  progress: bool, on_shard: Callable[[dict], None] | None) -> None:
    """The Ray Data pipeline: one block per group, CPU stage, encoder actor pool; records into ``records``."""
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    blob = pickle.dumps(config, protocol=pickle.HIGHEST_PROTOCOL)
    ds = ray.data.from_items(rows, override_num_blocks=len(rows))
    # the CPU stage as tasks; their memory request (a group's items and token ids with room) also keeps Ray Data
    # from fusing them into the actors, which would serialise segmentation with encoding
    ds = ds.map(_prepare_row, fn_kwargs={"config_blob": blob}, num_cpus=1, memory=_CPU_TASK_MEMORY)
    ds = ds.map_batches(_EmbedActor, batch_size=1, fn_constructor_kwargs={
        "config_blob": blob, "device": plan.device, "threads": plan.threads},
        compute=ray.data.ActorPoolStrategy(size=plan.actors), num_gpus=plan.num_gpus or None,
        num_cpus=plan.num_cpus)
    stop = int(os.environ.get(RAY_STOP_ENV, "0") or 0)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(rows), unit="shard", desc="embed (ray)", file=sys.stderr, disable=None)  # terminal only
    new = 0
    try:
        for row in ds.iter_rows():
            rec = json.loads(row["record"])
            records[int(row["k"])] = rec
            new += 1
            if on_shard is not None:
                on_shard(rec)
            if bar is not None:
                bar.update(1)
            if stop and new >= stop:
                raise RuntimeError(f"${RAY_STOP_ENV}={stop}: stopped after {new} new shard(s)")
    finally:
        if bar is not None:
            bar.close()
