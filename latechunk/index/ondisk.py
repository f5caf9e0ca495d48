"""Assembly's build (:func:`build_batched`): training on a seeded uniform sample of all shards' rows, then an IVF
index's inverted lists filled per shard and merged on disk into an ``.ivfdata`` file (faiss contrib's
``merge_ondisk``), with what was built recorded (:class:`BuildFacts`).
"""

from __future__ import annotations

import dataclasses
import itertools
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from latechunk.config import IndexConfig
from latechunk.index.build import _train, add_vectors, fit_nlist, ivf_of, new_index
from latechunk.index.codes import _encode_rows
from latechunk.io import quiet_c_stdout

#: :func:`build_batched`: the training sample has at least this many rows (or all of them): 65,536 = 256 points
#: for each of a PQ sub-quantizer's 256 centroids, faiss's own cap
TRAIN_MIN_ROWS = 1 << 16
#: :func:`build_batched`: sample rows per IVF list (faiss's k-means warns below 39 and uses at most 256)
TRAIN_PER_LIST = 64
#: :func:`build_batched`: the sample's cap in rows (1,048,576: 1.6 GB of float32 at 384 dimensions); an
#: ``IVF65536`` gets 16 points per list at this cap, so train it with ``train_rows`` given
SAMPLE_MAX_ROWS = 1 << 20
#: the seed of the training sample (``numpy.random.default_rng``), recorded in the manifest
TRAIN_SEED = 0
#: IVF lists probed per query by default (stored in index.faiss at assembly; at most ``nlist``)
DEFAULT_NPROBE = 16


def train_sample_size(n: int, nlist: int | None = None, cap: int = SAMPLE_MAX_ROWS) -> int:
    """Rows an index is trained on by :func:`build_batched`: ``min(n, max(TRAIN_MIN_ROWS, TRAIN_PER_LIST * nlist),
    cap)``.

    Args:
        n: Vectors in the corpus.
        nlist: IVF lists (None or 0 for a non-IVF index).
        cap: Upper bound in rows.

    Returns:
        The sample size in rows (0 when ``n`` is 0).
    """
    return int(min(n, max(TRAIN_MIN_ROWS, TRAIN_PER_LIST * int(nlist or 0)), cap))


def _sample_ids(sizes: Sequence[int], size: int, seed: int) -> list[np.ndarray]:
    """Per batch, the sorted local rows of a uniform sample (without replacement) of ``size`` global rows."""
    n = int(sum(sizes))
    rows = np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False)) if size < n else np.arange(n)
    bounds = np.cumsum([0, *sizes])
    return [rows[(rows >= a) & (rows < b)] - a for a, b in itertools.pairwise(bounds)]


@dataclasses.dataclass(frozen=True)
class BuildFacts:
    """How :func:`build_batched` built an index (recorded in the manifest's ``index`` record).

    Attributes:
        factory: The faiss factory string built (``config.faiss_factory`` after :func:`fit_nlist`).
        train_rows: Rows of the training sample (0 for an index that needs no training).
        train_seed: The sample's seed.
        nlist: IVF lists built (None for a non-IVF index); ``nlist_requested`` what the factory string asked.
        nprobe: The default ``nprobe`` stored in the index (None for a non-IVF index).
        ondisk: True when the inverted lists were merged on disk into the ``.ivfdata`` file.
    """

    factory: str
    train_rows: int = 0
    train_seed: int = TRAIN_SEED
    nlist: int | None = None
    nlist_requested: int | None = None
    nprobe: int | None = None
    ondisk: bool = False

    def to_dict(self) -> dict:
        """The manifest form: ``train`` (``rows``, ``seed``, ``sample``) when trained; ``nlist``, ``nprobe`` and
        ``ondisk`` for IVF; ``built`` (the faiss string) and ``nlist_requested`` when :func:`fit_nlist` changed
        ``nlist``.

        Returns:
            A JSON-ready dict.
        """
        d: dict = {}
        if self.train_rows:
            d["train"] = {"rows": self.train_rows, "seed": self.train_seed,
                          "sample": "uniform without replacement over all rows (numpy default_rng(seed))"}
        if self.nlist is not None:
            d.update(nlist=self.nlist, nprobe=self.nprobe, ondisk=self.ondisk)
            if self.nlist != self.nlist_requested:
                d.update(built=self.factory, nlist_requested=self.nlist_requested)
        return d


