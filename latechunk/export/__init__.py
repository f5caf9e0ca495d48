"""Export an ``embed`` output folder to a vector store: LanceDB, Qdrant or Chroma, each in its embedded/local mode.

``latechunk export DIR --to lancedb:PATH | qdrant:PATH | chroma:PATH`` (and :func:`export_folder`) reads the
folder's shards one at a time, in batches of ``batch_size`` rows (the shard's parquet in record batches, its
``.npy`` memory-mapped), so memory stays flat in the corpus size; the assembled ``chunks.parquet`` and
``index.faiss`` are never read. Each row of the folder is one row of the store, under its **chunk id**
(:func:`chunk_id`: a UUID of the model and settings, the document's id and text hash, and the chunk's spans, so
the same chunk has the same id in every folder rebuilt from the same documents), with its vector id (row i of
``chunks.parquet``) among its fields. ``--sync`` (``sync=True``) brings a collection exported earlier up to date
with a rebuilt folder in place, by chunk id (:func:`export_folder`):

- **LanceDB** (``lancedb.connect(PATH)``): a table with a ``vector`` column (fixed-size list of float32) and
  the fields below as columns. No ANN index is built, so a search is exact (flat); LanceDB takes the metric at
  query time: ``table.search(q).distance_type(distance)``, with ``distance`` in the table's schema metadata
  (``latechunk.distance``: ``cosine`` or ``dot``).
- **Qdrant** (``QdrantClient(path=PATH)``, local mode, exact search): a collection of points whose id is the
  chunk id (a UUID), ``Distance.COSINE`` or ``Distance.DOT``, the fields below as payload.
- **Chroma** (``chromadb.PersistentClient(PATH)``): a collection with the chunk ids as ids, the chunk text as
  its documents and the other fields as metadata; HNSW space ``cosine`` or ``ip``, and HNSW settings sized to the
  collection (:func:`chroma_hnsw`: Chroma's own defaults, ``max_neighbors`` 16 and ``ef_search`` 100, missed
  FAISS's top hit of the README's credit-card question on the 1,468 vectors of Chroma's corpora). Chroma refuses
  an empty list as a metadata value, so ``heading_path`` is left out of a chunk's metadata when the chunk has none.

Each row carries :data:`FIELDS`: ``chunk_id``, ``vector_id``, ``doc_id``, ``chunk_index``, the char span
``char_start``, ``char_end`` (characters, half-open) and token span ``token_start``, ``token_end`` (tokens), ``heading_path``
(list of str), ``strategy`` (canonical SPEC), ``text``, the citation metadata of
:data:`latechunk.output.SOURCE_COLUMNS` (``title``, ``title_from``, ``section``, ``header``, ``source``, ``url``,
``metadata``; a folder written before them exports them filled as :func:`latechunk.output.fill_source_columns`
reads them; Chroma leaves a None value, such as a missing ``url``, out of the chunk's metadata),
``fields_sha256`` (the sha256 of the chunk-table fields, JSON: how ``--sync`` sees a row whose url, title or
metadata changed) and ``manifest_sha256``: the sha256 of the folder's
``manifest.json`` file (its bytes), which names the exact run (model and weight hash, settings, documents) the
row came from; ``latechunk embed --append``/``Index.add`` rewrite the manifest, so rows exported before and after
an append carry different hashes. The collection itself records the same hash, the model, the strategy and the
distance (LanceDB: schema metadata; Qdrant and Chroma: collection metadata, keys :data:`COLLECTION_KEYS`).

``metadata`` (the record fields ``embed --metadata-fields`` kept) is the chunk table's JSON text in LanceDB, an
object in Qdrant's payload (filter on ``metadata.lang``), and in Chroma the JSON text plus each scalar field as
its own ``metadata.FIELD`` key (Chroma's metadata is flat; ``where={"metadata.lang": "en"}``).

The distance follows how the vectors were made (the manifest's ``normalize``): L2-normalised vectors are
exported for cosine similarity (equal to their inner product, which FAISS ranks by), vectors left unnormalised
(``--no-normalize``) for the inner product, so every store ranks as ``index.faiss`` does. The vectors are the
shards' float32 ones as the index holds them before quantisation (``--precision`` is the FAISS index's own): after
``--truncate-dim N`` their first N dimensions, renormalised as the index's (:func:`latechunk.index.query_transform`).

Tests: ``tests/test_export.py``, ``tests/test_export_sync.py`` (chunk ids, ``--sync``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from latechunk.ingest.files import sha256_file
from latechunk.ingest.shards import check_shard_files
from latechunk.output import CHUNK_COLUMNS, OutputFolder, metadata_value
from latechunk.provenance import CHUNK_ID_NAMESPACE, chunk_id, chunk_id_of_row, vectors_key

__all__ = [
    "CHUNK_ID_NAMESPACE",
    "COLLECTION_KEYS",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_COLLECTION",
    "DEFAULT_HNSW",
    "FIELDS",
    "STORES",
    "ID_SCHEME",
    "ExportResult",
    "chroma_hnsw",
    "chunk_id",
    "export_folder",
    "parse_target",
    "vectors_key",
    "to_chroma",
    "to_lancedb",
    "to_qdrant",
]

#: the stores ``--to`` takes, each with (the module its client lives in, the pip extra that installs it)
STORES = {"lancedb": ("lancedb", "lancedb"), "qdrant": ("qdrant_client", "qdrant"), "chroma": ("chromadb", "chroma")}
DEFAULT_COLLECTION = "latechunk"
DEFAULT_BATCH_SIZE = 1024
#: the fields of every exported row, in order (Chroma keeps ``text`` as the collection's documents)
FIELDS = ("chunk_id", "vector_id", *CHUNK_COLUMNS, "fields_sha256", "manifest_sha256")
#: what the collection records about its source (LanceDB: schema metadata; Qdrant, Chroma: collection metadata)
COLLECTION_KEYS = ("latechunk.manifest_sha256", "latechunk.model", "latechunk.model_sha256", "latechunk.strategy",
                   "latechunk.mode", "latechunk.normalize", "latechunk.distance", "latechunk.dim", "latechunk.rows",
                   "latechunk.query_prompt", "latechunk.pooling", "latechunk.truncate_dim", "latechunk.ids",
                   "latechunk.sync")
#: the ids of exported rows (collection key ``latechunk.ids``): :func:`chunk_id`, version 1. A collection without
#: it was exported when a row's id was its vector id, which ``--sync`` cannot follow.
ID_SCHEME = "chunk_id/1"
#: collection keys that say which vector space a collection's vectors live in: ``--sync`` refuses a collection
#: whose values differ (while it runs, readers would see vectors of two spaces side by side)
_SPACE_KEYS = ("latechunk.model_sha256", "latechunk.normalize", "latechunk.distance", "latechunk.dim",
               "latechunk.query_prompt", "latechunk.pooling", "latechunk.truncate_dim")
#: Chroma HNSW settings of an export (:func:`chroma_hnsw`): ``max_neighbors`` (HNSW's M) and ``ef_construction``
#: fixed, ``ef_search`` the collection size clamped to [``ef_search_min``, ``ef_search_max``]
DEFAULT_HNSW = {"max_neighbors": 32, "ef_construction": 256, "ef_search_min": 128, "ef_search_max": 1024}
#: a collection name every store accepts (Chroma's rules are the strictest: 3-512 characters, [a-zA-Z0-9._-],
#: starting and ending with a letter or digit)
_COLLECTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]")


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote.

    Attributes:
        store: ``lancedb``, ``qdrant`` or ``chroma``.
        path: The store's folder.
        collection: The table (LanceDB) or collection (Qdrant, Chroma) name.
        rows: Rows written (= vectors of the output folder; one row per vector, under its chunk id).
        dim: Vector dimension.
        distance: ``cosine`` (normalised vectors) or ``dot`` (inner product, ``--no-normalize``).
        manifest_sha256: sha256 of the output folder's ``manifest.json`` (carried by every row).
        seconds: Wall seconds of the export.
        hnsw: Chroma: the collection's HNSW settings (``max_neighbors``, ``ef_construction``, ``ef_search``, and
            any others given; after a sync, the collection's own, ``ef_search`` resized); ``None`` for LanceDB and
            Qdrant (exact search).
        sync: After ``sync=True`` (``--sync``): rows ``added`` (chunk ids new to the collection), ``rewritten``
            (ids it held with other fields), ``renumbered`` (ids it held with another vector id: a document
            added or removed before them; only ``vector_id`` and ``manifest_sha256`` are set), ``deleted`` (ids
            it held that the folder does not) and ``unchanged``; ``None`` after a plain export (also a sync into a
            collection that did not exist, which is one).
    """

    store: str
    path: Path
    collection: str
    rows: int
    dim: int
    distance: str
    manifest_sha256: str
    seconds: float
    hnsw: dict | None = None
    sync: dict | None = None


