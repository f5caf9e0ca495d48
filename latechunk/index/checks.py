"""What ``latechunk verify`` asks of an index: that its rows hold the shards' vectors as the config stores them
(:func:`check_rows`, :func:`check_ivf_rows`) and that stored vectors find themselves (:func:`self_search`).
"""

from __future__ import annotations

import numpy as np

from latechunk.config import IndexConfig
from latechunk.index.build import ivf_of
from latechunk.index.codes import _binary_codes, _encode_rows, as_float32_rows, is_binary_index
from latechunk.index.search import search_index


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
        ``None`` when they agree or the index type cannot give its rows back; else a one-line description of the
        first difference. An IVF index is checked on a sample of the rows (:func:`check_ivf_rows`).
    """
    n = len(vectors)
    if n == 0:
        return None
    x = _encode_rows(vectors, config)
    if is_binary_index(index):
        got = _binary_codes(index, np.arange(offset, offset + n))
        bad = np.flatnonzero((got != x).any(axis=1))
        return None if not bad.size else f"binary codes of row {offset + int(bad[0])} differ from the vector's signs"
    if ivf_of(index) is not None:  # no direct map: a sample of rows, looked up in their inverted lists
        return check_ivf_rows(index, config, vectors, offset)
    try:
        got = index.reconstruct_n(offset, n)
    except RuntimeError:  # an index type that cannot reconstruct
        return None
    tol = _row_tolerance(index, x)
    if tol is None:  # lossy codes (PQ, pre-transforms): a row is not given back; ids hold by construction
        return None
    err = np.abs(got - x)
    bad = np.argwhere(err > tol)
    if not bad.size:
        return None
    r, c = (int(v) for v in bad[0])
    return (f"row {offset + r} dimension {c} holds {got[r, c]:.6g} but the vector gives {x[r, c]:.6g} "
            f"({config.label}, max abs diff {float(err.max()):.2e})")


#: rows of each shard :func:`check_ivf_rows` looks up (seeded by the shard's first row)
CHECK_ROWS_PER_BATCH = 32


def check_ivf_rows(index, config: IndexConfig, vectors, offset: int, sample: int = CHECK_ROWS_PER_BATCH) -> str | None:
    """Whether a seeded sample of rows ``[offset, offset + n)`` is stored in an IVF index as ``config`` stores
    ``vectors``: each sampled row's id is in the inverted list its vector is assigned to (the quantizer's nearest
    centroid, as ``add`` did), and the code stored there is the vector's code encoded again
    (``IndexIVF.encode_vectors``), byte for byte, after the index's pre-transforms (``OPQ``, ``PCA``). This holds
    for every code type, ``PQ`` included (encoding is deterministic); it proves id i = row i.

    Args:
        index: An IVF index (read back from ``index.faiss``; on disk or in memory).
        config: Its settings.
        vectors: (n, dim) float32 vectors of those rows (a shard's), the model's dimension.
        offset: Row of ``vectors[0]`` in the index.
        sample: Rows looked up (all when ``n`` is smaller); the sample is ``default_rng(offset)``'s.

    Returns:
        None when every sampled row agrees; else a one-line description of the first that does not.

    Raises:
        ValueError: if ``index`` is not an IVF index.
    """
    import faiss

    ivf = ivf_of(index)
    if ivf is None:
        raise ValueError("check_ivf_rows needs an IVF index")
    n = len(vectors)
    rows = np.sort(np.random.default_rng(offset).choice(n, size=min(n, sample), replace=False))
    x = _encode_rows(np.asarray(vectors[rows]), config)
    pre = faiss.downcast_index(index)
    if isinstance(pre, faiss.IndexPreTransform):  # OPQ, PCA, ...: the vectors as the IVF index sees them
        for i in range(pre.chain.size()):
            x = np.ascontiguousarray(pre.chain.at(i).apply(x), dtype=np.float32)
    _, lists = ivf.quantizer.search(x, 1)
    lists = lists[:, 0].astype(np.int64)
    codes = np.empty((len(x), ivf.code_size), np.uint8)
    ivf.encode_vectors(len(x), faiss.swig_ptr(x), faiss.swig_ptr(lists), faiss.swig_ptr(codes), False)
    inv = ivf.invlists
    for r, lst, code in zip(rows.tolist(), lists.tolist(), codes):
        row = offset + r
        size = inv.list_size(lst)
        ids = faiss.rev_swig_ptr(inv.get_ids(lst), size) if size else np.zeros(0, np.int64)
        where = np.flatnonzero(ids == row)
        if not where.size:
            return f"row {row} is not in inverted list {lst}, the list its vector is assigned to ({config.label})"
        stored = faiss.rev_swig_ptr(inv.get_codes(lst), size * ivf.code_size).reshape(size, ivf.code_size)
        if not np.array_equal(stored[where[0]], code):
            return (f"row {row}: the code stored in inverted list {lst} differs from its vector's code "
                    f"({config.faiss_factory})")
    return None


def self_search(index, vectors, ids, k: int = 10, nprobe: int | None = None) -> tuple[float, list[int]]:
    """Search the index with some of its own vectors: the rate at which each finds itself among the first
    ``k`` (a row counts as found when a tie explains its absence: the ``k``-th score is at least its own
    inner product minus 1e-4, i.e. duplicates).

    Args:
        index: A float index (not binary).
        vectors: (m, d) float32 vectors as the index holds them (after :func:`query_transform`).
        ids: (m,) their rows.
        k: Results per query.
        nprobe: IVF lists probed (None: the index's own).

    Returns:
        ``(rate, missed)``: the fraction found, in [0, 1] (1.0 for m = 0), and the rows not found.
    """
    ids = np.asarray(ids, np.int64)
    if not len(ids):
        return 1.0, []
    q = as_float32_rows(vectors)
    D, I = search_index(index, q, k, nprobe=nprobe)
    own = np.einsum("ij,ij->i", q, q)
    found = (I == ids[:, None]).any(axis=1) | ((D.shape[1] == k) & (D[:, -1] >= own - 1e-4))
    return float(found.mean()), ids[~found].tolist()


#: scalar-quantizer code types whose trained ranges give the code step: levels per range
_SQ_LEVELS = {"QT_8bit": 255, "QT_8bit_uniform": 255, "QT_6bit": 63, "QT_4bit": 15, "QT_4bit_uniform": 15}


def _row_tolerance(index, x: np.ndarray) -> np.ndarray | None:
    """How far a row given back by ``index.reconstruct_n`` may lie from the float32 row ``x`` it was made from,
    from the index's own storage (so that a factory string with its own codes, ``SQ8`` or ``HNSW32,SQ8`` under
    ``--precision float32``, is checked as ``--precision int8`` is): flat storage 1e-5; scalar-quantized storage
    one code step of its trained range per dimension (``vdiff / levels``; ``SQ8``, ``SQ6``, ``SQ4`` and their
    uniform forms) plus 1e-5, or a relative 1e-3 (``SQfp16``) or 1e-2 (``SQbf16``) of the value. An HNSW index's
    storage is its ``storage`` index. ``None`` for codes whose rows cannot be bounded so (``PQ``, pre-transforms,
    other quantizers): not checked.

    Args:
        index: A float faiss index.
        x: (n, d) float32 rows as added.

    Returns:
        (n, d) float32 tolerances, or None.
    """
    import faiss

    idx = faiss.downcast_index(index)
    if getattr(idx, "storage", None) is not None:  # IndexHNSW*: the vectors live in its storage index
        idx = faiss.downcast_index(idx.storage)
    flat = np.full(x.shape, 1e-5, np.float32)
    if isinstance(idx, faiss.IndexFlat):
        return flat
    sq = getattr(idx, "sq", None)
    if sq is None:
        return None
    qtype = next((n for n in dir(faiss.ScalarQuantizer) if n.startswith("QT_")
                  and getattr(faiss.ScalarQuantizer, n) == sq.qtype), "")
    if qtype == "QT_fp16":
        return 1e-3 * np.abs(x) + 1e-6
    if qtype == "QT_bf16":
        return 1e-2 * np.abs(x) + 1e-6
    if qtype not in _SQ_LEVELS:
        return None
    trained = faiss.vector_to_array(sq.trained)  # vmin then vdiff: per dimension, or one pair (uniform)
    d = x.shape[1]
    if trained.size == 2 * d:
        step = trained[d:]
    elif trained.size == 2:
        step = np.full(d, trained[1])
    else:
        return None
    return flat + (np.abs(step) / _SQ_LEVELS[qtype]).astype(np.float32)
