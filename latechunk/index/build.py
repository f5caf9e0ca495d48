"""Building an index in memory: an empty index of a factory string (:func:`new_index`), checked before anything
is encoded (:func:`check_factory`), trained (:class:`IndexTrainingError`, the PQ training warning), filled
(:func:`build_index`, :func:`add_batches`, :func:`add_vectors`), and the IVF index inside it (:func:`ivf_of`,
:func:`fit_nlist`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable

import numpy as np

from latechunk.config import IndexConfig
from latechunk.index.codes import _encode_rows, as_float32_rows, is_binary_index

#: rows a trained index type (IVF, PQ) is trained on by :func:`add_batches` (the first batches, in order)
TRAIN_MAX_ROWS = 1 << 17
#: fewer training vectors per list than this and :func:`fit_nlist` lowers ``nlist`` (faiss's k-means minimum)
MIN_POINTS_PER_LIST = 39


def faiss_gpu_available() -> bool:
    """Whether the installed faiss has GPU support and sees a GPU.

    Returns:
        True when ``faiss.StandardGpuResources`` exists and ``faiss.get_num_gpus() > 0``.
    """
    import faiss

    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


def new_index(config: IndexConfig, dim: int):
    """An empty CPU FAISS index of ``config.faiss_factory`` over inner products (a binary flat index, Hamming
    distance, for ``ubinary``).

    HNSW indexes get ``efConstruction = config.ef_construction`` and ``efSearch = config.ef_search``.

    Args:
        config: The index settings.
        dim: The input vectors' dimension (the model's), ``>= 1``; the index holds
            ``config.index_dim(dim)`` dimensions (``truncate_dim`` when set).

    Returns:
        A ``faiss.Index`` (a ``faiss.IndexBinaryFlat`` of ``dim`` bits for ``ubinary``) with ``ntotal == 0``
        (``is_trained`` False for types that need training, e.g. ``SQ8``); vector id i will be the i-th row
        added.

    Raises:
        ValueError: on a factory string faiss does not know, ``dim < 1``, a ``truncate_dim`` above ``dim``, a
            ``ubinary`` dimension that is not a multiple of 8, or ``config.gpu == "on"`` without GPU FAISS.
    """
    import faiss

    if dim < 1:
        raise ValueError(f"cannot build an index: vector dimension must be >= 1, got {dim}")
    if config.gpu == "on" and not faiss_gpu_available():
        raise ValueError("gpu='on' but this faiss has no GPU support or sees no GPU (pip install latechunk[gpu])")
    d = config.index_dim(int(dim))
    if config.is_binary:
        return faiss.IndexBinaryFlat(d)
    try:
        index = faiss.index_factory(d, config.faiss_factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as err:
        raise ValueError(f"--index {config.factory!r}: faiss cannot build this index_factory string for inner-product "
                         f"search at dimension {d} (an unknown string, or an index without inner product such as LSH; e.g. "
                         f"Flat, HNSW32, IVF1024,Flat; see the faiss wiki 'The index factory'): "
                         f"{_faiss_message(err)}") from err
    ivf = ivf_of(index)
    if ivf is not None and hasattr(faiss.downcast_index(ivf), "do_polysemous_training"):
        # index_factory turns polysemous training on for IVF..,PQ: a simulated annealing that only serves a Hamming
        # pre-filter (polysemous_ht) latechunk never uses, and triples training time; inner products are the same
        faiss.downcast_index(ivf).do_polysemous_training = False
    hnsw = getattr(index, "hnsw", None)  # faiss's Python layer returns the concrete class (IndexHNSWFlat, ...)
    if hnsw is not None:
        hnsw.efConstruction = config.ef_construction
        hnsw.efSearch = config.ef_search
    return index


def _faiss_message(err: Exception) -> str:
    """The reason in a faiss C++ error, without its ``Error in <function> at <file>:<line>:`` prefix."""
    text = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
    return re.sub(r"^Error in .*? at \S+:\d+: (Error: )?", "", text)


def product_quantizer_of(index):
    """The ``faiss.ProductQuantizer`` of a PQ index (``PQ``, ``IVF...,PQ``, ``HNSW..,PQ``, fast-scan, under a
    pre-transform such as ``OPQ``), or None for any other index.

    Args:
        index: A faiss index.

    Returns:
        The product quantizer (``M`` sub-quantizers of ``ksub = 2**nbits`` centroids each) or None.
    """
    import faiss

    seen = 0
    while index is not None and seen < 8:  # wrappers: IndexPreTransform.index, IndexHNSW.storage
        index = faiss.downcast_index(index)
        if hasattr(index, "pq"):
            return index.pq
        index = getattr(index, "index", None) or getattr(index, "storage", None)
        seen += 1
    return None


def pq_training_warning(index, rows: int, factory: str) -> str | None:
    """A warning when a PQ index's codebooks are trained on fewer vectors than faiss's k-means asks for
    (:data:`MIN_POINTS_PER_LIST` per centroid: ``39 * 2**nbits``, 9,984 for the default 8 bits), else None.
    faiss then only prints its own "WARNING clustering ..." line, and recall can drop well below a Flat index's.

    Args:
        index: The untrained faiss index.
        rows: Training vectors it gets.
        factory: The factory string (for the message).
    """
    pq = product_quantizer_of(index)
    if pq is None:
        return None
    need = MIN_POINTS_PER_LIST * int(pq.ksub)
    if rows >= need:
        return None
    return (f"index {factory!r}: its product quantizer ({pq.M} codebooks of {pq.ksub} centroids) is trained on "
            f"{rows:,} vectors, fewer than the {need:,} faiss's k-means asks for; recall can fall well below a "
            "Flat index's. For a corpus this small use Flat, HNSW32 or SQ8 (or fewer bits: PQ<m>x4)")


class IndexTrainingError(ValueError):
    """An index type that cannot be trained on the vectors there are (too few for its quantizers, or none)."""


def _train(index, xt: np.ndarray, factory: str) -> None:
    if xt.shape[0] == 0:
        raise IndexTrainingError(f"index {factory!r} needs training, but there are no vectors to train it on")
    message = pq_training_warning(index, int(xt.shape[0]), factory)
    if message:
        import warnings

        warnings.warn(message, UserWarning, stacklevel=3)
        product_quantizer_of(index).cp.min_points_per_centroid = 1  # only silences faiss's own line per codebook
    try:
        index.train(xt)
    except RuntimeError as err:
        raise IndexTrainingError(f"cannot train index {factory!r} on {xt.shape[0]} vectors: "
                         f"{_faiss_message(err)} (each quantizer of the index needs at least as many training "
                         "vectors as it has centroids: IVF<n> needs n, PQ<m>x<b> 2**b (256 for the default 8 bits), "
                         "PCA<d> more vectors than d; for a small corpus use Flat or HNSW32)") from err


def _use_gpu(config: IndexConfig) -> bool:
    if config.precision != "float32":  # compact indexes are built on the CPU
        return False
    return config.gpu == "on" or (config.gpu == "auto" and config.factory == "Flat" and faiss_gpu_available())


def build_index(vectors, config: IndexConfig | None = None, dim: int | None = None):
    """Build a FAISS index over ``vectors`` (added as given, never normalised here, except that ``truncate_dim``
    truncates and renormalises as :func:`query_transform`); vector id i is row i.

    Args:
        vectors: (n, dim) any float dtype/layout (copied, never mutated). ``n`` may be 0 (then give ``dim``).
        config: Index settings (default ``Flat``, float32). A type that needs training (``IVF``, ``SQ8`` of
            ``int8``) is trained on all ``vectors``.
        dim: Vector dimension when ``vectors`` is empty.

    Returns:
        A CPU ``faiss.Index`` (built on the GPU when ``config.gpu`` allows and one is present, then copied back),
        or a ``faiss.IndexBinaryFlat`` for ``ubinary``.

    Raises:
        ValueError: on an unknown factory string, an unknown dimension, training that fails, a bad
            ``truncate_dim``, or ``config.gpu == "on"`` without GPU FAISS.
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
    xb = _encode_rows(xb, config)
    if not index.is_trained:
        _train(index, xb, config.faiss_factory)
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
    ``batches`` is called twice then); then every batch is added in order (:func:`add_vectors`). Nothing is
    normalised, except by ``truncate_dim`` (:func:`query_transform`).

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
            take = _encode_rows(np.asarray(v[: train_max_rows - n]), config)
            parts.append(take)
            n += take.shape[0]
        if n == 0:  # no vectors at all (0 documents embedded): an empty, untrained index, as build_index gives
            return index
        _train(index, np.concatenate(parts), config.faiss_factory)
    for v in batches():
        if len(v):
            add_vectors(index, v, config)
    return index