def build_batched(config: IndexConfig, dim: int, batches: Callable[[], Iterable[np.ndarray]], sizes: Sequence[int],
                  *, ivfdata: Path | None = None, work_dir: Path | None = None, seed: int = TRAIN_SEED,
                  train_rows: int | None = None, progress: Callable[[str], None] | None = None):
    """Build a CPU index from vectors that arrive in batches (one shard at a time), in order; row j of the index
    is row j of the concatenated batches. What assembly uses (see the module doc).

    A type that needs training is trained on a seeded uniform sample of all rows (:func:`train_sample_size`,
    read from the batches: ``batches`` is called twice then). An IVF index with ``ivfdata`` given is then filled
    on disk: each non-empty batch is added (ids = its global rows) to a copy of the trained empty index and
    written as a part file under ``work_dir``; ``faiss.contrib.ondisk.merge_ondisk`` merges the parts' inverted
    lists into ``ivfdata`` (the parts are deleted afterwards; disk holds both for a while). Peak memory: the
    training sample plus one batch (plus what faiss maps of the parts while merging). Any other index is filled
    in memory (:func:`add_vectors`). IVF lists are fitted to the corpus (:func:`fit_nlist`) and the index's
    ``nprobe`` set to ``min(DEFAULT_NPROBE, nlist)``.

    Args:
        config: Index settings.
        dim: The input vectors' dimension.
        batches: Returns a fresh iterable of (sizes[i], dim) float arrays (e.g. memory-mapped shard vectors).
        sizes: Rows of each batch, in order (all batches, empty ones included).
        ivfdata: Where the merged inverted lists go (e.g. ``DIR/index.ivfdata.tmp``; the index records this name,
            so read it back with ``faiss.IO_FLAG_ONDISK_SAME_DIR`` after renaming); None: an IVF index is built
            in memory.
        work_dir: A folder for the part files (created, then removed); default ``ivfdata`` + ``.parts``.
        seed: Seed of the training sample.
        train_rows: Sample size in rows; default :func:`train_sample_size`.
        progress: Called with a short message before each stage (train, add shard k/n, merge).

    Returns:
        ``(index, facts)``: the CPU ``faiss.Index`` (an empty, untrained one when there are no vectors, as
        :func:`build_index` gives it; then no ``ivfdata`` is written) and its :class:`BuildFacts`.

    Raises:
        ValueError: as :func:`new_index`, when training fails, or a batch's length differs from ``sizes``.
    """
    import faiss

    say = progress or (lambda msg: None)
    n = int(sum(sizes))
    given = config.faiss_factory
    config, want, nlist = fit_nlist(config, dim, n)
    # the name errors give: the string the user typed, and the one built when nlist was fitted to the vectors
    shown = config.faiss_factory if config.faiss_factory == given else f"{given} (built as {config.faiss_factory})"
    index = new_index(config, dim)
    ivf = ivf_of(index)
    facts = BuildFacts(factory=config.faiss_factory, train_seed=seed, nlist=nlist, nlist_requested=want,
                       nprobe=min(DEFAULT_NPROBE, nlist) if nlist else None)
    if n == 0:
        return index, facts
    if not index.is_trained:
        size = train_sample_size(n, nlist) if train_rows is None else int(min(n, train_rows))
        say(f"training {config.faiss_factory} on {size:,} of {n:,} vectors (seed {seed})")
        picks, parts = _sample_ids(sizes, size, seed), []
        for i, v in enumerate(batches()):
            if len(v) != sizes[i]:
                raise ValueError(f"batch {i} has {len(v)} rows but sizes says {sizes[i]}")
            if len(picks[i]):
                parts.append(_encode_rows(np.asarray(v[picks[i]]), config))
        xt = np.concatenate(parts)
        del parts
        _train(index, xt, shown)
        del xt
        facts = dataclasses.replace(facts, train_rows=size)
    if ivf is not None:
        ivf.nprobe = facts.nprobe
    if ivf is None or ivfdata is None:
        for i, v in enumerate(batches()):
            say(f"adding batch {i + 1}/{len(sizes)}")
            if len(v):
                add_vectors(index, v, config)
        return index, facts
    from faiss.contrib import ondisk

    ivfdata = Path(ivfdata)
    work = Path(work_dir) if work_dir is not None else ivfdata.with_name(ivfdata.name + ".parts")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        trained = faiss.serialize_index(index)
        names, offset = [], 0
        for i, v in enumerate(batches()):
            if len(v) != sizes[i]:
                raise ValueError(f"batch {i} has {len(v)} rows but sizes says {sizes[i]}")
            if not len(v):
                continue
            say(f"adding batch {i + 1}/{len(sizes)} to its part")
            part = faiss.deserialize_index(trained)  # a copy of the trained, empty index
            x = _encode_rows(v, config)
            part.add_with_ids(x, np.arange(offset, offset + len(x), dtype=np.int64))
            offset += len(x)
            names.append(str(work / f"{i:05d}.index"))
            faiss.write_index(part, names[-1])
            del part, x
        say(f"merging {len(names)} parts into {ivfdata.name}")
        if ivfdata.exists():
            ivfdata.unlink()
        with quiet_c_stdout():
            ondisk.merge_ondisk(index, names, str(ivfdata))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return index, dataclasses.replace(facts, ondisk=True)


def set_ondisk_name(index, name: str) -> None:
    """Record ``name`` as the ``.ivfdata`` file of an on-disk IVF index (before writing it; read it back with
    ``faiss.IO_FLAG_ONDISK_SAME_DIR``, which takes the file name from here and the folder from index.faiss's).

    Args:
        index: An index whose inverted lists are ``faiss.OnDiskInvertedLists`` (from :func:`build_batched`).
        name: The file name (e.g. ``index.ivfdata``).

    Raises:
        TypeError: if the index has no on-disk inverted lists.
    """
    import faiss

    ivf = ivf_of(index)
    lists = faiss.downcast_InvertedLists(ivf.invlists) if ivf is not None else None
    if not isinstance(lists, faiss.OnDiskInvertedLists):
        raise TypeError("not an index with on-disk inverted lists")
    lists.filename = name
