"""Qdrant in local mode (``QdrantClient(path=PATH)``): points under their chunk ids, the fields as payload; the
export's writer and ``--sync``'s target.
"""

from __future__ import annotations

from pathlib import Path

from latechunk.export.common import _HELD, _client_module
from latechunk.export.source import _Batch, _Source
from latechunk.export.store import _refuse, _SyncTarget, _Writer
from latechunk.output import CHUNK_COLUMNS, metadata_value


def _open_qdrant(path: Path, client):
    """``(client, close)``: ``client`` or a local QdrantClient of ``path`` (closed by ``close``)."""
    from qdrant_client import QdrantClient

    if client is not None:
        return client, (lambda: None)
    try:
        qc = QdrantClient(path=str(path))
    except RuntimeError as err:
        if "already accessed" not in str(err):
            raise
        raise ValueError(
            f"qdrant folder {path} is open in another QdrantClient (local mode allows one client per folder, "
            "in this or another process): close that client first, or from Python pass it as "
            "export_folder(..., client=qc)"
        ) from err
    return qc, qc.close


def _qdrant_points(source: _Source, b: _Batch):
    """A batch as Qdrant points: id the chunk id (a UUID), the row's fields as payload."""
    from qdrant_client import models

    payloads = [{"chunk_id": cid, "vector_id": vid, **{c: row[c] for c in CHUNK_COLUMNS},
                 "metadata": metadata_value(row["metadata"]),  # an object: Qdrant filters "metadata.lang"
                 "fields_sha256": f, "manifest_sha256": source.manifest_sha256}
                for cid, vid, row, f in zip(b.chunk_ids, b.vector_ids.tolist(), b.rows, b.fields)]
    return models.Batch(ids=list(b.chunk_ids), vectors=b.x.tolist(), payloads=payloads)


def _qdrant(source: _Source, path: Path, client, collection: str, overwrite: bool, hnsw: dict) -> _Writer:
    _client_module("qdrant")
    from qdrant_client import models

    qc, close = _open_qdrant(path, client)
    try:
        if qc.collection_exists(collection):
            n = qc.count(collection, exact=True).count
            if n and not overwrite:
                raise _refuse("qdrant", collection, path, n, "points",
                              getattr(qc.get_collection(collection).config, "metadata", None), source.manifest_sha256)
            qc.delete_collection(collection)
        distance = models.Distance.COSINE if source.distance == "cosine" else models.Distance.DOT
        qc.create_collection(collection, vectors_config=models.VectorParams(size=source.out_dim, distance=distance),
                             metadata=source.metadata())
    except BaseException:
        close()
        raise

    def write(b: _Batch) -> None:
        qc.upsert(collection, points=_qdrant_points(source, b), wait=True)

    return _Writer(write, lambda: qc.delete_collection(collection), close)


def _qdrant_target(source: _Source, path: Path, client, collection: str, page: int) -> _SyncTarget | None:
    _client_module("qdrant")
    from qdrant_client import models

    qc, close = _open_qdrant(path, client)
    if not qc.collection_exists(collection):
        close()
        return None
    meta = getattr(qc.get_collection(collection).config, "metadata", None) or {}

    def held():
        offset = None
        while True:
            points, offset = qc.scroll(collection, limit=page, offset=offset, with_payload=list(_HELD),
                                       with_vectors=False)
            for p in points:
                yield str(p.id), {k: (p.payload or {}).get(k) for k in _HELD}
            if offset is None:
                return

    def write(b: _Batch, _held: set) -> None:
        qc.upsert(collection, points=_qdrant_points(source, b), wait=True)  # a point of that id is replaced whole

    def renumber(ids: list, positions: list, manifest_sha256: str) -> None:
        qc.batch_update_points(collection, update_operations=[models.SetPayloadOperation(
            set_payload=models.SetPayload(payload={**pos, "manifest_sha256": manifest_sha256}, points=[i]))
            for i, pos in zip(ids, positions)], wait=True)

    def delete(ids: list) -> None:
        qc.delete(collection, points_selector=models.PointIdsList(points=list(ids)), wait=True)

    def set_metadata(m: dict) -> None:  # Qdrant merges the keys given: an old key not in ``m`` is set to None (gone)
        old = getattr(qc.get_collection(collection).config, "metadata", None) or {}
        qc.update_collection(collection, metadata={**{k: None for k in old if k not in m}, **m})

    return _SyncTarget({str(k): v for k, v in meta.items()}, held, write, renumber, delete, set_metadata, close)