def check_factory(config: IndexConfig, dim: int) -> None:
    """Refuse, before anything is encoded, a factory string that faiss knows but latechunk cannot build.

    latechunk numbers vectors by chunk-table row itself (``add_with_ids`` for IVF parts, ``add`` otherwise) and
    searches by inner product, so these are refused: an IVF with fewer than 1 inverted list (``IVF0``), an ID map
    (``IDMap``/``IDMap2``: ids are the row numbers already) and a refine wrapper (``...,RFlat``/``Refine(...)``:
    use ``--precision`` with rescoring instead) and an NSG graph (``NSG32``: faiss builds it in one ``add`` and
    refuses later ones, while latechunk adds shard by shard), besides what :func:`new_index` refuses (unknown strings, indexes
    without inner product such as ``LSH``).

    Args:
        config: The run's index settings.
        dim: The model's embedding dimension (before ``truncate_dim``).

    Raises:
        ValueError: naming ``--index`` and the reason.
    """
    import faiss

    if config.is_binary:
        return
    index = new_index(config, dim)
    kind = type(index).__name__
    if "IDMap" in kind:
        raise ValueError(f"--index {config.factory!r}: an ID map is not needed (vector id i is row i of "
                         "chunks.parquet already); use the index inside it, e.g. 'Flat'")
    if "Refine" in kind:
        raise ValueError(f"--index {config.factory!r}: refine wrappers (RFlat, Refine(...)) are not supported; "
                         "use the base index with --precision (compact codes are rescored with float vectors)")
    inner = faiss.downcast_index(index.index) if "PreTransform" in kind else index
    if "NSG" in type(inner).__name__:
        # faiss builds an NSG graph in one add() of at least 100 vectors and refuses any later add, while latechunk
        # adds one shard at a time (and --append, Index.add add later)
        raise ValueError(f"--index {config.factory!r}: an NSG graph cannot be added to once built (faiss builds it "
                         "in one add of at least 100 vectors; latechunk adds one shard at a time and --append adds "
                         "later); use HNSW32, the graph index that grows")
    for m in re.findall(r"HNSW(\d+)", config.factory):
        if int(m) < 2:
            # faiss accepts HNSW0 and then aborts the process (an assertion in HNSW.cpp) while adding vectors
            raise ValueError(f"--index {config.factory!r}: HNSW needs at least 2 neighbours per node (HNSW<M>, "
                             "M >= 2, e.g. HNSW32)")
    ivf = ivf_of(index)
    if ivf is not None and faiss.downcast_index(ivf).nlist < 1:
        raise ValueError(f"--index {config.factory!r}: an IVF index needs at least 1 inverted list (IVF<nlist>, "
                         "e.g. IVF1024,Flat)")


