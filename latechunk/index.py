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

**Compact vectors** (:attr:`IndexConfig.precision <latechunk.config.IndexConfig.precision>`,
:attr:`~latechunk.config.IndexConfig.truncate_dim`), with the semantics of sentence-transformers'
``quantize_embeddings`` (``sentence_transformers.util.quantization``): the shards keep float32 full vectors; only
the index is compact. ``truncate_dim`` keeps the first N dimensions (Matryoshka representation learning, Kusupati
et al., arXiv:2205.13147) and renormalises when the run normalises, for indexed and query vectors alike
(:func:`query_transform`). ``float16`` is faiss's ``SQfp16``; ``int8`` is faiss's ``SQ8``, whose per-dimension
min/max ranges are trained on the corpus (the codes are ``quantize_embeddings(x, "uint8",
calibration_embeddings=corpus)``'s, up to float rounding at a bucket edge) and which scores the float query
against the decoded codes (no query quantisation); ``ubinary`` packs ``x > 0`` into bits (``np.packbits``) in a
faiss ``IndexBinaryFlat``: :func:`search_index` fetches ``RESCORE_MULTIPLIER * k`` candidates by Hamming distance
and rescores them with the float query against the ±1 codes, as ``semantic_search_faiss(..., rescore=True)`` does
(Yamada et al., "Efficient Passage Retrieval with Hashing for Open-domain QA", arXiv:2106.00882; Shakir, Aarsen &
Lee, "Binary and Scalar Embedding Quantization", Hugging Face blog, 2024).

FAISS: Johnson, Douze & Jégou, "Billion-scale similarity search with GPUs" (https://github.com/facebookresearch/faiss);
index factory strings: https://github.com/facebookresearch/faiss/wiki/The-index-factory.

Tests: ``tests/test_index.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import numpy as np

from latechunk.config import RESCORE_MULTIPLIER, IndexConfig

__all__ = [
    "RESCORE_MULTIPLIER",
    "TRAIN_MAX_ROWS",
    "IndexConfig",
    "add_batches",
    "add_vectors",
    "as_float32_rows",
    "build_index",
    "check_rows",
    "faiss_gpu_available",
    "index_bytes",
    "is_binary_index",
    "new_index",
    "query_transform",
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


def is_binary_index(index) -> bool:
    """Whether ``index`` is a faiss ``IndexBinary`` (a ``ubinary`` index: packed bits, Hamming distance).

    Args:
        index: A faiss index.

    Returns:
        True for an ``IndexBinary``.
    """
    import faiss

    return isinstance(index, faiss.IndexBinary)


def query_transform(xq, config: IndexConfig) -> np.ndarray:
    """Vectors as the index of ``config`` holds them, before quantisation: the first ``config.truncate_dim``
    dimensions, L2-normalised again when ``config.renormalize`` (the run normalises); unchanged without
    ``truncate_dim``. Apply it to every query before :func:`search_index` (the indexed vectors got it too).

    Args:
        xq: (n, dim) any float dtype/layout (copied), ``dim`` the model's vector dimension.
        config: The index settings (e.g. ``IndexConfig.from_dict(manifest["index"])``).

    Returns:
        (n, truncate_dim or dim) float32, C-contiguous, a new array; a zero row stays zero.

    Raises:
        ValueError: if ``xq`` is not 2-D or holds NaN/inf, or ``truncate_dim`` exceeds its dimension.
    """
    q = as_float32_rows(xq)
    if config.truncate_dim is None:
        return q
    if config.truncate_dim > q.shape[1]:
        raise ValueError(f"--truncate-dim {config.truncate_dim} exceeds the vectors' dimension {q.shape[1]}")
    q = np.ascontiguousarray(q[:, : config.truncate_dim])
    if config.renormalize:
        norms = np.linalg.norm(q, axis=1, keepdims=True)
        q /= np.where(norms > 0, norms, 1.0)
    return q


def _encode_rows(x, config: IndexConfig) -> np.ndarray:
    """What :func:`add_vectors` adds: the transformed float32 rows, or their packed bits for ``ubinary``."""
    q = query_transform(x, config)
    return np.packbits(q > 0, axis=-1) if config.is_binary else q


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
    index.add(x)


def search_index(index, xq, k: int, rescore_multiplier: int = RESCORE_MULTIPLIER):
    """Search ``index`` with query vectors (as given: normalise them as the indexed vectors were, and apply
    :func:`query_transform` of the index's config).

    A float index (flat, HNSW, IVF, scalar-quantised) scores inner products with the float query (faiss decodes
    ``SQfp16``/``SQ8`` codes on the fly). A binary (``ubinary``) index is searched for
    ``rescore_multiplier * k`` candidates by Hamming distance of the packed signs (``np.packbits(xq > 0)``); each
    candidate is then scored as ``xq · s / sqrt(dim)`` with ``s`` its unpacked ±1 code (the cosine of a
    unit-norm query and the code), and the best ``k`` are kept: sentence-transformers'
    ``semantic_search_faiss(..., rescore=True)``, whose score ``xq · b`` with ``b`` in {0, 1} differs from this by
    a per-query affine map, so the ranking is the same.

    Args:
        index: A FAISS index (from :func:`build_index` or :meth:`OutputFolder.read_index
            <latechunk.output.OutputFolder.read_index>`).
        xq: (n_queries, dim), any float dtype/layout (copied); ``dim == index.d``.
        k: Results per query (clipped to ``index.ntotal``).
        rescore_multiplier: Binary indexes: candidates fetched per result before rescoring (>= 1).

    Returns:
        ``(D, I)``: (n_queries, k') float32 scores (inner products; rescored cosines for a binary index) and
        int64 ids (row numbers of the chunk table), best first; ``k' = min(k, ntotal)``; an approximate index
        may return id ``-1`` where it found fewer.

    Raises:
        ValueError: if ``k < 1`` or ``rescore_multiplier < 1``, or ``xq`` is not 2-D, holds NaN/inf or has
            another dimension than the index (a query without :func:`query_transform`?).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if rescore_multiplier < 1:
        raise ValueError(f"rescore_multiplier must be >= 1, got {rescore_multiplier}")
    q = as_float32_rows(xq)
    if q.shape[1] != index.d:
        raise ValueError(f"queries of dimension {q.shape[1]} do not fit an index of dimension {index.d} (apply "
                         "latechunk.index.query_transform with the index's config: --truncate-dim)")
    k_eff = min(k, index.ntotal)
    if k_eff == 0:
        return np.zeros((q.shape[0], 0), np.float32), np.zeros((q.shape[0], 0), np.int64)
    if not is_binary_index(index):
        return index.search(q, k_eff)
    return _search_binary(index, q, k_eff, rescore_multiplier)


def _binary_codes(index, ids: np.ndarray) -> np.ndarray:
    """(len(ids), code_size) uint8 codes of a binary index's rows (a zero-copy view of a flat one's storage)."""
    import faiss

    if isinstance(index, faiss.IndexBinaryFlat):
        codes = faiss.rev_swig_ptr(index.xb.data(), index.ntotal * index.code_size).reshape(index.ntotal,
                                                                                           index.code_size)
        return codes[ids]
    return np.stack([index.reconstruct(int(i)) for i in ids.ravel()]).reshape(*ids.shape, index.code_size)


def _search_binary(index, q: np.ndarray, k: int, rescore_multiplier: int):
    n_cand = min(k * rescore_multiplier, index.ntotal)
    _, cand = index.search(np.packbits(q > 0, axis=-1), n_cand)
    cand = cand.astype(np.int64)
    valid = cand >= 0
    codes = _binary_codes(index, np.where(valid, cand, 0))  # (n, n_cand, code_size)
    signs = np.unpackbits(codes, axis=-1)[..., : index.d].astype(np.float32) * 2.0 - 1.0
    scores = np.einsum("id,icd->ic", q, signs) / np.float32(np.sqrt(index.d))
    scores = np.where(valid, scores, -np.inf)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    rows = np.arange(q.shape[0])[:, None]
    D = scores[rows, order].astype(np.float32)
    I = np.where(valid[rows, order], cand[rows, order], -1)
    return D, I


def index_bytes(index) -> int:
    """The size of ``index`` as written to a file (``faiss.serialize_index``, or ``serialize_index_binary``).

    Args:
        index: A faiss index or binary index.

    Returns:
        Bytes.
    """
    import faiss

    if is_binary_index(index):
        return int(faiss.serialize_index_binary(index).size)
    return int(faiss.serialize_index(index).size)


def check_rows(index, config: IndexConfig, vectors, offset: int) -> str | None:
    """Whether rows ``[offset, offset + n)`` of ``index`` hold ``vectors`` as ``config`` stores them (``verify``).

    float32: equal within 1e-5; float16: within 1e-3 relative (a half float's 11-bit mantissa); int8: within one
    quantisation step of the trained range per dimension (plus 1e-5); ubinary: the packed signs equal exactly.

    Args:
        index: The index (read back from ``index.faiss``).
        config: Its settings (``IndexConfig.from_dict(manifest["index"])``).
        vectors: (n, dim) float32 vectors of those rows (a shard's), the model's dimension.
        offset: Row of ``vectors[0]`` in the index.

    Returns:
        ``None`` when they agree or the index type cannot give its rows back (IVF without a direct map); else
        a one-line description of the first difference.
    """
    n = len(vectors)
    if n == 0:
        return None
    x = _encode_rows(vectors, config)
    if is_binary_index(index):
        got = _binary_codes(index, np.arange(offset, offset + n))
        bad = np.flatnonzero((got != x).any(axis=1))
        return None if not bad.size else f"binary codes of row {offset + int(bad[0])} differ from the vector's signs"
    try:
        got = index.reconstruct_n(offset, n)
    except RuntimeError:  # an index type that cannot reconstruct (IVF without a direct map)
        return None
    err = np.abs(got - x)
    if config.precision == "float16":
        tol = 1e-3 * np.abs(x) + 1e-6
    elif config.precision == "int8":
        tol = np.full(x.shape, 1e-5, np.float32) + _sq_step(index)
    else:
        tol = np.full(x.shape, 1e-5, np.float32)
    bad = np.argwhere(err > tol)
    if not bad.size:
        return None
    r, c = (int(v) for v in bad[0])
    return (f"row {offset + r} dimension {c} holds {got[r, c]:.6g} but the vector gives {x[r, c]:.6g} "
            f"({config.label}, max abs diff {float(err.max()):.2e})")


def _sq_step(index) -> np.ndarray:
    """Per-dimension code step of an ``SQ8`` index (``vdiff / 255``), or 0 where it cannot be found."""
    import faiss

    sq = getattr(faiss.downcast_index(index), "sq", None)
    if sq is None:
        return np.zeros(index.d, np.float32)
    trained = faiss.vector_to_array(sq.trained)  # QT_8bit: vmin then vdiff, per dimension
    return (trained[index.d:] / 255.0).astype(np.float32) if trained.size == 2 * index.d else np.zeros(index.d, np.float32)