#: the fields that say where a row is, not what it is: its row in the folder (``vector_id``) and its record's
#: place in its input (``source``: a JSONL record's ``file:line``); ``--sync`` sets them on a row that only moved
_POSITION_FIELDS = ("vector_id", "source")


def _fields_sha256(row: Mapping) -> str:
    """sha256 of a row's chunk-table fields (:data:`CHUNK_COLUMNS` but ``source``, JSON): ``--sync`` rewrites a row
    whose id it holds when these differ (today's url, title or metadata of an unchanged document)."""
    text = json.dumps([row[c] for c in CHUNK_COLUMNS if c not in _POSITION_FIELDS], ensure_ascii=False,
                      separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


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


def parse_target(target: str) -> tuple[str, Path]:
    """``STORE:PATH`` split and checked.

    Args:
        target: ``lancedb:PATH``, ``qdrant:PATH`` or ``chroma:PATH`` (PATH: a local folder, made if missing).

    Returns:
        ``(store, path)``.

    Raises:
        ValueError: on a missing ``:``, an unknown store or an empty path (the message lists the stores).
    """
    store, sep, path = str(target).partition(":")
    store = store.strip().lower()
    forms = " | ".join(f"{s}:PATH" for s in STORES)
    if not sep:
        raise ValueError(f"export target {target!r} is not STORE:PATH ({forms})")
    if store not in STORES:
        raise ValueError(f"unknown vector store {store!r} in {target!r}; known: {', '.join(STORES)} ({forms})")
    if not path.strip():
        raise ValueError(f"export target {target!r} has no path ({store}:PATH, a local folder)")
    return store, Path(path)


def _client_module(store: str):
    """The store's client module, or an ImportError naming the extra to install."""
    import importlib

    module, extra = STORES[store]
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(f"exporting to {store} needs the {module} package: pip install 'latechunk[{extra}]' "
                          f"({err})") from err


# ---------------------------------------------------------------------------------------------------- the source
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


# ---------------------------------------------------------------------------------------------------- the stores
def _refuse(store: str, collection: str, path: Path, n: int, what: str, metadata=None,
            this_sha256: str = "") -> ValueError:
    """The error for a collection that holds rows already; one whose metadata records more rows than it holds
    (``latechunk.rows``) is named incomplete (an export killed part way cannot drop what it made)."""
    kind = "table" if store == "lancedb" else "collection"
    meta = {(k.decode() if isinstance(k, bytes) else str(k)): (v.decode() if isinstance(v, bytes) else v)
            for k, v in (metadata or {}).items()}
    try:
        want = int(meta.get("latechunk.rows", ""))
    except (TypeError, ValueError):
        want = None
    if meta.get("latechunk.sync"):
        sha, _, rest = str(meta["latechunk.sync"]).partition(" ")
        started, _, folder = rest.partition(" ")
        same = " (this folder)" if sha == this_sha256 else ""
        return ValueError(f"{store} {kind} {collection!r} in {path} holds {n} {what} left by a --sync that did not "
                          f"finish: from {folder or 'a folder'}{same} (manifest sha256 {sha[:12]}), started "
                          f"{started}; pass --sync to bring it up to date with this folder (running that sync "
                          "again finishes it), or --overwrite (overwrite=True) to replace it")
    if meta and "latechunk.ids" not in meta and store != "lancedb":
        return ValueError(f"{store} {kind} {collection!r} in {path} already holds {n} {what}, exported by an earlier "
                          "latechunk (its row ids are vector ids, which --sync cannot follow): pass --overwrite "
                          "(overwrite=True) to export it again with chunk ids (then --sync keeps it up to date), "
                          "or choose another --collection")
    if want is not None and n < want:
        return ValueError(f"{store} {kind} {collection!r} in {path} is incomplete: it holds {n} of the {want} {what} "
                          "its export recorded (an export or sync that was killed part way); pass --sync "
                          "(sync=True) to finish it" + (", " if store != "lancedb" else " (qdrant, chroma), ")
                          + "--overwrite (overwrite=True) to export it again, or choose another --collection")
    return ValueError(f"{store} {kind} {collection!r} in {path} already holds {n} {what}; pass "
                      + ("" if store == "lancedb" else "--sync (sync=True) to bring it up to date with this folder, ")
                      + "--overwrite (overwrite=True) to replace it, or choose another --collection")


@dataclass
class _Writer:
    """One store's collection, made: ``write(batch)`` adds a :class:`_Batch`, ``drop()`` removes the collection
    (after a failure), ``close()`` releases what the export opened."""

    write: Callable[[_Batch], None]
    drop: Callable[[], None]
    close: Callable[[], None] = lambda: None


def _lancedb_schema(source: _Source):
    import pyarrow as pa

    from latechunk.output import chunk_schema

    return pa.schema([pa.field("chunk_id", pa.string()), pa.field("vector_id", pa.int64()),
                      pa.field("vector", pa.list_(pa.float32(), source.out_dim)), *chunk_schema(),
                      pa.field("fields_sha256", pa.string()), pa.field("manifest_sha256", pa.string())],
                     metadata=source.metadata())


def _lancedb(source: _Source, path: Path, client, collection: str, overwrite: bool, hnsw: dict) -> _Writer:
    import pyarrow as pa

    lancedb = _client_module("lancedb")
    db = client if client is not None else lancedb.connect(str(path))
    if collection in db.list_tables().tables:
        existing = db.open_table(collection)
        n = existing.count_rows()
        if n and not overwrite:
            raise _refuse("lancedb", collection, path, n, "rows", existing.schema.metadata, source.manifest_sha256)
        db.drop_table(collection)
    schema = _lancedb_schema(source)
    table = db.create_table(collection, schema=schema)

    def write(b: _Batch) -> None:
        n = len(b.chunk_ids)
        cols = {"chunk_id": pa.array(b.chunk_ids, pa.string()), "vector_id": pa.array(b.vector_ids),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(b.x.ravel()), source.out_dim),
                **{c: b.rb.column(c) for c in CHUNK_COLUMNS},
                "fields_sha256": pa.array(b.fields, pa.string()),
                "manifest_sha256": pa.array([source.manifest_sha256] * n, pa.string())}
        table.add(pa.Table.from_pydict(cols, schema=schema))

    return _Writer(write, lambda: db.drop_table(collection, ignore_missing=True))


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


