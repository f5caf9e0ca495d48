"""The manifest of an output folder (``manifest.json``): :func:`build_manifest`.

Tests: ``tests/output/test_output.py``, ``tests/ingest/test_ingest.py``.
"""

from __future__ import annotations

from collections.abc import Mapping

from latechunk.output.layout import INDEX_FILE, MANIFEST_FORMAT


def build_manifest(*, created: str, finished: str, header: Mapping, settings: Mapping, dim: int, index: Mapping,
                   world_size: int, counts: Mapping, documents: list[dict], skipped: list[dict], shards: list[dict],
                   seconds: Mapping) -> dict:
    """The manifest of an output folder (``manifest.json``, format :data:`MANIFEST_FORMAT`).

    Keys, in order: ``format``, ``created``, ``finished``; the ``header`` fields (``model``: the encoder's
    description, ``strategy``, ``inputs`` as given, ``versions``); the settings that readers use at the top level
    (``mode``, ``normalize``, ``include_special``, ``long_documents``, ``macro_window``, ``macro_window_overlap``,
    ``inputs_from_out``, ``group_tokens``) and all of them under ``settings`` (= run.json's); ``dim``;
    ``index`` (the index settings plus ``ntotal`` and ``file``); ``world_size``; ``counts`` (``documents_in``,
    ``documents_embedded``, ``documents_skipped``, ``chunks``, ``content_tokens``, ``tokens_encoded``,
    ``forward_calls``); ``documents`` (``doc_id``, ``chunks``, ``sha256``, ``source``, and ``title`` when it has one, ``converted_from`` and ``converter`` for an HTML page read as markdown, per embedded document,
    in row order); ``skipped`` (``doc_id``, ``reason``, ``source``); ``degraded`` (``doc_id``, ``reason``, ``source``:
    the embedded documents read with U+FFFD for bytes that are not UTF-8, ``--encoding-errors replace``); ``shards`` (``name``, ``inputs``, ``rows``,
    ``sha256`` of its record); ``seconds`` per stage (summed over the shards, whichever run wrote them) and
    ``total`` (wall seconds of the whole run: an interrupted run's up to its last shard plus its ``--resume``).

    Args:
        created: When the run started (``run.json``'s ``created``, ``%Y-%m-%dT%H:%M:%S%z``).
        finished: When assembly finished (same format).
        header: Extra fields, written as given (``model``, ``strategy``, ``inputs``, ``versions``).
        settings: The run's settings (run.json's).
        dim: Vector dimension.
        index: The index settings (:meth:`IndexConfig.to_dict <latechunk.config.IndexConfig.to_dict>`) and
            ``ntotal``.
        world_size: Processes that wrote the shards.
        counts: The run's counts (documents, chunks, tokens, forward calls).
        documents: One dict per embedded document, in row order.
        skipped: One dict per skipped input item, in input order.
        shards: One dict per shard, in order.
        seconds: Wall seconds per stage and ``total``.

    Returns:
        The manifest dict (JSON-ready).
    """
    top = ("mode", "normalize", "include_special", "long_documents", "macro_window", "macro_window_overlap",
           "inputs_from_out", "group_tokens")
    return {
        "format": MANIFEST_FORMAT,
        "created": created,
        "finished": finished,
        **header,
        **{k: settings.get(k) for k in top},
        "settings": dict(settings),
        "dim": dim,
        "index": {**index, "file": INDEX_FILE},
        "world_size": world_size,
        "counts": dict(counts),
        "documents": documents,
        "skipped": skipped,
        # read with U+FFFD for bytes that are not UTF-8 (--encoding-errors replace): embedded, but not as written
        "degraded": [{"doc_id": d["doc_id"], "reason": d["degraded"], "source": d.get("source", "")}
                     for d in documents if d.get("degraded")],
        "shards": shards,
        "seconds": dict(seconds),
    }
