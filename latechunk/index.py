"""FAISS: chunk vectors to an index whose vector id i is row i of the chunk table, from a faiss ``index_factory``
string (:class:`~latechunk.config.IndexConfig`; ``flat`` and ``hnsw`` are aliases of ``Flat`` and ``HNSW{M}``).

Every index compares by inner product (``faiss.METRIC_INNER_PRODUCT``). Vectors are normalised once, in the
pipeline (the manifest records ``normalize``); nothing here normalises, so an index holds exactly the vectors it
was given, and queries are normalised by the encoder the same way at search time. A flat index is an
``IndexFlatIP`` (the same bytes as ``faiss.IndexFlatIP(d)``).

Index types that need training (``IVF...``, ``PQ...``) are trained before any vector is added: on all vectors
with :func:`build_index`, and by :func:`add_batches` on the first batches up to :data:`TRAIN_MAX_ROWS` rows
(assembly reads the shards one at a time; faiss's own k-means samples at most 256 points per centroid, so more
rows than that cap would not be used for typical ``nlist``).

FAISS: Johnson, Douze & Jégou, "Billion-scale similarity search with GPUs" (https://github.com/facebookresearch/faiss);
index factory strings: https://github.com/facebookresearch/faiss/wiki/The-index-factory.

Tests: ``tests/test_index.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import numpy as np

from latechunk.config import IndexConfig

__all__ = [
    "TRAIN_MAX_ROWS",
    "IndexConfig",
    "add_batches",
    "as_float32_rows",
    "build_index",
    "faiss_gpu_available",
    "new_index",
    "search_index",
]

#: rows a trained index type (IVF, PQ) is trained on when built from batches (the first batches, in order)
TRAIN_MAX_ROWS = 1 << 17


def faiss_gpu_available() -> bool:
    """Whether the installed faiss has GPU support and sees a GPU.

    Returns:
        True when ``faiss.StandardGpuResources`` exists and ``faiss.get_num_gpus() > 0``.
    """
    import faiss

    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


def as_float32_rows(x) -> np.ndarray:
    """A C-contiguous float32 copy of ``x`` (any float dtype, any strides); never mutates the caller's array.

    faiss takes only C-contiguous float32 (faiss issue #666), so every vector goes through here first.

    Args:
        x: (n, dim) array-like of any float dtype (float16, float32, float64), any layout; or a torch tensor.

    Returns:
        (n, dim) float32, C-contiguous, a new array.

    Raises:
        ValueError: if ``x`` is not 2-D or holds NaN/inf.
    """
    if hasattr(x, "detach"):
        x = x.detach().cpu().float().numpy()
    arr = np.array(x, dtype=np.float32, order="C", copy=True)
    if arr.ndim != 2:
        raise ValueError(f"vectors must be 2-D (n, dim), got shape {arr.shape}")
    if arr.size and not np.isfinite(arr).all():
        raise ValueError("vectors contain NaN or inf")
    return arr


def new_index(config: IndexConfig, dim: int):
    """An empty CPU FAISS index of ``config.factory`` over inner products.

    HNSW indexes get ``efConstruction = config.ef_construction`` and ``efSearch = config.ef_search``.

    Args:
        config: The index settings.
        dim: Vector dimension, ``>= 1``.

    Returns:
        A ``faiss.Index`` with ``ntotal == 0`` (``is_trained`` False for types that need training); vector id i
        will be the i-th row added.

    Raises:
        ValueError: on a factory string faiss does not know, ``dim < 1``, or ``config.gpu == "on"`` without
            GPU FAISS.
    """
    import faiss

    if dim < 1:
        raise ValueError(f"cannot build an index: vector dimension must be >= 1, got {dim}")
    if config.gpu == "on" and not faiss_gpu_available():
        raise ValueError("gpu='on' but this faiss has no GPU support or sees no GPU (pip install latechunk[gpu])")
    try:
        index = faiss.index_factory(int(dim), config.factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as err:
        raise ValueError(f"--index {config.factory!r} is not a faiss index_factory string this faiss knows "
                         f"(e.g. Flat, HNSW32, IVF1024,Flat; see the faiss wiki 'The index factory'): "
                         f"{_faiss_message(err)}") from err
    hnsw = getattr(index, "hnsw", None)  # faiss's Python layer returns the concrete class (IndexHNSWFlat, ...)
    if hnsw is not None:
        hnsw.efConstruction = config.ef_construction
        hnsw.efSearch = config.ef_search
    return index


def _faiss_message(err: Exception) -> str:
    """The reason in a faiss C++ error, without its ``Error in <function> at <file>:<line>:`` prefix."""
    text = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
    return re.sub(r"^Error in .*? at \S+:\d+: (Error: )?", "", text)


def _train(index, xt: np.ndarray, factory: str) -> None:
    if xt.shape[0] == 0:
        raise ValueError(f"index {factory!r} needs training, but there are no vectors to train it on")
    try:
        index.train(xt)
    except RuntimeError as err:
        raise ValueError(f"cannot train index {factory!r} on {xt.shape[0]} vectors: "
                         f"{_faiss_message(err)} "
                         "(use fewer lists, e.g. IVF64,Flat, or Flat for a small corpus)") from err


def _use_gpu(config: IndexConfig) -> bool:
    return config.gpu == "on" or (config.gpu == "auto" and config.factory == "Flat" and faiss_gpu_available())


def build_index(vectors, config: IndexConfig | None = None, dim: int | None = None):
    """Build a FAISS index over ``vectors`` (added as given, never normalised here); vector id i is row i.

    Args:
        vectors: (n, dim) any float dtype/layout (copied, never mutated). ``n`` may be 0 (then give ``dim``).
        config: Index settings (default ``Flat``). A type that needs training is trained on all ``vectors``.
        dim: Vector dimension when ``vectors`` is empty.

    Returns:
        A CPU ``faiss.Index`` (built on the GPU when ``config.gpu`` allows and one is present, then copied back).

    Raises:
        ValueError: on an unknown factory string, an unknown dimension, training that fails, or
            ``config.gpu == "on"`` without GPU FAISS.
    """
    import faiss

    config = config or IndexConfig()
    xb = as_float32_rows(vectors) if np.size(vectors) else None
    d = int(xb.shape[1]) if xb is not None else int(dim or (np.shape(vectors)[1] if np.ndim(vectors) == 2 else 0))
    if d <= 0:
        raise ValueError("cannot build an index: vector dimension unknown (no vectors and no dim)")
    index = new_index(config, d)
    if xb is None:
        return index
    if not index.is_trained:
        _train(index, xb, config.factory)
    if _use_gpu(config):
        res = faiss.StandardGpuResources()
        gpu_index = faiss.index_cpu_to_gpu(res, 0, index)
        gpu_index.add(xb)
        return faiss.index_gpu_to_cpu(gpu_index)
    index.add(xb)
    return index


def add_batches(config: IndexConfig, dim: int, batches: Callable[[], Iterable[np.ndarray]],
                train_max_rows: int = TRAIN_MAX_ROWS):
    """Build a CPU index from vectors that arrive in batches (one shard at a time), in order.

    A type that needs training is trained first on the first batches, up to ``train_max_rows`` rows (so
    ``batches`` is called twice then); then every batch is added in order. Nothing is normalised.

    Args:
        config: Index settings.
        dim: Vector dimension.
        batches: Returns a fresh iterable of (rows_i, dim) float arrays (e.g. memory-mapped shard vectors);
            row j of the index is row j of the concatenated batches.
        train_max_rows: Training sample cap (rows).

    Returns:
        The CPU ``faiss.Index``; with no vectors at all, an empty one (untrained for a type that needs training,
        as :func:`build_index` gives it).

    Raises:
        ValueError: as :func:`new_index`, or when training fails.
    """
    index = new_index(config, dim)
    if not index.is_trained:
        parts, n = [], 0
        for v in batches():
            if n >= train_max_rows:
                break
            take = as_float32_rows(np.asarray(v[: train_max_rows - n]))
            parts.append(take)
            n += take.shape[0]
        if n == 0:  # no vectors at all (0 documents embedded): an empty, untrained index, as build_index gives
            return index
        _train(index, np.concatenate(parts), config.factory)
    for v in batches():
        if len(v):
            index.add(as_float32_rows(v))
    return index


def search_index(index, xq, k: int):
    """Search ``index`` with query vectors (as given: normalise them as the indexed vectors were).

    Args:
        index: A FAISS index (from :func:`build_index` or :func:`latechunk.output.read_output`).
        xq: (n_queries, dim), any float dtype/layout (copied).
        k: Results per query (clipped to ``index.ntotal``).

    Returns:
        ``(D, I)``: (n_queries, k') float32 inner products and int64 ids (row numbers of the chunk table), best
        first; ``k' = min(k, ntotal)``; an approximate index may return id ``-1`` where it found fewer.

    Raises:
        ValueError: if ``k < 1``, or ``xq`` is not 2-D or holds NaN/inf.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    q = as_float32_rows(xq)
    k_eff = min(k, index.ntotal)
    if k_eff == 0:
        return np.zeros((q.shape[0], 0), np.float32), np.zeros((q.shape[0], 0), np.int64)
    return index.search(q, k_eff)