def ivf_of(index):
    """The ``faiss.IndexIVF`` inside ``index`` (itself, or under a pre-transform such as ``OPQ``), or None.

    Args:
        index: A faiss index (or binary index).

    Returns:
        The IVF index (sharing ``index``'s memory), or None for a non-IVF index (Flat, HNSW, PQ, binary).
    """
    import faiss

    if is_binary_index(index):
        return None
    try:
        return faiss.extract_index_ivf(index)
    except (RuntimeError, AttributeError, TypeError):
        return None


def fit_nlist(config: IndexConfig, dim: int, n: int) -> tuple[IndexConfig, int | None, int | None]:
    """The config actually built for ``n`` vectors: an IVF factory whose ``nlist`` needs more training vectors
    than the corpus has (fewer than :data:`MIN_POINTS_PER_LIST` per list) gets ``nlist = max(1, n // 39)``
    (the first ``IVF{nlist}`` of the string rewritten); every other config is returned as is.

    Args:
        config: The index settings.
        dim: The input vectors' dimension.
        n: Vectors in the corpus.

    Returns:
        ``(config, requested nlist, built nlist)``; both None for a non-IVF factory.

    Raises:
        ValueError: as :func:`new_index`.
    """
    ivf = ivf_of(new_index(config, dim))
    if ivf is None:
        return config, None, None
    want = int(ivf.nlist)
    if n <= 0 or n >= MIN_POINTS_PER_LIST * want:
        return config, want, want
    got = max(1, n // MIN_POINTS_PER_LIST)
    factory, hits = re.subn(r"IVF\d+", f"IVF{got}", config.factory, count=1)
    if not hits:  # nlist not spelled IVF<n> (cannot happen for faiss's factory grammar): keep it, faiss decides
        return config, want, want
    return dataclasses.replace(config, factory=factory), want, got


def has_exact_codes(index) -> bool:
    """Whether an IVF index stores vectors well enough that a stored vector finds itself first (``Flat``,
    ``SQfp16``, ``SQ8`` codes; not ``PQ``, whose codes are a lossy product quantization).

    Args:
        index: A faiss index.

    Returns:
        True for ``IndexIVFFlat`` and ``IndexIVFScalarQuantizer``; False for other IVF codes and non-IVF indexes.
    """
    import faiss

    ivf = ivf_of(index)
    if ivf is None:
        return False
    ivf = faiss.downcast_index(ivf)
    return isinstance(ivf, (faiss.IndexIVFFlat, faiss.IndexIVFScalarQuantizer))


def add_vectors(index, vectors, config: IndexConfig) -> None:
    """Append vectors to an index built with ``config`` (vector ids continue from ``index.ntotal``): the one way
    rows enter an index, so an appended row is stored as a built one (``--append``, ``Index.add``).

    Args:
        index: A trained index of :func:`new_index`/:func:`build_index`/:func:`add_batches` (or read back from
            an output folder) of the same ``config``; an ``int8`` index keeps the ranges it was trained on
            (values outside them are clipped, as ``quantize_embeddings`` with given ranges does).
        vectors: (n, dim) any float dtype/layout (copied), ``dim`` the model's dimension; transformed by
            :func:`query_transform`, packed to bits for ``ubinary``.
        config: The index settings.

    Raises:
        ValueError: on vectors that are not 2-D, hold NaN/inf, or whose dimension does not fit the index, or an
            index that is not trained.
    """
    x = _encode_rows(vectors, config)
    if not len(x):
        return
    if not index.is_trained:
        raise ValueError(f"cannot add vectors to an untrained {config.faiss_factory!r} index (train it first)")
    width = x.shape[1] * (8 if config.is_binary else 1)
    if width != index.d:
        raise ValueError(f"vectors of dimension {x.shape[1]} (after --truncate-dim) do not fit an index of "
                         f"dimension {index.d}")
    try:
        index.add(x)
    except RuntimeError as err:  # what faiss refuses at add time (check_factory refuses the known cases earlier)
        raise ValueError(f"cannot add {len(x):,} vectors to the {config.faiss_factory!r} index: "
                         f"{_faiss_message(err)}") from err
