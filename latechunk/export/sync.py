"""``--sync``: an existing Qdrant or Chroma collection brought up to date with a rebuilt folder in place, by chunk
id (:func:`latechunk.export.export_folder`'s ``sync=True`` says what is added, rewritten, renumbered, deleted).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from pathlib import Path

from latechunk.export.chroma import _chroma_target, chroma_hnsw
from latechunk.export.common import _SPACE_KEYS, ID_SCHEME
from latechunk.export.qdrant import _qdrant_target
from latechunk.export.source import _Source
from latechunk.export.store import _SyncTarget
from latechunk.export.write import _write

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
        # on stderr when it is a terminal only (disable=None), and only when asked
        with tqdm(total=source.rows, unit="vec", desc=f"sync {store}", file=sys.stderr,
                  disable=None if progress else True) as bar:
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
