"""``latechunk verify``'s IVF checks: ``index.ivfdata`` (the on-disk inverted lists) has the manifest's size and
sha256, and a seeded sample of the vectors finds itself among its :data:`SELF_SEARCH_K` nearest at the index's
``nprobe`` (:func:`latechunk.index.self_search`; reported, not checked, for a lossy PQ code).

Part of :mod:`latechunk.verify`; tests: ``tests/verify/test_verify.py``.
"""

from __future__ import annotations

import numpy as np

from latechunk.ingest.files import sha256_file
from latechunk.output import INDEX_FILE, OutputFolder
from latechunk.verify.problems import _Problems
from latechunk.verify.shards import _index_config

#: rows per shard (at most :data:`SELF_SEARCH_ROWS` in all) that search for themselves in an IVF index
SELF_SEARCH_PER_SHARD = 16
SELF_SEARCH_ROWS = 256
SELF_SEARCH_K = 10


def _check_ivf(folder: OutputFolder, manifest: dict, index, P: _Problems) -> str:
    """``index.ivfdata`` against the manifest, and the self-search of an IVF index; returns a summary note."""
    from latechunk.output import IVFDATA_FILE

    rec = manifest.get("index", {}).get("ivfdata")
    if rec:
        path = folder.path / rec.get("file", IVFDATA_FILE)
        if not path.is_file():
            P.add("file", f"{path.name} is missing (the inverted lists of the IVF index in {INDEX_FILE})")
        elif path.stat().st_size != rec.get("bytes"):
            P.add("file", f"{path.name} has {path.stat().st_size} bytes, the manifest says {rec.get('bytes')} "
                          "(truncated or replaced)")
        elif sha256_file(path) != rec.get("sha256"):
            P.add("file", f"{path.name}: sha256 differs from the manifest's (corrupted or replaced)")
    if index is None:
        return ""
    from latechunk.index import has_exact_codes, ivf_of, query_transform, self_search

    ivf = ivf_of(index)
    if ivf is None or index.ntotal == 0:
        return ""
    config = _index_config(manifest)
    vecs, ids, offset = [], [], 0
    for s in manifest.get("shards", []):
        rows = int(s.get("rows", 0))
        take = min(rows, SELF_SEARCH_PER_SHARD, SELF_SEARCH_ROWS - sum(len(i) for i in ids))
        if take > 0:
            try:
                v = folder.read_shard_vectors(s["name"])
            except (OSError, ValueError, KeyError):
                v = None
            if v is not None and v.ndim == 2 and len(v) == rows:
                r = np.sort(np.random.default_rng(offset).choice(rows, size=take, replace=False))
                vecs.append(np.asarray(v[r], np.float32))
                ids.append(offset + r)
        offset += rows
    if not ids or offset != index.ntotal:
        return ""
    try:
        q = query_transform(np.concatenate(vecs), config)
        rate, missed = self_search(index, q, np.concatenate(ids), k=SELF_SEARCH_K)
    except ValueError as err:
        P.add("vectors", f"IVF self-search failed: {err}")
        return ""
    n = sum(len(i) for i in ids)
    note = f"IVF self-recall@{SELF_SEARCH_K} {rate:.3f} over {n} sampled rows at nprobe {ivf.nprobe}"
    if has_exact_codes(index):
        for row in missed:
            P.add("vectors", f"row {row} is not among the {SELF_SEARCH_K} nearest of its own vector at nprobe "
                             f"{ivf.nprobe} (its IVF list and code were checked; the index is {config.faiss_factory})")
        return note
    return note + " (lossy codes: reported, not checked)"
