"""Vectors as an index holds them: float32 rows faiss takes, compact codes (``--truncate-dim``,
:func:`query_transform`; ``ubinary``'s packed signs) and an index's size in bytes (:mod:`latechunk.index`'s
docstring: the compact vectors and their sources).
"""

from __future__ import annotations

import numpy as np

from latechunk.config import IndexConfig


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


def _binary_codes(index, ids: np.ndarray) -> np.ndarray:
    """(len(ids), code_size) uint8 codes of a binary index's rows (a zero-copy view of a flat one's storage)."""
    import faiss

    if isinstance(index, faiss.IndexBinaryFlat):
        codes = faiss.rev_swig_ptr(index.xb.data(), index.ntotal * index.code_size).reshape(index.ntotal,
                                                                                           index.code_size)
        return codes[ids]
    return np.stack([index.reconstruct(int(i)) for i in ids.ravel()]).reshape(*ids.shape, index.code_size)


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
