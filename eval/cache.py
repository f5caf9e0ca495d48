"""Parse a dataset once: the parsed :class:`~latechunk.eval.datasets.EvalDataset` is cached under a content hash.

Key: ``sha256`` over the dataset's identity (:func:`dataset_identity`: the known name it was given, or the name
of the folder or file a path names, since the parsed dataset's name and its Chroma query-id prefix come from it),
its files (each file's path relative to the dataset root, then its bytes, in sorted path order), the source of
``eval/datasets/`` (its modules in sorted order: a loader change invalidates the cache) and :data:`CACHE_VERSION`. The same bytes under the
same name always give the same key, wherever the folder lies; a changed byte, or a copy under another name
(``cp -r ds/chroma ds/harbor``), gives a new key. The cache file is plain JSON of the dataset (no pickle anywhere), written to a temp name and renamed.
``*.pkl`` files left in the cache folder by the earlier pickle-based cache are never read: they are removed when
the cache folder is opened (one log line). Tests: ``tests/eval/test_eval_harness.py``,
``tests/test_fixes_io_encoder.py``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

from latechunk.types import Document

from . import datasets as _datasets
from .datasets import EvalDataset, Query, dataset_path, load_dataset

__all__ = [
    "CACHE_ENV_VAR",
    "CACHE_VERSION",
    "dataset_files",
    "dataset_identity",
    "dataset_sha256",
    "default_cache_dir",
    "load_cached",
    "remove_stale_pickles",
]

log = logging.getLogger("latechunk.eval")

CACHE_VERSION = "2"
"""Bumped when the cache layout changes."""

CACHE_ENV_VAR = "LATECHUNK_CACHE"
"""Environment variable naming the cache folder (default ``~/.cache/latechunk``)."""


def default_cache_dir() -> Path:
    """The folder of parsed-dataset caches.

    Returns:
        ``$LATECHUNK_CACHE/datasets``, else ``~/.cache/latechunk/datasets`` (not created here).
    """
    base = os.environ.get(CACHE_ENV_VAR)
    return (Path(base) if base else Path.home() / ".cache" / "latechunk") / "datasets"


def remove_stale_pickles(folder: str | os.PathLike) -> list[Path]:
    """Delete the ``*.pkl`` files directly in ``folder`` (left by the old pickle-based cache; never unpickled).

    Logs one line when any were found. A file that cannot be removed is left and named in that line.

    Args:
        folder: The cache folder (a missing one holds nothing).

    Returns:
        The removed files.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    stale = sorted(p for p in folder.glob("*.pkl") if p.is_file() or p.is_symlink())
    removed, failed = [], []
    for p in stale:
        try:
            p.unlink()
            removed.append(p)
        except OSError:
            failed.append(p.name)
    if stale:
        msg = f"dataset cache {folder}: removed {len(removed)} stale pickle file(s) from the old cache (it is JSON now)"
        if failed:
            msg += f"; could not remove {', '.join(failed)}"
        log.info(msg)
    return removed


def dataset_files(spec: str | os.PathLike) -> tuple[Path, list[Path]]:
    """The dataset's root and the files that make it up, sorted.

    A folder contributes every regular file below it (hidden files and ``SHA256SUMS``/``README*``/``LICENSE*``
    included: they are part of the copy); a file contributes itself.

    Args:
        spec: A dataset name (``"chroma"``, ``"xquad"``) or path (:func:`eval.datasets.dataset_path`).

    Returns:
        ``(root, files)``: the folder the files are relative to (a file's parent for a file) and the files.

    Raises:
        FileNotFoundError: if the path does not exist.
    """
    path = dataset_path(spec)
    if path.is_file():
        return path.parent, [path]
    if path.is_dir():
        return path, sorted(p for p in path.rglob("*") if p.is_file())
    hint = ""
    if os.fspath(spec) in _datasets._NAMED:
        hint = (f"; set {_datasets.DATA_ENV_VAR} to the folder holding chroma_chunking_eval/ and xquad_en/ "
                "(default: ../shared/data beside the repository)")
    raise FileNotFoundError(f"dataset {os.fspath(spec)!r} resolves to {path}, which does not exist{hint}")


