"""``latechunk reindex DIR``: build a finished output folder's FAISS index again, with other index settings, from
the vectors its shards keep (no document is read, no model loaded).

The shards hold every chunk's float32 vector as the model gave it; ``index.faiss`` is only their index under the
run's :class:`~latechunk.config.IndexConfig` (``--index``, ``--precision``, ``--truncate-dim``, the HNSW beams).
So trying another index (HNSW instead of flat, int8 instead of float32, 128 dimensions of a Matryoshka model) costs
the index build, not the encoding. The folder is assembled again exactly as ``--append`` assembles it
(:func:`~latechunk.ingest.assemble.assemble`: ``index.faiss``, ``chunks.parquet`` and ``manifest.json`` written
whole under temp names, then renamed in one commit), with the new index settings in ``run.json`` (renamed in the
same commit, so ``--append`` and ``--resume`` go on with them) and the manifest's ``settings``; the manifest lists
each reindex under ``reindexed`` (from, to, when, versions). ``verify``, ``search``, ``export`` and
:class:`latechunk.Index` read the folder as before. One writer at a time (the folder's writer lock); a reindex that is
killed leaves the folder in its old state or its new one, never a mix.

Tests: ``tests/ingest/test_reindex.py``.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

from latechunk.config import IndexConfig
from latechunk.index import check_factory
from latechunk.ingest.assemble import assemble
from latechunk.ingest.folder import MANIFEST_OWN_KEYS, manifest_shards, writer_lock
from latechunk.output import OutputFolder
from latechunk.provenance import versions

__all__ = ["reindex"]


def _index_intact(folder: OutputFolder, manifest: dict) -> bool:
    """Whether ``index.faiss`` reads and holds the manifest's number of vectors."""
    try:
        return int(folder.read_index().ntotal) == int(manifest["counts"]["chunks"])
    except (ValueError, OSError, KeyError, RuntimeError):
        return False


def reindex(out: str | os.PathLike, index: IndexConfig) -> tuple[dict, dict, bool]:
    """Build ``out``'s index again with the settings ``index``, from its shards' vectors.

    Args:
        out: A finished output folder of ``latechunk embed`` (it has a ``manifest.json``).
        index: The new index settings (``gpu`` applies to this build only: it is not a setting of the folder).

    Returns:
        ``(manifest, old, built)``: the folder's new manifest, its index record before (``IndexConfig.to_dict``
        form), and whether the index was built. When ``index`` equals the folder's index and ``index.faiss``
        reads and holds every vector, nothing is written (``built`` False, the manifest is the folder's); a
        missing, unreadable or short ``index.faiss`` is built again with the same settings. Temp files of a
        killed write (``*.tmp``) are removed either way.

    Raises:
        ValueError: if ``out`` is not a finished output folder, another process is writing it, ``index`` does not
            fit the folder's vectors (``--truncate-dim`` above their dimension, ``ubinary`` on a dimension that is
            not a multiple of 8) or cannot be built on them (an IVF index with more lists than vectors).
        OSError: if a file cannot be read or written.
    """
    out = Path(out)
    if not out.is_dir():
        raise ValueError(f"{out} is not a folder (give an output folder of `latechunk embed`)")
    folder = OutputFolder(out)
    if not folder.manifest_path.is_file():
        raise ValueError(f"{out} holds no manifest.json: not a finished `latechunk embed` output folder (an "
                         "interrupted run is finished with --resume first)")
    with writer_lock(out):
        t0 = time.time()
        folder.finish_commit(repair=True)
        manifest = folder.read_manifest()
        run = folder.read_run()
        # the manifest's settings are the assembled ones (an append adds its inputs there, not to run.json)
        settings = dict(manifest.get("settings") or run.get("settings") or {})
        dim = int(manifest["dim"])
        old = IndexConfig.from_dict(manifest.get("index") or settings.get("index") or {})
        index = dataclasses.replace(index, renormalize=bool(settings.get("normalize", manifest.get("normalize", True))))
        index.index_dim(dim)  # --truncate-dim / ubinary against the vectors' dimension
        check_factory(index, dim)  # IVF0, IDMap, refine wrappers, no inner product: refused as embed refuses them
        records = manifest_shards(folder, manifest)  # (drops shards and temp files of a killed append)
        for f in folder.temp_files():  # a killed reindex's or append's files: the lock is ours, nobody writes them
            f.unlink(missing_ok=True)
        if index.to_dict() == old.to_dict() and _index_intact(folder, manifest):
            return manifest, old.to_dict(), False
        settings["index"] = index.to_dict()
        header = {k: v for k, v in manifest.items() if k not in MANIFEST_OWN_KEYS}
        header["reindexed"] = [*manifest.get("reindexed", []), {
            "from": old.to_dict(), "to": index.to_dict(), "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "versions": versions()}]
        earlier = float((manifest.get("seconds") or {}).get("total", 0.0))
        new_run = {**run, "settings": {**(run.get("settings") or {}), "index": index.to_dict()}}
        new = assemble(out, records, settings, index, dim, header, t0 - earlier,
                       world_size=int(manifest.get("world_size", 1)), run=new_run)
        return new, old.to_dict(), True