_WRITERS = {"lancedb": _lancedb, "qdrant": _qdrant, "chroma": _chroma}


# ---------------------------------------------------------------------------------------------------- --sync
@dataclass
class _SyncTarget:
    """An existing collection that ``--sync`` brings up to date: ``metadata`` (str keys), ``held()`` yields
    ``(chunk id, {"vector_id", "source", "fields_sha256", "doc_id"})`` of every row it holds, ``write(batch,
    held)`` writes rows whole (those whose ids are in ``held`` replace the rows of those ids in place: never
    missing meanwhile), ``renumber(ids, positions, manifest_sha256)`` sets :data:`_POSITION_FIELDS` (one dict per
    id) and the hash on rows it holds (payload only: the vectors stay), ``delete(ids)``, ``set_metadata(meta)``
    (the whole record), ``hnsw()`` (Chroma: the collection's HNSW settings, else None), ``set_ef_search(n)``,
    ``close()``."""

    metadata: dict
    held: Callable[[], Iterator[tuple[str, dict]]]
    write: Callable[[_Batch, set], None]
    renumber: Callable[[list, list, str], None]
    delete: Callable[[list], None]
    set_metadata: Callable[[dict], None]
    close: Callable[[], None]
    hnsw: Callable[[], dict | None] = lambda: None
    set_ef_search: Callable[[int], None] = lambda n: None


