"""Searching an index (:func:`search_index`, the one search entry point: ``nprobe``, an HNSW beam of at least
``k``, ``ubinary`` rescoring, an ``allowed`` id filter) and the checks made before a query model loads
(:func:`query_problem`, :func:`check_nprobe`).
"""

from __future__ import annotations

import numpy as np

from latechunk.config import RESCORE_MULTIPLIER
from latechunk.index.build import ivf_of
from latechunk.index.codes import _binary_codes, as_float32_rows, is_binary_index


def search_index(index, xq, k: int, rescore_multiplier: int = RESCORE_MULTIPLIER, nprobe: int | None = None,
                 allowed: np.ndarray | None = None):
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
        nprobe: IVF indexes: inverted lists probed per query (clipped to ``nlist``; more: slower, closer to
            exact; ``nprobe == nlist`` is exact for ``IVF...,Flat``); None: the index's own (what assembly
            stored: ``min(DEFAULT_NPROBE, nlist)``). The index is not changed (faiss ``SearchParametersIVF``).
            An HNSW index is searched with a beam (``efSearch``) of at least ``k``: with a narrower one faiss
            returns fewer than ``k`` results (``-k 5000`` over 2,417 vectors gave 942 at ``efSearch`` 128).
        allowed: Only these vector ids may be returned (a metadata filter: :func:`latechunk.output.allowed_rows`);
            None: all. A float index is searched with a faiss ``IDSelectorBatch`` in its search parameters (an
            HNSW or IVF search that finds fewer than ``min(k, len(allowed))`` of them is done again exhaustively
            over the index's results); a binary index rescores exactly the allowed rows.

    Returns:
        ``(D, I)``: (n_queries, k') float32 scores (inner products; rescored cosines for a binary index) and
        int64 ids (row numbers of the chunk table), best first; ``k' = min(k, ntotal)``; an approximate index
        may return id ``-1`` where it found fewer.

    Raises:
        ValueError: if ``k < 1`` or ``rescore_multiplier < 1``, or ``xq`` is not 2-D, holds NaN/inf or has
            another dimension than the index (a query without :func:`query_transform`?), or ``nprobe`` is given
            for a non-IVF index or is below 1.
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
    if allowed is not None:
        allowed = np.unique(np.asarray(allowed, dtype=np.int64))
        allowed = allowed[(allowed >= 0) & (allowed < index.ntotal)]
        k_eff = min(k_eff, len(allowed))
    if k_eff == 0:
        return np.zeros((q.shape[0], 0), np.float32), np.zeros((q.shape[0], 0), np.int64)
    if allowed is not None:
        return _search_allowed(index, q, k_eff, allowed, nprobe)
    params = _nprobe_params(index, nprobe)
    if not is_binary_index(index):
        params = params or _hnsw_params(index, k_eff)
        return index.search(q, k_eff) if params is None else index.search(q, k_eff, params=params)
    return _search_binary(index, q, k_eff, rescore_multiplier)


def _search_allowed(index, q: np.ndarray, k: int, allowed: np.ndarray, nprobe: int | None):
    """:func:`search_index` restricted to the ``allowed`` ids (sorted, unique, in range, ``k <= len(allowed)``)."""
    import faiss

    if is_binary_index(index):  # rescore every allowed row exactly (as _search_binary rescores its candidates)
        signs = np.unpackbits(_binary_codes(index, allowed), axis=-1)[:, : index.d].astype(np.float32) * 2.0 - 1.0
        scores = q @ signs.T / np.float32(np.sqrt(index.d))
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(scores, order, axis=1).astype(np.float32), allowed[order]
    _nprobe_params(index, nprobe)  # the same errors as an unfiltered search
    sel = faiss.IDSelectorBatch(allowed)  # held here while faiss searches: params.sel does not own it
    inner = faiss.downcast_index(index)
    wrapped = isinstance(inner, faiss.IndexPreTransform)
    if wrapped:
        inner = faiss.downcast_index(inner.index)
    ivf = ivf_of(index)
    if ivf is not None:
        params = faiss.SearchParametersIVF(nprobe=int(min(nprobe or ivf.nprobe, ivf.nlist)))
    elif isinstance(inner, faiss.IndexHNSW):
        params = faiss.SearchParametersHNSW()
        params.efSearch = int(max(inner.hnsw.efSearch, k))
    else:
        params = faiss.SearchParameters()
    params.sel = sel
    try:
        D, I = index.search(q, k, params=faiss.SearchParametersPreTransform(index_params=params) if wrapped else params)
        if not (I < 0).any():
            return D, I
    except RuntimeError:  # an index kind whose search takes no selector
        pass
    # exhaustive: every result of the index, the allowed ones kept (a narrow filter on a graph or few lists)
    D, I = search_index(index, q, int(index.ntotal), nprobe=None if ivf is None else int(ivf.nlist))
    keep = np.isin(I, allowed)
    out_d = np.full((q.shape[0], k), -np.inf, np.float32)
    out_i = np.full((q.shape[0], k), -1, np.int64)
    for r in range(q.shape[0]):
        d, i = D[r][keep[r]][:k], I[r][keep[r]][:k]
        out_d[r, : len(d)], out_i[r, : len(i)] = d, i
    return out_d, out_i


def query_problem(query: str) -> str:
    r"""What makes a search query unusable, for ``latechunk search`` and :meth:`latechunk.Index.search` alike;
    ``""`` for a good one.

    Args:
        query: The query as given (a command-line argument with bytes that are not UTF-8 arrives with them as
            ``\udc80``-``\udcff``, Python's ``surrogateescape``).

    Returns:
        ``"is empty"`` (whitespace or invisible marks such as U+200B only: nothing the model can read), ``"holds
        a byte that is not UTF-8 (\xff at character 3)"``, ``"holds a lone surrogate U+D800 at character 3 (not
        valid Unicode)"``, or ``""``.
    """
    from latechunk.front_matter import INVISIBLE_MARKS

    if not query.strip() or not "".join(query.split()).strip(INVISIBLE_MARKS):
        return "is empty"
    if query.isascii():
        return ""
    try:
        query.encode("utf-8")
        return ""
    except UnicodeEncodeError as err:
        c = ord(query[err.start])
        if 0xDC80 <= c <= 0xDCFF:
            return f"holds a byte that is not UTF-8 (\\x{c - 0xDC00:02x} at character {err.start})"
        return f"holds a lone surrogate U+{c:04X} at character {err.start} (not valid Unicode)"


def check_nprobe(index, nprobe: int | None) -> None:
    """Fail early (before a query model loads) on an ``nprobe`` that :func:`search_index` would refuse.

    Args:
        index: The index to be searched.
        nprobe: IVF lists per query, or None (the index's own).

    Raises:
        ValueError: if ``nprobe`` is below 1, not an integer, or given for a non-IVF index.
    """
    _nprobe_params(index, nprobe)


def _nprobe_params(index, nprobe: int | None):
    """The faiss search parameters setting ``nprobe`` (wrapped for a pre-transformed IVF index), or None."""
    import faiss

    if nprobe is None:
        return None
    if isinstance(nprobe, bool) or not isinstance(nprobe, (int, np.integer)) or nprobe < 1:
        raise ValueError(f"nprobe must be an integer >= 1, got {nprobe!r}")
    ivf = ivf_of(index)
    if ivf is None:
        kind = "a binary flat" if is_binary_index(index) else type(faiss.downcast_index(index)).__name__
        raise ValueError(f"--nprobe applies to IVF indexes (e.g. --index IVF1024,PQ32); this index is {kind}"
                         + (" (its search beam is --ef-search, set when it is built)" if "HNSW" in kind else ""))
    params = faiss.SearchParametersIVF(nprobe=int(min(nprobe, ivf.nlist)))
    if isinstance(faiss.downcast_index(index), faiss.IndexPreTransform):
        params = faiss.SearchParametersPreTransform(index_params=params)
    return params


def _hnsw_params(index, k: int):
    """The faiss search parameters widening an HNSW index's beam to ``k`` when its ``efSearch`` is narrower, else None
    (the index is not changed)."""
    import faiss

    inner = faiss.downcast_index(index)
    wrapped = isinstance(inner, faiss.IndexPreTransform)
    if wrapped:
        inner = faiss.downcast_index(inner.index)
    if not isinstance(inner, faiss.IndexHNSW) or inner.hnsw.efSearch >= k:
        return None
    params = faiss.SearchParametersHNSW()
    params.efSearch = int(k)
    return faiss.SearchParametersPreTransform(index_params=params) if wrapped else params


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
