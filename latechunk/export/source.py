"""The output folder an export reads (:class:`_Source`): checked whole before anything is written, then read
one shard at a time as :class:`_Batch` es of rows, each under its chunk id.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from latechunk.export.common import COLLECTION_KEYS, ID_SCHEME, _fields_sha256
from latechunk.ingest.files import sha256_file
from latechunk.ingest.shards import check_shard_files
from latechunk.output import CHUNK_COLUMNS, OutputFolder
from latechunk.provenance import CHUNK_ID_NAMESPACE, chunk_id_of_row, vectors_key


@dataclass(frozen=True)
class _Shard:
    name: str
    rows: int
    start: int  # vector id of its first row
    documents: tuple  # ((doc_id, chunks, text sha256), ...) of its record, in row order


@dataclass
class _Batch:
    """Rows of the folder, in vector id order: ``vector_ids`` (n,) int64, ``x`` (n, out_dim) float32, ``rb`` the
    pyarrow RecordBatch of :data:`CHUNK_COLUMNS`, ``chunk_ids`` and ``fields`` (:func:`_fields_sha256`) lists of
    n str, ``rows`` the record batch as n dicts."""

    vector_ids: np.ndarray
    x: np.ndarray
    rb: object
    chunk_ids: list
    fields: list
    rows: list

    def take(self, keep: list[int]) -> _Batch:
        """The rows at these positions."""
        return _Batch(self.vector_ids[keep], self.x[keep], self.rb.take(keep), [self.chunk_ids[i] for i in keep],
                      [self.fields[i] for i in keep], [self.rows[i] for i in keep])


class _Source:
    """A complete output folder, checked before anything is written: its manifest, and every shard's record,
    data files (sizes, not hashes: that is ``latechunk verify``), row counts and vector shapes."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = OutputFolder(Path(folder))
        path = self.folder.path
        if not path.is_dir():
            raise ValueError(f"{path} is not a folder (export reads a folder written by `latechunk embed`)")
        manifest = self.folder.read_manifest()  # missing: "unfinished run? ... --resume"
        self.manifest = manifest
        self.manifest_sha256 = sha256_file(self.folder.manifest_path)
        try:
            self.dim = int(manifest["dim"])
            ntotal = int(manifest["index"]["ntotal"])
            records = list(manifest["shards"])
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"{self.folder.manifest_path} lacks {err} (not written by `latechunk embed`?)") from err
        problems: list[str] = []
        self.shards: list[_Shard] = []
        start = 0
        for s in records:
            name = s.get("name") if isinstance(s, dict) else None
            if not isinstance(name, str):
                problems.append(f"the manifest lists a shard without a name: {s!r}")
                continue
            try:
                rec = self.folder.read_json(self.folder.shards_dir / f"{name}.json")
                bad = check_shard_files(self.folder.shards_dir, rec, verify_hashes=False)
            except (ValueError, KeyError) as err:
                problems.append(f"shards/{name}: {err}")
                continue
            if bad:
                problems.extend(bad)
                continue
            rows = int(rec.get("rows", -1))
            problems.extend(self._check_readable(name, rows))
            docs = tuple((str(d.get("doc_id")), int(d.get("chunks", 0)), str(d.get("sha256") or ""))
                         for d in rec.get("documents") or [])
            if not bad and sum(n for _, n, _ in docs) != rows:
                problems.append(f"shards/{name}.json lists documents of {sum(n for _, n, _ in docs)} chunks but "
                                f"{rows} rows")
            self.shards.append(_Shard(name, rows, start, docs))
            start += max(rows, 0)
        if not problems and start != ntotal:
            problems.append(f"the shards hold {start} rows but the manifest's index holds {ntotal} vectors")
        if problems:
            shown = "; ".join(problems[:5]) + (f"; ... {len(problems) - 5} more" if len(problems) > 5 else "")
            raise ValueError(f"{path} is incomplete or damaged, nothing exported: {shown} "
                             f"(run `latechunk verify {path}`)")
        self.rows = start
        self.normalize = bool(manifest.get("normalize", True))
        self.distance = "cosine" if self.normalize else "dot"
        # --truncate-dim (Matryoshka): the store holds the vectors as index.faiss does before quantisation
        self.truncate_dim = manifest["index"].get("truncate_dim") if isinstance(manifest["index"], dict) else None
        self.out_dim = int(self.truncate_dim) if self.truncate_dim else self.dim
        self.vectors_key = vectors_key(manifest, self.folder.recorded_settings(manifest) or None)

    def _check_readable(self, name: str, rows: int) -> list[str]:
        import pyarrow.parquet as pq

        try:
            n_table = pq.ParquetFile(self.folder.shards_dir / f"{name}.parquet").metadata.num_rows
            v = self.folder.read_shard_vectors(name)
        except Exception as err:  # noqa: BLE001  (pyarrow and numpy raise several types on a damaged file)
            return [f"shards/{name} is unreadable: {type(err).__name__}: {err}"]
        out = []
        if n_table != rows:
            out.append(f"shards/{name}.parquet has {n_table} rows, its record says {rows}")
        if v.ndim != 2 or v.shape != (rows, self.dim) or v.dtype != np.float32:
            out.append(f"shards/{name}.npy has shape {v.shape} {v.dtype}, expected ({rows}, {self.dim}) float32")
        return out

    def _transform(self, x) -> np.ndarray:
        """(n, dim) shard rows -> (n, out_dim) float32 as the index holds them (``query_transform``)."""
        if not self.truncate_dim:
            return np.array(x, dtype=np.float32, order="C")
        from latechunk.config import IndexConfig
        from latechunk.index import query_transform

        return query_transform(x, IndexConfig.from_dict(self.manifest["index"]))

    def metadata(self) -> dict[str, str]:
        """The collection-level record (:data:`COLLECTION_KEYS`), every value a str: a plain string (hashes,
        model, mode, distance, the query prompt put before each query, the model's pooling) or JSON text
        (``latechunk.strategy``: the manifest's strategy object, keys sorted; ``latechunk.normalize``:
        ``true``/``false``; ``latechunk.dim``, ``latechunk.rows``: integers; ``latechunk.truncate_dim``: an integer
        or ``null``): what a reader holding only the store needs to embed a query as the chunks were (prompt,
        model, normalised, cut to ``truncate_dim`` and normalised again); ``latechunk.ids`` (:data:`ID_SCHEME`);
        ``latechunk.sync``: empty, or while a ``--sync`` runs the manifest hash of its folder, its start time and
        the folder's path (left so by a killed sync)."""
        model = self.manifest.get("model") or {}
        strategy = self.manifest.get("strategy")
        strategy = json.dumps(strategy, sort_keys=True, ensure_ascii=False) if isinstance(strategy, dict) \
            else str(strategy or "")
        values = (self.manifest_sha256, model.get("name") or "", model.get("sha256") or "", strategy,
                  self.manifest.get("mode") or "", json.dumps(self.normalize), self.distance, str(self.out_dim),
                  str(self.rows), model.get("query_prompt") or "", model.get("pooling") or "",
                  json.dumps((self.manifest.get("index") or {}).get("truncate_dim")), ID_SCHEME, "")
        return {k: str(v) for k, v in zip(COLLECTION_KEYS, values)}

    def batches(self, batch_size: int, with_vectors: bool = True) -> Iterator[_Batch]:
        """The folder's rows as :class:`_Batch` es, in vector id order, one shard at a time, at most
        ``batch_size`` rows each (``with_vectors=False``: ``x`` is (n, 0), the vectors are not read). Every row gets its :func:`chunk_id`; an id seen before in this folder (the same
        document under one id twice, added by ``Index.add``) is made unique by its occurrence number.

        Raises:
            ValueError: if a shard's rows are not the documents its record lists, in order (a damaged folder).
        """
        seen: set[str] = set()
        for shard in self.shards:
            vectors = self.folder.read_shard_vectors(shard.name)  # memory map
            doc_of_row = [d for d in shard.documents for _ in range(d[1])]
            offset = 0
            for rb in self.folder.iter_chunk_batches(self.folder.shards_dir / f"{shard.name}.parquet",
                                                     columns=CHUNK_COLUMNS, batch_size=batch_size):
                n = rb.num_rows
                rows = rb.to_pylist()
                ids = []
                for r, row in enumerate(rows):
                    doc_id, _, sha = doc_of_row[offset + r]
                    if row["doc_id"] != doc_id:
                        raise ValueError(f"{self.folder.path}: shards/{shard.name} row {offset + r} belongs to "
                                         f"{row['doc_id']!r} but its record lists {doc_id!r} there (run `latechunk "
                                         f"verify {self.folder.path}`)")
                    cid = base = chunk_id_of_row(self.vectors_key, row, sha)
                    k = 1
                    while cid in seen:
                        k += 1
                        cid = str(uuid.uuid5(CHUNK_ID_NAMESPACE, f"{base}#{k}"))
                    seen.add(cid)
                    ids.append(cid)
                vids = np.arange(shard.start + offset, shard.start + offset + n, dtype=np.int64)
                x = self._transform(vectors[offset:offset + n]) if with_vectors else np.zeros((n, 0), np.float32)
                yield _Batch(vids, x, rb, ids, [_fields_sha256(row) for row in rows], rows)
                offset += n