_HELD = ("vector_id", "source", "fields_sha256", "doc_id")


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


_SYNC_TARGETS = {"qdrant": _qdrant_target, "chroma": _chroma_target}


def _sync(source: _Source, store: str, path: Path, client, collection: str, settings, progress: bool,
          batch_size: int, hnsw: Mapping | None = None) -> tuple[dict | None, bool, dict | None]:
    """Bring an existing collection up to date with ``source`` (:func:`export_folder`'s ``sync=True``, under its
    lock); a collection that does not exist yet is exported plainly. Returns the counts of
    :attr:`ExportResult.sync` (None: the collection was made), whether the collection was made, and Chroma's HNSW
    settings afterwards (None for Qdrant)."""
    from tqdm.auto import tqdm

    target = _SYNC_TARGETS[store](source, path, client, collection, batch_size)
    if target is None:
        _write(source, store, path, client, collection, False, settings, progress, batch_size)
        return None, True, settings
    kind = "collection"
    try:
        meta = target.metadata
        if meta.get("latechunk.ids") != ID_SCHEME:
            raise ValueError(
                f"{store} {kind} {collection!r} in {path} was not exported with chunk ids"
                + (f" ({meta['latechunk.ids']})" if meta.get("latechunk.ids") else
                   " (an export of an earlier latechunk: its row ids are vector ids, which name other chunks in "
                   "another folder)")
                + ", so --sync cannot tell its rows apart: export it once with --overwrite (or into a new "
                "--collection), then --sync keeps it up to date")
        ours = source.metadata()
        differ = [f"{k.removeprefix('latechunk.')} {meta.get(k)!r} there, {ours[k]!r} here" for k in _SPACE_KEYS
                  if str(meta.get(k)) != ours[k]]
        if differ:
            raise ValueError(f"{store} {kind} {collection!r} in {path} holds vectors of another vector space ("
                             + "; ".join(differ) + "): a sync would leave both side by side while it runs; "
                             "export into a new --collection (or --overwrite) instead")
        hnsw_now = _sync_hnsw(target, store, collection, path, source.rows, hnsw)  # refuses before any write
        held = dict(target.held())
        if held:  # a sync that keeps no row is a replacement (another corpus, or every document changed)
            ours = {cid for b in source.batches(batch_size, with_vectors=False) for cid in b.chunk_ids}
            if not ours & held.keys():
                docs = len({h["doc_id"] for h in held.values()})
                raise ValueError(f"{store} {kind} {collection!r} in {path}: none of its {len(held)} rows ({docs} "
                                 f"documents) is a chunk of {source.folder.path} (another corpus, or every document "
                                 "changed): --sync would replace them all, and readers would see the two mixed "
                                 "meanwhile; export into a new --collection, or --overwrite to replace it")
        # while it runs (and if it is killed) the record says so: the next export names the unfinished sync
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        target.set_metadata({**meta, "latechunk.sync": f"{source.manifest_sha256} {started} {source.folder.path}"})
        counts = {"added": 0, "rewritten": 0, "renumbered": 0, "deleted": 0, "unchanged": 0}
        seen: set[str] = set()
        with tqdm(total=source.rows, unit="vec", desc=f"sync {store}", disable=not progress) as bar:
            for b in source.batches(batch_size):
                keep, moved = [], []
                for i, cid in enumerate(b.chunk_ids):
                    seen.add(cid)
                    h = held.get(cid)
                    if h is None:
                        counts["added"] += 1
                        keep.append(i)
                    elif h["fields_sha256"] != b.fields[i]:
                        counts["rewritten"] += 1
                        keep.append(i)
                    elif (h["vector_id"], h["source"]) != (int(b.vector_ids[i]), b.rows[i]["source"]):
                        counts["renumbered"] += 1  # the same row at another place in the folder or its input
                        moved.append(i)
                    else:
                        counts["unchanged"] += 1
                if keep:
                    target.write(b.take(keep), held.keys())
                if moved:
                    target.renumber([b.chunk_ids[i] for i in moved],
                                    [{"vector_id": int(b.vector_ids[i]), "source": b.rows[i]["source"]} for i in moved],
                                    source.manifest_sha256)
                bar.update(len(b.chunk_ids))
        stale = [cid for cid in held if cid not in seen]
        for a in range(0, len(stale), batch_size):  # last: a chunk that is in both is never missing meanwhile
            target.delete(stale[a:a + batch_size])
        counts["deleted"] = len(stale)
        target.set_metadata(source.metadata())  # latechunk.sync back to ""
        if hnsw_now is not None:
            try:
                before = int(meta.get("latechunk.rows", ""))
            except ValueError:
                before = 0
            hnsw_now = _sync_hnsw(target, store, collection, path, source.rows, hnsw, grew=source.rows > before)
    finally:
        target.close()
    return counts, False, hnsw_now


