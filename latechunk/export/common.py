"""What every part of ``latechunk export`` shares: the stores, the exported fields and collection keys, the
result, the target and the store's client module (:mod:`latechunk.export`'s docstring says what a row holds).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from latechunk.output import CHUNK_COLUMNS

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
#: a collection name every store accepts (Chroma's rules are the strictest: 3-512 characters, [a-zA-Z0-9._-],
#: starting and ending with a letter or digit)
_COLLECTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]")
#: the fields that say where a row is, not what it is: its row in the folder (``vector_id``) and its record's
#: place in its input (``source``: a JSONL record's ``file:line``); ``--sync`` sets them on a row that only moved
_POSITION_FIELDS = ("vector_id", "source")
#: the fields ``--sync`` reads of every row a collection holds (``_SyncTarget.held``)
_HELD = ("vector_id", "source", "fields_sha256", "doc_id")


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


def _fields_sha256(row: Mapping) -> str:
    """sha256 of a row's chunk-table fields (:data:`CHUNK_COLUMNS` but ``source``, JSON): ``--sync`` rewrites a row
    whose id it holds when these differ (today's url, title or metadata of an unchanged document)."""
    text = json.dumps([row[c] for c in CHUNK_COLUMNS if c not in _POSITION_FIELDS], ensure_ascii=False,
                      separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


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