def dataset_identity(spec: str | os.PathLike) -> str:
    """What of a spec, beyond its files' bytes, the parsed dataset depends on: its name and query ids.

    Args:
        spec: A dataset name or path.

    Returns:
        ``"name:<spec>"`` for a known name (``"chroma"``, ``"xquad"``), else ``"path:<name>"`` with the name of
        the folder or file the path resolves to (the dataset is named after it; Chroma-format query ids are
        prefixed with it).
    """
    text = os.fspath(spec)
    if text in _datasets._NAMED:
        return f"name:{text}"
    return f"path:{dataset_path(spec).resolve().name}"


def dataset_sha256(spec: str | os.PathLike) -> str:
    """sha256 of the dataset's identity and content, the loader source and :data:`CACHE_VERSION` (module doc).

    Args:
        spec: A dataset name or path.

    Returns:
        The sha256 hex digest: the cache key.

    Raises:
        FileNotFoundError: if the dataset path does not exist.
    """
    root, files = dataset_files(spec)
    h = hashlib.sha256()
    h.update(f"latechunk-dataset-cache-v{CACHE_VERSION}\0".encode())
    for source in sorted(Path(_datasets.__file__).parent.glob("*.py")):  # every module of eval/datasets/
        h.update(source.read_bytes())
    identity = dataset_identity(spec).encode("utf-8")
    h.update(len(identity).to_bytes(8, "little") + identity)
    for f in files:
        rel = f.relative_to(root).as_posix().encode("utf-8")
        h.update(len(rel).to_bytes(8, "little") + rel)
        data = f.read_bytes()
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def _to_json(ds: EvalDataset) -> dict:
    return {
        "name": ds.name,
        "documents": [{"doc_id": d.doc_id, "text": d.text, "metadata": dict(d.metadata)} for d in ds.documents],
        "queries": [{"query_id": q.query_id, "text": q.text, "spans": [list(s) for s in q.spans]} for q in ds.queries],
        "qrels": ds.qrels,
        "notes": list(ds.notes),
    }


def _from_json(obj: dict) -> EvalDataset:
    return EvalDataset(
        name=obj["name"],
        documents=tuple(Document(d["doc_id"], d["text"], d["metadata"]) for d in obj["documents"]),
        queries=tuple(Query(q["query_id"], q["text"], tuple(tuple(s) for s in q["spans"])) for q in obj["queries"]),
        qrels=obj["qrels"],
        notes=tuple(obj.get("notes", ())),
    )


def load_cached(
    spec: str | os.PathLike, cache_dir: str | os.PathLike | None = None, use_cache: bool = True
) -> tuple[EvalDataset, dict]:
    """Load a dataset, parsing it only when no cached parse of the same content exists.

    Args:
        spec: A dataset name (``"chroma"``, ``"xquad"``) or path (see :func:`latechunk.eval.datasets.load_dataset`).
        cache_dir: Cache folder (default :func:`default_cache_dir`).
        use_cache: If False, parse and do not touch the cache.

    Returns:
        ``(dataset, info)``; ``info`` has ``sha256`` (the key), ``cache_hit`` (bool), ``cache_file`` and
        ``parse_seconds``.

    Raises:
        FileNotFoundError / ValueError: as :func:`latechunk.eval.datasets.load_dataset`.
    """
    import time

    key = dataset_sha256(spec)
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = folder / f"{key}.json"
    info = {"sha256": key, "cache_hit": False, "cache_file": str(target) if use_cache else "", "parse_seconds": 0.0}
    if use_cache:
        remove_stale_pickles(folder)
    if use_cache and target.is_file():
        try:
            ds = _from_json(json.loads(target.read_text(encoding="utf-8")))
            info["cache_hit"] = True
            return ds, info
        except (OSError, ValueError, KeyError, TypeError):
            pass  # a damaged or stale cache file is re-parsed and overwritten below
    t0 = time.perf_counter()
    ds = load_dataset(spec)
    info["parse_seconds"] = time.perf_counter() - t0
    if use_cache:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(_to_json(ds), ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, target)
    return ds, info