def _sync_hnsw(target: _SyncTarget, store: str, collection: str, path: Path, rows: int, given: Mapping | None,
               grew: bool | None = None) -> dict | None:
    """A synced Chroma collection's HNSW settings: ``max_neighbors`` and ``ef_construction`` given must be the
    collection's (they are fixed when it is made); after the sync (``grew`` not None), ``ef_search`` is set to the
    one given, or, when the collection grew, raised to :func:`chroma_hnsw`'s size for ``rows`` if below it (never
    lowered: an ``ef_search`` set by hand stays until the collection grows). Returns the settings (None: not
    Chroma)."""
    now = target.hnsw()
    if now is None:
        return None
    given = dict(given or {})
    fixed = [f"{k} {now.get(k)} there, {given[k]} given" for k in ("max_neighbors", "ef_construction")
             if given.get(k) is not None and given[k] != now.get(k)]
    if fixed:
        raise ValueError(f"{store} collection {collection!r} in {path} was made with other HNSW settings ("
                         + "; ".join(fixed) + "): they are fixed when a collection is made, so --sync keeps them "
                         "(leave out --hnsw-m/--hnsw-ef-construction, or export into a new --collection)")
    if grew is not None:
        have = int(now.get("ef_search") or 0)
        want = given.get("ef_search") or (max(have, chroma_hnsw(rows)["ef_search"]) if grew else have)
        if want != now.get("ef_search"):
            target.set_ef_search(want)
            now = target.hnsw()
    return now


