"""What a store gives the export and ``--sync``: a :class:`_Writer` of a new collection, a :class:`_SyncTarget`
of an existing one, and the error for a collection that holds rows already (:func:`_refuse`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from latechunk.export.source import _Batch


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
