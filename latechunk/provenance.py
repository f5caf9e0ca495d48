"""What a manifest records about the software it was made with, and the ids that name a chunk across folders.

:func:`chunk_id` is a chunk's stable id: the same chunk of the same document, embedded with the same settings,
has the same id in every output folder (``export`` writes it as a vector store's row id, ``Index.search`` hits
and ``search --json`` carry it). :func:`deciding_settings` is the part of a run's settings that decides a
document's chunks and vectors (``embed --reuse`` compares it; :func:`vectors_key` hashes it).
"""

from __future__ import annotations

import hashlib
import json
import platform
import uuid
from collections.abc import Mapping

__all__ = ["CHUNK_ID_NAMESPACE", "chunk_id", "chunk_id_of_row", "deciding_settings", "vectors_key", "versions"]

#: the uuid5 namespace of :func:`chunk_id` (fixed: changing it would change every id)
CHUNK_ID_NAMESPACE = uuid.UUID("5b0c4a52-8d1e-4c36-9a1f-2f6e0b7d3c91")
#: run.json settings that do not decide a document's chunks or vectors (an index type, the metadata kept, ...)
_NOT_DECIDING = ("inputs_from_out", "index", "group_tokens", "dedup")
_MODEL_NOT_DECIDING = ("batch_tokens", "trust_remote_code", "name")


def deciding_settings(settings: dict) -> dict:
    """The part of a run's settings (run.json / the manifest's ``settings``) that decides a document's chunks and
    vectors: without the index, the shard size, ``--dedup``, the inputs, the model's name (its weights' sha256
    stays), batch size and remote-code flag, and the record fields' ``metadata`` (rows are made from the document).
    ``--reuse`` refuses an old folder whose deciding settings differ; :func:`vectors_key` hashes them.

    Args:
        settings: A run's settings dict.

    Returns:
        A new dict (the input is not changed).
    """
    out = {k: v for k, v in settings.items() if k not in _NOT_DECIDING}
    out["model"] = {k: v for k, v in (settings.get("model") or {}).items() if k not in _MODEL_NOT_DECIDING}
    fields = dict(out.get("record_fields") or {})
    fields.pop("metadata", None)  # rows are made again from the document: today's metadata
    out["record_fields"] = fields
    return out


def vectors_key(manifest: dict, settings: Mapping | None = None) -> str:
    """What decides an exported row's vector besides its document, as one sha256 (hex): the run's deciding
    settings (:func:`deciding_settings`: model weights' sha256, dtype, backend, strategy, mode, macro window and
    overlap, pooling, prompts, normalisation, ...) and the index's ``truncate_dim`` (the vectors a store gets).

    Args:
        manifest: The folder's manifest.
        settings: The run's settings; None: the manifest's ``settings`` (a folder written before they were
            recorded there: the manifest's own model, strategy and mode keys).

    Returns:
        64 hex digits; equal for two folders whose rows of one document get the same vectors.
    """
    settings = settings if settings is not None else manifest.get("settings")
    if settings:
        deciding = deciding_settings(dict(settings))
    else:
        model = {k: v for k, v in (manifest.get("model") or {}).items() if k not in ("name", "batch_tokens")}
        deciding = {"model": model, **{k: manifest.get(k) for k in ("strategy", "mode", "normalize", "include_special",
                                                                  "long_documents", "macro_window",
                                                                  "macro_window_overlap")}}
    index = manifest.get("index") if isinstance(manifest.get("index"), dict) else {}
    text = json.dumps([deciding, index.get("truncate_dim")], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def chunk_id(key: str, doc_id: str, doc_sha256: str, chunk_index: int, char_span: tuple[int, int],
             token_span: tuple[int, int]) -> str:
    """A chunk's stable id: a UUID (RFC 4122 version 5, :data:`CHUNK_ID_NAMESPACE`) of what decides its row, so
    the same chunk gets the same id in every folder and every export.

    A late-chunked vector depends on its whole document (every token of the macro window is context), so the id
    covers the document's text (its sha256), not only the chunk's: a chunk of an edited document is a new chunk.
    A folder rebuilt with ``embed --reuse`` (or from scratch with the same settings) gives its unchanged
    documents' chunks the ids they had; ``export --sync`` relies on that. Qdrant takes the UUID as a point id,
    Chroma as its string id, LanceDB stores it in the ``chunk_id`` column.

    Args:
        key: :func:`vectors_key` of the folder (model, settings, ``truncate_dim``).
        doc_id: The document's id.
        doc_sha256: sha256 (hex) of the document's text as read (the shard record's ``sha256``).
        chunk_index: The chunk's position in its document (0-based).
        char_span: ``(char_start, char_end)``, characters, half-open.
        token_span: ``(token_start, token_end)``, tokens, half-open.

    Returns:
        The UUID as 36 characters (``8-4-4-4-12`` hex digits).
    """
    name = "\x1f".join((key, doc_id, doc_sha256, str(int(chunk_index)), f"{int(char_span[0])}:{int(char_span[1])}",
                        f"{int(token_span[0])}:{int(token_span[1])}"))
    return str(uuid.uuid5(CHUNK_ID_NAMESPACE, name))


def chunk_id_of_row(key: str, row: Mapping, doc_sha256: str | None) -> str:
    """:func:`chunk_id` of a chunk-table row (``doc_id``, ``chunk_index``, char and token spans); a document
    whose text hash was not recorded (``doc_sha256`` empty or None) is named by the chunk's own text instead.

    Args:
        key: :func:`vectors_key` of the folder.
        row: The row (a dict with the chunk table's columns).
        doc_sha256: The document's text sha256 (hex), or None.

    Returns:
        The UUID as 36 characters.
    """
    sha = doc_sha256 or "chunk:" + hashlib.sha256(str(row["text"]).encode()).hexdigest()
    return chunk_id(key, str(row["doc_id"]), sha, row["chunk_index"], (row["char_start"], row["char_end"]),
                    (row["token_start"], row["token_end"]))


def versions(*extra: str) -> dict:
    """Versions of latechunk, Python, torch, transformers, faiss, numpy and the platform.

    Args:
        extra: Further importable module names whose ``__version__`` to record (e.g. ``"ir_measures"``).

    Returns:
        ``{name: version string}``; ``"?"`` for a module without ``__version__``.
    """
    import importlib

    import latechunk

    out = {"latechunk": latechunk.__version__, "python": platform.python_version()}
    for name in ("torch", "transformers", "faiss", "numpy", *extra):
        out[name] = getattr(importlib.import_module(name), "__version__", "?")
    out["platform"] = platform.platform()
    return out
