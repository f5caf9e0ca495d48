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

Tests: ``tests/export/test_export.py``, ``tests/export/test_export_sync.py`` (chunk ids, ``--sync``).

The package, by concern: ``common.py`` (the stores, fields, collection keys, :class:`ExportResult`,
:func:`parse_target`), ``source.py`` (the folder read as batches of rows), ``store.py`` (what a store gives:
a writer, a sync target), one module per store (``lancedb.py``, ``qdrant.py``, ``chroma.py``), ``write.py``
(a plain export), ``sync.py`` (``--sync``), ``locks.py`` (the store folder's checks and lock) and ``folder.py``
(:func:`export_folder`, ``to_*``). Every public name is importable from
``latechunk.export`` itself (``__all__``).
"""

from latechunk.export.chroma import DEFAULT_HNSW, chroma_hnsw
from latechunk.export.common import (
    COLLECTION_KEYS,
    DEFAULT_BATCH_SIZE,
    DEFAULT_COLLECTION,
    FIELDS,
    ID_SCHEME,
    STORES,
    ExportResult,
    parse_target,
)
from latechunk.export.folder import export_folder, to_chroma, to_lancedb, to_qdrant
from latechunk.export.locks import STORE_LOCK_FILE
from latechunk.provenance import CHUNK_ID_NAMESPACE, chunk_id, vectors_key

__all__ = [
    "CHUNK_ID_NAMESPACE",
    "COLLECTION_KEYS",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_COLLECTION",
    "DEFAULT_HNSW",
    "FIELDS",
    "STORES",
    "ID_SCHEME",
    "STORE_LOCK_FILE",
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