def export_folder(folder: str | os.PathLike, target: str, *, collection: str = DEFAULT_COLLECTION,
                  batch_size: int = DEFAULT_BATCH_SIZE, overwrite: bool = False, progress: bool = False,
                  client=None, hnsw: Mapping | None = None, sync: bool = False) -> ExportResult:
    """Export an ``embed`` output folder to a vector store, streaming its shards (``latechunk export``).

    Everything is checked before the store is touched: the folder is complete (its manifest, and each shard's
    record, data file sizes, rows and vector shapes), the target and the collection name are valid and the store's
    client is installed, and the collection is new or empty (or ``overwrite``, or ``sync``). An export that fails
    part way drops the collection it made. Each row of the store is one vector under its :func:`chunk_id` (module
    docstring: the fields, the distance).

    Args:
        folder: A folder written by ``latechunk embed`` (or grown by ``Index.add``).
        target: ``lancedb:PATH``, ``qdrant:PATH`` or ``chroma:PATH``; PATH is the store's local folder (made if
            missing), opened with ``lancedb.connect``, ``QdrantClient(path=...)`` or ``chromadb.PersistentClient``.
        collection: The table (LanceDB) or collection name: 3-512 characters of ``[A-Za-z0-9._-]``, starting and
            ending with a letter or digit.
        batch_size: Rows read and written per batch (Chroma: one add takes at most its client's
            ``get_max_batch_size()``).
        overwrite: Replace a collection of that name that already holds rows (else that is an error).
        progress: Show a progress bar (rows).
        client: An open client of that store to use instead of opening PATH (a ``lancedb`` connection, a
            ``QdrantClient`` or a Chroma client); it is left open, and PATH is then only the name the result
            carries (the client's own folder or server is written). Local Qdrant allows one client per folder,
            so a process that holds one passes it here.
        hnsw: Chroma only: settings of its HNSW index that win over :func:`chroma_hnsw`'s (``max_neighbors`` 32,
            ``ef_construction`` 256, ``ef_search`` the row count clamped to [128, 1024]); the collection's
            ``configuration["hnsw"]`` (``space`` is always set from the distance). Chroma's search is
            approximate; over inner product with unnormalised vectors it can miss a vector even with a large
            ``ef_search``, and ``max_neighbors`` of at least half the collection size makes it exhaustive on a
            small collection. None: the sized defaults.
        sync: Bring an existing collection up to date with the folder instead of refusing it (``--sync``;
            Qdrant and Chroma): rows are matched by :func:`chunk_id`; a chunk the collection lacks is added, one
            it holds with other fields (:data:`CHUNK_COLUMNS`, by ``fields_sha256``) is rewritten whole, one it
            holds under another vector id gets the new ``vector_id`` and ``manifest_sha256`` (payload only; its
            vector stays), one the folder lacks is deleted (after the writes, so a chunk in both is never missing
            meanwhile), the rest is not touched (its ``manifest_sha256`` stays the one of the export that wrote
            it); then the collection's record is the folder's. Readers keep searching meanwhile. A sync that is killed leaves
            the collection between the two folders, and running it again finishes it (it also finishes a killed
            export). A collection that does not exist is exported plainly. Refused: a collection exported
            before chunk ids, one whose vectors are of another space (:data:`_SPACE_KEYS`: model weights,
            normalisation, distance, dimension, query prompt, pooling, ``truncate_dim``), ``overwrite`` or
            ``hnsw`` with it, and LanceDB.

    Returns:
        The :class:`ExportResult`.

    Raises:
        ValueError: on an unknown store or bad target, a bad collection name, ``batch_size`` or ``hnsw`` value, an
            incomplete or damaged folder, a non-empty collection without ``overwrite`` or ``sync``, a refused
            ``sync`` (above), a ``client`` of another store, a store folder that holds
            another store's files or a latechunk output folder, or a local Qdrant folder that another client
            holds open (each message names the value).
        ImportError: if the store's client is not installed (the message names the extra:
            ``pip install 'latechunk[lancedb]'``).
    """
    t0 = time.perf_counter()
    store, path = parse_target(target)
    if not isinstance(collection, str) or not _COLLECTION_NAME.fullmatch(collection):
        raise ValueError(f"collection name {collection!r} is not 3-512 characters of letters, digits, '.', '_' and "
                         "'-' starting and ending with a letter or digit (one rule for every store: Chroma's, the "
                         "strictest)")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size (--batch-size) must be an integer >= 1, got {batch_size!r}")
    if hnsw is not None and store != "chroma":
        raise ValueError(f"hnsw settings are for chroma's index only, not {store} (LanceDB searches exactly "
                         "without an index; Qdrant's local mode is exact)")
    if sync and overwrite:
        raise ValueError("--sync and --overwrite exclude each other: --sync updates the collection in place, "
                         "--overwrite replaces it")
    if sync and store not in _SYNC_TARGETS:
        raise ValueError("--sync (sync=True) is for qdrant and chroma: a LanceDB table keeps its record (manifest "
                         "hash, rows) in its schema, which lancedb cannot change in place; export into a new table "
                         "(--collection NAME_DATE) and point readers at it, or --overwrite")
    source = _Source(folder)
    settings = chroma_hnsw(source.rows, hnsw) if store == "chroma" else None
    _client_module(store)  # a missing extra fails before the store's folder is made
    if client is not None:  # a client of another store failed deep inside with an AttributeError (a trial)
        needs = {"lancedb": ("open_table", "list_tables"), "qdrant": ("upsert", "collection_exists"),
                 "chroma": ("get_or_create_collection", "get_max_batch_size")}[store]
        if not all(hasattr(client, a) for a in needs):
            raise ValueError(f"client= is a {type(client).__module__}.{type(client).__name__}, not a {store} client "
                             f"(the target is {target!r}): pass the {store} store's own client, or none")
    if client is None:
        if path.exists() and not path.is_dir():
            raise ValueError(f"{store} path {path} exists and is not a folder")
        _check_store_folder(path, store)
        path.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        if client is None:  # two exports into one store folder: the second waits (two clients crashed both)
            stack.enter_context(_store_lock(path, store))
        counts = None
        if sync:
            counts, _, settings = _sync(source, store, path, client, collection, settings, progress, batch_size,
                                        hnsw)
        else:
            _write(source, store, path, client, collection, overwrite, settings, progress, batch_size)
    return ExportResult(store=store, path=path, collection=collection, rows=source.rows, dim=source.out_dim,
                        distance=source.distance, manifest_sha256=source.manifest_sha256,
                        seconds=time.perf_counter() - t0, hnsw=settings, sync=counts)


