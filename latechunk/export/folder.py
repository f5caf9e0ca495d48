"""``latechunk export``'s entry points: :func:`export_folder` (every check before the store is touched, then a
plain export or ``--sync`` under the store folder's lock) and ``to_lancedb``, ``to_qdrant``, ``to_chroma``.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping

from latechunk.export.chroma import chroma_hnsw
from latechunk.export.common import (
    _COLLECTION_NAME,
    DEFAULT_BATCH_SIZE,
    DEFAULT_COLLECTION,
    ExportResult,
    _client_module,
    parse_target,
)
from latechunk.export.locks import _check_store_folder, _store_lock
from latechunk.export.source import _Source
from latechunk.export.sync import _SYNC_TARGETS, _sync
from latechunk.export.write import _write


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
        progress: Show a progress bar (rows; on stderr when it is a terminal).
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
