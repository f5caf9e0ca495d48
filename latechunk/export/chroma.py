"""Chroma (``chromadb.PersistentClient(PATH)``): records under their chunk ids, the chunk text as the document,
the other fields as flat metadata, HNSW settings sized to the collection (:func:`chroma_hnsw`); the export's
writer and ``--sync``'s target.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from latechunk.export.common import _HELD, _client_module
from latechunk.export.source import _Batch, _Source
from latechunk.export.store import _refuse, _SyncTarget, _Writer
from latechunk.output import CHUNK_COLUMNS, metadata_value

#: Chroma HNSW settings of an export (:func:`chroma_hnsw`): ``max_neighbors`` (HNSW's M) and ``ef_construction``
#: fixed, ``ef_search`` the collection size clamped to [``ef_search_min``, ``ef_search_max``]
DEFAULT_HNSW = {"max_neighbors": 32, "ef_construction": 256, "ef_search_min": 128, "ef_search_max": 1024}


def chroma_hnsw(rows: int, hnsw: Mapping | None = None) -> dict:
    """The HNSW settings a Chroma export gets: :data:`DEFAULT_HNSW` sized to the collection, then ``hnsw``.

    HNSW (Malkov & Yashunin, arXiv:1603.09320) is approximate; its recall grows with ``max_neighbors`` (M, links
    per node), ``ef_construction`` (candidates kept while linking) and ``ef_search`` (candidates kept per query).
    Chroma's defaults (16, 100, 100) missed FAISS's exact top hit of the README's credit-card question on the
    1,468 vectors of Chroma's corpora (queried from a fresh client). Here M is 32 and ``ef_construction`` 256
    (hnswlib's advice for recall near 1 on high-dimensional vectors), and ``ef_search`` is the number of rows,
    clamped to [128, 1024]: a collection of up to 1,024 vectors is searched in effect exhaustively (every
    vector a candidate), a larger one with
    1,024 candidates per query (on the Chroma corpora 1.2 ms a query against 0.6 ms with Chroma's
    defaults, batched, 2 CPUs).
    ``README.md`` ("Vector stores") records the recall@5 against FAISS flat.

    Args:
        rows: Vectors in the collection.
        hnsw: Settings that win over these (``max_neighbors``, ``ef_construction``, ``ef_search``,
            ``num_threads``, ``batch_size``, ``sync_threshold``, ``resize_factor``: Chroma's ``configuration
            ["hnsw"]`` keys); ``space`` is set by the export from the distance.

    Returns:
        The settings: ``{"max_neighbors", "ef_construction", "ef_search", ...}``.

    Raises:
        ValueError: if a value of ``max_neighbors``, ``ef_construction`` or ``ef_search`` is not an integer >= 1,
            or ``hnsw`` holds ``space``.
    """
    d = DEFAULT_HNSW
    out = {"max_neighbors": d["max_neighbors"], "ef_construction": d["ef_construction"],
           "ef_search": int(min(max(rows, d["ef_search_min"]), d["ef_search_max"]))}
    extra = dict(hnsw or {})
    if "space" in extra:
        raise ValueError("hnsw 'space' is set from the folder's distance (cosine for normalised vectors, ip for "
                         "--no-normalize ones): leave it out")
    for key in ("max_neighbors", "ef_construction", "ef_search"):
        v = extra.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ValueError(f"hnsw {key} must be an integer >= 1, got {v!r}")
    out.update({k: v for k, v in extra.items() if v is not None})
    return out


def _chroma_records(source: _Source, b: _Batch) -> list[dict]:
    """A batch's Chroma metadata dicts (every field but ``text``, which is the record's document)."""
    metadatas = []
    for cid, vid, row, f in zip(b.chunk_ids, b.vector_ids.tolist(), b.rows, b.fields):
        m = {"chunk_id": cid, "vector_id": vid, **{c: row[c] for c in CHUNK_COLUMNS if c != "text"},
             "fields_sha256": f, "manifest_sha256": source.manifest_sha256}
        if not m["heading_path"]:  # Chroma refuses an empty list as a metadata value
            del m["heading_path"]
        # Chroma metadata is flat: each scalar field of the record's metadata also as "metadata.FIELD", which a
        # where filter can name (the JSON text keeps every field, lists and objects included)
        for key, v in (metadata_value(m.get("metadata")) or {}).items():
            # Chroma's metadata values: str, bool, float and 64-bit int (a larger int stays in the JSON text)
            if isinstance(v, (str, float, bool)) or (isinstance(v, int) and -2**63 <= v < 2**63):
                m[f"metadata.{key}"] = v
        metadatas.append({key: v for key, v in m.items() if v is not None})  # ... and None (no url)
    return metadatas


def _open_chroma(path: Path, client):
    chromadb = _client_module("chroma")
    from chromadb.config import Settings

    return client if client is not None else chromadb.PersistentClient(str(path),
                                                                        settings=Settings(anonymized_telemetry=False))


def _chroma_put(cc, col, b: _Batch, metadatas: list[dict], upsert: bool = False) -> None:
    """Add (or upsert) a batch's rows: the chunk text as the record's document, ``metadatas`` beside it."""
    texts = [row["text"] for row in b.rows]
    put = col.upsert if upsert else col.add
    step = cc.get_max_batch_size()
    for a in range(0, len(b.chunk_ids), step):  # Chroma caps one call at get_max_batch_size() records
        put(ids=b.chunk_ids[a:a + step], embeddings=b.x[a:a + step], documents=texts[a:a + step],
            metadatas=metadatas[a:a + step])


def _chroma(source: _Source, path: Path, client, collection: str, overwrite: bool, hnsw: dict) -> _Writer:
    cc = _open_chroma(path, client)
    if collection in {c if isinstance(c, str) else c.name for c in cc.list_collections()}:
        existing = cc.get_collection(collection)
        n = existing.count()
        if n and not overwrite:
            raise _refuse("chroma", collection, path, n, "records", existing.metadata, source.manifest_sha256)
        cc.delete_collection(collection)
    space = "cosine" if source.distance == "cosine" else "ip"
    col = cc.create_collection(collection, configuration={"hnsw": {**hnsw, "space": space}},
                               metadata=source.metadata(), embedding_function=None)
    return _Writer(lambda b: _chroma_put(cc, col, b, _chroma_records(source, b)),
                   lambda: cc.delete_collection(collection))


def _chroma_target(source: _Source, path: Path, client, collection: str, page: int) -> _SyncTarget | None:
    cc = _open_chroma(path, client)
    if collection not in {c if isinstance(c, str) else c.name for c in cc.list_collections()}:
        return None
    col = cc.get_collection(collection, embedding_function=None)

    def held():
        offset = 0
        while True:
            got = col.get(include=["metadatas"], limit=page, offset=offset)
            for cid, m in zip(got["ids"], got["metadatas"]):
                yield cid, {k: (m or {}).get(k) for k in _HELD}
            if len(got["ids"]) < page:
                return
            offset += len(got["ids"])

    def write(b: _Batch, held_ids: set) -> None:
        metadatas = _chroma_records(source, b)
        old = [cid for cid in b.chunk_ids if cid in held_ids]
        if old:  # Chroma's upsert merges metadata: a key the new row lacks (a url gone) is set to None, removing it
            got = col.get(ids=old, include=["metadatas"])
            keys = {cid: set(m or {}) for cid, m in zip(got["ids"], got["metadatas"])}
            metadatas = [{**{k: None for k in keys.get(cid, ()) if k not in m}, **m}
                         for cid, m in zip(b.chunk_ids, metadatas)]
        _chroma_put(cc, col, b, metadatas, upsert=True)  # a row rewritten is replaced in place, never missing

    def renumber(ids: list, positions: list, manifest_sha256: str) -> None:
        step = cc.get_max_batch_size()
        for a in range(0, len(ids), step):  # update merges these keys into each record's metadata
            col.update(ids=list(ids[a:a + step]), metadatas=[{**pos, "manifest_sha256": manifest_sha256}
                                                             for pos in positions[a:a + step]])

    def delete(ids: list) -> None:
        step = cc.get_max_batch_size()
        for a in range(0, len(ids), step):
            col.delete(ids=list(ids[a:a + step]))

    def hnsw() -> dict:
        return dict((getattr(col, "configuration_json", None) or {}).get("hnsw") or {})

    def set_ef_search(n: int) -> None:
        col.modify(configuration={"hnsw": {"ef_search": int(n)}})

    return _SyncTarget(dict(col.metadata or {}), held, write, renumber, delete, lambda m: col.modify(metadata=m),
                       lambda: None, hnsw, set_ef_search)