def _store_kinds(path: Path) -> list[tuple[str, str]]:
    """What ``path`` already holds, as ``(kind, evidence)``: another store's files (Chroma's ``chroma.sqlite3``,
    local Qdrant's ``meta.json`` beside ``collection/``, a LanceDB table folder ``NAME.lance``) or a latechunk
    output folder (its run.json or manifest.json)."""
    from latechunk.ingest.folder import _is_latechunk_output

    if not path.is_dir():
        return []
    kinds = []
    if (path / "chroma.sqlite3").is_file():
        kinds.append(("chroma", "chroma.sqlite3"))
    if (path / "meta.json").is_file() and (path / "collection").is_dir():
        kinds.append(("qdrant", "meta.json and collection/"))
    try:
        tables = sorted(p.name for p in path.iterdir() if p.name.endswith(".lance") and p.is_dir())
    except OSError:
        tables = []
    if tables:
        kinds.append(("lancedb", tables[0] + ("" if len(tables) == 1 else f" and {len(tables) - 1} more")))
    if _is_latechunk_output(path):
        kinds.append(("a latechunk output folder", "run.json / manifest.json"))
    return kinds


def _check_store_folder(path: Path, store: str) -> None:
    """Refuse a store folder that holds another store's files, or that is or lies inside a latechunk output
    folder (one store of one kind per folder: a Chroma export into a LanceDB folder mixed the two; a Qdrant
    export into ``OUT/shards`` was taken for an interrupted append's files, and the next append crashed on it)."""
    from latechunk.ingest.folder import _is_latechunk_output

    for above in path.resolve().parents:
        if _is_latechunk_output(above):
            raise ValueError(f"{store} path {path} is inside the latechunk output folder {above}; export into a "
                             "folder of its own, outside it")
    kinds = _store_kinds(path)
    for kind, evidence in kinds:
        if kind != store:
            what = kind if kind.startswith("a ") else f"a {kind} store"
            raise ValueError(f"{store} path {path} holds {what} ({evidence}); export into a folder of its own "
                             f"(a new or empty folder, or one that holds a {store} store)")
    if not kinds and path.is_dir():  # files of the user's, not a store: the store's files would mix with them
        try:
            names = sorted(p.name for p in path.iterdir() if p.name != STORE_LOCK_FILE)
        except OSError as err:
            raise ValueError(f"cannot read the {store} folder {path}: {err.strerror or err}") from err
        own = {"chroma": ("chroma.sqlite3",), "qdrant": ("meta.json",)}.get(store, ())  # a store just opened
        if names and not any(n in own or (store == "lancedb" and n.endswith(".lance")) for n in names):
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            raise ValueError(f"{store} path {path} holds {shown} but no {store} store; export into a folder of "
                             f"its own (a new or empty folder, or one that holds a {store} store)")


#: the lock file in a store's folder that one export at a time holds (``fcntl.flock``; never removed)
STORE_LOCK_FILE = ".latechunk-export.lock"


@contextlib.contextmanager
def _store_lock(path: Path, store: str) -> Iterator[None]:
    """Hold an exclusive ``fcntl.flock`` on ``path/.latechunk-export.lock`` while an export writes the store: a
    second export into the same folder (another collection, or the same one, which it then finds full) waits
    for the first, saying so, instead of two clients corrupting one store (Chroma: "database is locked" and
    "table collections already exists"). Released when the block ends or the process dies."""
    import fcntl

    try:
        fh = open(path / STORE_LOCK_FILE, "a+", encoding="ascii")  # noqa: SIM115 (held across the block)
    except OSError as err:
        raise ValueError(f"cannot write to the {store} folder {path}: {err.strerror or err}") from err
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            pid = fh.read().strip()
            logging.getLogger("latechunk").warning(
                "waiting for another latechunk export into %s%s to finish (one writer per store folder)",
                path, f" (pid {pid})" if pid.isdigit() else "")
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        yield
    finally:
        fh.close()


def _write(source, store: str, path: Path, client, collection: str, overwrite: bool, settings, progress: bool,
           batch_size: int) -> None:
    """Write every row of ``source`` into the store (:func:`export_folder`'s body, under its lock)."""
    from tqdm.auto import tqdm

    writer = _WRITERS[store](source, path, client, collection, overwrite, settings or {})  # refuses a non-empty one
    try:
        with tqdm(total=source.rows, unit="vec", desc=f"export {store}", disable=not progress) as bar:
            for b in source.batches(batch_size):
                writer.write(b)
                bar.update(len(b.chunk_ids))
    except BaseException:
        with contextlib.suppress(Exception):  # the original error is the one to report
            writer.drop()  # an export that fails part way leaves no half-filled collection
        raise
    finally:
        writer.close()


def to_lancedb(folder: str | os.PathLike, path: str | os.PathLike, **kwargs) -> ExportResult:
    """Export to a LanceDB folder: :func:`export_folder` with ``target="lancedb:PATH"``.

    Args:
        folder: The output folder.
        path: The LanceDB folder (``lancedb.connect(path)``).
        **kwargs: ``collection``, ``batch_size``, ``overwrite``, ``progress``, ``client`` (:func:`export_folder`).

    Returns:
        The :class:`ExportResult`.

    Raises:
        ValueError, ImportError: as :func:`export_folder`.
    """
    return export_folder(folder, f"lancedb:{os.fspath(path)}", **kwargs)


def to_qdrant(folder: str | os.PathLike, path: str | os.PathLike, **kwargs) -> ExportResult:
    """Export to a local Qdrant folder: :func:`export_folder` with ``target="qdrant:PATH"``.

    Args:
        folder: The output folder.
        path: The Qdrant folder (``QdrantClient(path=path)``).
        **kwargs: ``collection``, ``batch_size``, ``overwrite``, ``progress``, ``client`` (:func:`export_folder`).

    Returns:
        The :class:`ExportResult`.

    Raises:
        ValueError, ImportError: as :func:`export_folder`.
    """
    return export_folder(folder, f"qdrant:{os.fspath(path)}", **kwargs)


def to_chroma(folder: str | os.PathLike, path: str | os.PathLike, **kwargs) -> ExportResult:
    """Export to a persistent Chroma folder: :func:`export_folder` with ``target="chroma:PATH"``.

    Args:
        folder: The output folder.
        path: The Chroma folder (``chromadb.PersistentClient(path)``).
        **kwargs: ``collection``, ``batch_size``, ``overwrite``, ``progress``, ``client``, ``hnsw``
            (:func:`export_folder`).

    Returns:
        The :class:`ExportResult`.

    Raises:
        ValueError, ImportError: as :func:`export_folder`.
    """
    return export_folder(folder, f"chroma:{os.fspath(path)}", **kwargs)
