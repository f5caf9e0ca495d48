"""Assembly: ``index.faiss``, ``chunks.parquet`` and ``manifest.json`` from the shards, one shard at a time.

The index gets the shard vectors as they are (normalised once, in the pipeline, when the run says so); an index
type that needs training is trained on a seeded sample of all shards' vectors (:func:`latechunk.index.build_batched`:
``train_sample_size`` rows, seed ``TRAIN_SEED``, both recorded in the manifest's ``index.train``). An IVF index
(``--index IVF4096,Flat``, ``IVF65536,PQ64``, ...) is built on disk: each shard's vectors go into a copy of the
trained empty index (a part file under ``index.ivfparts.tmp/``), and faiss contrib's ``merge_ondisk`` merges the
parts' inverted lists into ``index.ivfdata`` beside ``index.faiss`` (manifest ``index.ivfdata``: file, bytes,
sha256), so assembly never holds all vectors: peak memory is the training sample plus one shard. Other index
types are built in memory. The chunk table is the concatenation of the shard tables. Every assembled file is
written whole under its ``.tmp`` name, then all are committed together through the commit journal
(:meth:`OutputFolder.begin_commit <latechunk.output.OutputFolder.begin_commit>`), manifest last: a folder with a
manifest is complete, and an ``--append`` killed while assembling leaves the folder serving its previous state
(killed before the journal) or its new one (after: the next reader or writer finishes the renames).

Three accounts are made here from the shard records: ``alarms`` (:func:`latechunk.alarms.parse_alarms` over each
document's source type, content tokens and chunks: the strategy's chunks, those dropped by ``--dedup``
included), ``unknown_tokens`` (each document with text read as the tokenizer's unknown token, in input order:
:func:`unknown_token_notes`) and, for a ``--dedup`` run, ``dedup`` (the threshold and every dropped chunk with the
kept chunk it duplicates, in input order).
Memory: one shard's table at a time, vectors memory-mapped; what grows is an in-memory index (``ntotal * dim * 4``
bytes for a flat one; an IVF index's lists are on disk) and the manifest's per-document lines.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np

from latechunk.alarms import alarms_unchecked, parse_alarms
from latechunk.config import IndexConfig
from latechunk.index import build_batched, set_ondisk_name
from latechunk.ingest.files import fault, flush, sha256_file, tmp_path
from latechunk.output import (
    CHUNKS_FILE,
    INDEX_FILE,
    IVFDATA_FILE,
    MANIFEST_FILE,
    RUN_FILE,
    OutputFolder,
    build_manifest,
    write_chunk_table,
)

__all__ = ["alarm_rows", "assemble", "unknown_token_notes"]

_EMPTY = np.zeros((0, 0), np.float32)  # the vectors of a shard without rows (never read from disk)


def alarm_rows(documents: list[dict]) -> list[dict]:
    """The rows :func:`~latechunk.alarms.parse_alarms` reads, from the manifest's document records.

    Args:
        documents: Document records (:func:`~latechunk.ingest.shards.document_record`); those without
            ``source_type`` and ``tokens`` (written before alarms existed) are left out.

    Returns:
        ``[{"doc_id", "source", "tokens", "chunks"}]``: ``chunks`` is the strategy's count (rows plus the
        chunks ``--dedup`` dropped), so dedup never raises a parse alarm.
    """
    rows = []
    for d in documents:
        if "source_type" not in d or "tokens" not in d:
            continue
        chunks = int(d["chunks"]) + int(d.get("dropped", 0))
        if int(d["tokens"]) >= 1 and chunks >= 1:
            rows.append({"doc_id": d["doc_id"], "source": d["source_type"], "tokens": int(d["tokens"]),
                         "chunks": chunks})
    return rows


def unknown_token_notes(documents: list[dict]) -> list[dict]:
    """The documents whose text the encoder partly never saw: characters read as the tokenizer's unknown token.

    Args:
        documents: Document records (:func:`~latechunk.ingest.shards.document_record`) with ``unknown_chars``
            (:meth:`latechunk.tokenize.DocumentTokenizer.unknown_chars`); records without it are left out.

    Returns:
        ``[{"doc_id", "unknown_chars", "message"}]`` for each document with ``unknown_chars > 0``, in input order.
    """
    out = []
    for d in documents:
        n = int(d.get("unknown_chars", 0) or 0)
        if n > 0:
            out.append({"doc_id": d["doc_id"], "unknown_chars": n, "message": (
                f"unknown tokens: {d['doc_id']}: {n:,} character(s) read as the tokenizer's unknown token (a word "
                "longer than its word limit, 100 characters for BERT's WordPiece, such as a URL or an encoded "
                "blob, or characters outside its vocabulary): that text is in no vector")})
    return out


#: The skip reason of an appended item whose id and text the index holds already: such items are counted in the
#: manifest's ``counts.already_indexed``, not listed in its ``skipped`` (the shard records list them).
ALREADY_INDEXED_REASON = "already in the index (same id and text sha256)"


def compact_skipped(skipped: list[dict]) -> tuple[list[dict], int, int]:
    """The manifest's ``skipped`` list from the shard records' skipped items, in order: the items already in the
    index (:data:`ALREADY_INDEXED_REASON`) counted, not listed, and a skip of an id repeating an earlier one of the
    same kind (its reason up to `` (``: an append of a folder whose changed or emptied file is skipped again each
    time) counted, not listed again, so that re-appending a folder does not grow the manifest.

    Args:
        skipped: The shard records' skipped items (``doc_id``, ``reason``, ``source``), in input order.

    Returns:
        ``(listed, already_indexed, repeated)``; ``compact_skipped(listed)`` gives ``listed`` back.
    """
    listed, seen, already, repeated = [], set(), 0, 0
    for s in skipped:
        reason = str(s.get("reason", ""))
        if reason == ALREADY_INDEXED_REASON:
            already += 1
            continue
        key = (s.get("doc_id"), reason.split(" (", 1)[0])
        if key in seen:
            repeated += 1
            continue
        seen.add(key)
        listed.append(s)
    return listed, already, repeated


def assemble(out: Path, records: list[dict], settings: dict, index_config: IndexConfig, dim: int, header: dict,
             t_start: float, world_size: int = 1, run: dict | None = None) -> dict:
    """Build the output files from the shard records (in shard order) and return the manifest.

    Args:
        out: The output folder.
        records: Every shard record, shard 0 first, contiguous in input items.
        settings: The run's settings (run.json's).
        index_config: The FAISS index.
        dim: Vector dimension.
        header: Extra manifest fields (model, strategy, inputs, versions), written as given; ``alarms`` (a list
            of :meth:`Alarm.to_dict <latechunk.alarms.Alarm.to_dict>`), ``unknown_tokens``
            (:func:`unknown_token_notes`) and, when ``settings`` has ``dedup``,
            ``dedup`` (``threshold``, ``chunks_dropped``, ``dropped``: the shards' ``dedup`` records in order,
            each with ``uncovered_chars``; ``chunks_with_uncovered_text`` counts the drops of a chunk like one of
            its own document's that held text no kept chunk holds, ``uncovered_chars`` and
            ``documents_with_uncovered_text`` total the documents' ``uncovered_chars``, each character once)
            are added (replacing those of an earlier assembly).
        t_start: ``time.time()`` at the start of the run, in seconds (for ``seconds.total``).
        world_size: Processes that wrote the shards.
        run: A new ``run.json`` (``latechunk reindex``: its index settings change), written and renamed into
            place in the same commit as the index and the manifest; None: run.json is left as it is.

    Returns:
        The manifest (also written to ``out/manifest.json``).

    Raises:
        RuntimeError: if the records do not account for every input item or every vector (a bug).
        ValueError: if an index type that needs training cannot be trained on these vectors, or a shard's
            files do not read back (:class:`~latechunk.output.OutputFolder`).
        OSError: if an output file cannot be written.
    """
    folder = OutputFolder(out)
    t0 = time.perf_counter()
    ntotal, facts, ivfdata = _write_index(folder, records, index_config, dim)
    _write_chunks(folder, records)
    documents, skipped, n_in = _accounted(records, ntotal)
    # an append's items already in the index (same id and text) are counted, not listed: the shard records keep
    # them, and a folder re-appended every night would otherwise list every unchanged document again each time
    skipped, already, repeated = compact_skipped(skipped)
    n_chunks = sum(d["chunks"] for d in documents)
    seconds: dict[str, float] = {}
    for rec in records:
        for key, v in rec["stats"]["seconds"].items():
            seconds[key] = seconds.get(key, 0.0) + v
    header = _checks_header(header, records, documents, settings)
    run_now = folder.read_run() if run is None else run
    shards = [{"name": r["name"], "inputs": r["inputs"], "rows": r["rows"],
               "sha256": sha256_file(folder.shard_path(r["shard"], "json"))} for r in records]
    seconds["assemble"] = time.perf_counter() - t0  # all but the manifest's own write, which records it
    manifest = build_manifest(
        created=run_now.get("created", ""),
        finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        header=header,
        settings=settings,
        dim=dim,
        index={**index_config.to_dict(), "ntotal": ntotal, **facts.to_dict(),
               **({"ivfdata": ivfdata} if ivfdata else {})},
        world_size=world_size,
        counts={
            "documents_in": n_in,
            "documents_embedded": len(documents),
            "documents_skipped": len(skipped),
            **({"already_indexed": already} if already else {}),
            **({"skips_repeated": repeated} if repeated else {}),
            "chunks": n_chunks,
            "content_tokens": sum(r["stats"]["content_tokens"] for r in records),
            "tokens_encoded": sum(r["stats"]["tokens_encoded"] for r in records),
            "forward_calls": sum(r["stats"]["forward_calls"] for r in records),
        },
        documents=documents,
        skipped=skipped,
        shards=shards,
        seconds={k: round(v, 3) for k, v in seconds.items()} | {"total": round(time.time() - t_start, 3)},
    )
    _commit(folder, manifest, run, ivfdata is not None)
    return manifest


def _write_index(folder: OutputFolder, records: list[dict], index_config: IndexConfig, dim: int
                 ) -> tuple[int, object, dict | None]:
    """:func:`assemble`'s first step: the index of every shard's vectors, written whole to ``index.faiss.tmp``
    (an IVF index's lists to ``index.ivfdata.tmp``), flushed.

    Returns:
        ``(ntotal, facts, ivfdata)``: the vectors indexed, the build's facts
        (:func:`latechunk.index.build_batched`), and the manifest's ``ivfdata`` record (file, bytes, sha256) of an
        on-disk index, else None.
    """
    shutil.rmtree(folder.ivf_parts_path, ignore_errors=True)  # part files of an assembly that was killed
    def shard_vectors():
        for rec in records:
            yield folder.read_shard_vectors(rec["name"]) if rec["rows"] else _EMPTY

    ivfdata_tmp = tmp_path(folder.ivfdata_path)
    def stage(msg: str) -> None:  # fault injection: killed with the part files written, before the merge
        if msg.startswith("merging"):
            fault("assemble-ivf-merge")

    index, facts = build_batched(index_config, dim, shard_vectors, [int(rec["rows"]) for rec in records],
                                 ivfdata=ivfdata_tmp, work_dir=folder.ivf_parts_path, progress=stage)
    # every assembled file is written whole under its .tmp name first: the folder serves its old state (an
    # --append's) until the commit journal decides the new one, and then a kill between the renames is finished by
    # the next reader or writer (OutputFolder.finish_commit), so index and chunk table never disagree
    ivfdata = None
    if facts.ondisk:  # index.faiss names index.ivfdata (read back with faiss.IO_FLAG_ONDISK_SAME_DIR)
        set_ondisk_name(index, IVFDATA_FILE)
        ivfdata = {"file": IVFDATA_FILE, "bytes": ivfdata_tmp.stat().st_size, "sha256": sha256_file(ivfdata_tmp)}
        flush(ivfdata_tmp)
    folder.write_index(index, tmp_path(folder.index_path))
    flush(tmp_path(folder.index_path))
    ntotal = int(index.ntotal)
    del index
    fault("assemble-index.tmp")
    return ntotal, facts, ivfdata


def _write_chunks(folder: OutputFolder, records: list[dict]) -> None:
    """:func:`assemble`'s second step: the shard tables concatenated into ``chunks.parquet.tmp``, flushed."""
    def tables():
        for i, rec in enumerate(records):
            yield folder.read_shard_table(rec["name"])
            if i == 0:
                fault("assemble-chunks.tmp")

    write_chunk_table(tables(), tmp_path(folder.chunks_path))
    flush(tmp_path(folder.chunks_path))


def _accounted(records: list[dict], ntotal: int) -> tuple[list[dict], list[dict], int]:
    """The shard records' documents and skipped items, and the input items they account for, checked against
    the input items consumed and the ``ntotal`` vectors indexed.

    Raises:
        RuntimeError: if they do not add up (a bug).
    """
    documents = [d for rec in records for d in rec["documents"]]
    skipped = [s for rec in records for s in rec["skipped"]]
    n_in = records[-1]["inputs"][1] if records else 0
    if len(documents) + len(skipped) != n_in:
        raise RuntimeError(f"accounting: {n_in} input items but {len(documents)} embedded + {len(skipped)} skipped")
    n_chunks = sum(d["chunks"] for d in documents)
    if n_chunks != ntotal:
        raise RuntimeError(f"accounting: {n_chunks} chunks listed but {ntotal} vectors in the index")
    return documents, skipped, n_in


def _checks_header(header: dict, records: list[dict], documents: list[dict], settings: dict) -> dict:
    """``header`` with the accounts made from the shard records (``alarms``, ``alarms_unchecked``,
    ``unknown_tokens``, and ``dedup`` for a ``--dedup`` run) in place of an earlier assembly's (see
    :func:`assemble`)."""
    header = {k: v for k, v in header.items() if k not in ("alarms", "alarms_unchecked", "unknown_tokens", "dedup")}
    rows = alarm_rows(documents)
    header["alarms"] = [a.to_dict() for a in parse_alarms(rows)]
    unchecked = alarms_unchecked(rows)
    if unchecked:  # an empty alarm list would otherwise read as "all documents look alike"
        header["alarms_unchecked"] = unchecked
    header["unknown_tokens"] = unknown_token_notes(documents)
    if settings.get("dedup") is not None:
        dropped = [x for rec in records for x in rec.get("dedup", [])]
        # drops of a chunk like one of its own document's (overlapping windows) whose text no kept chunk holds;
        # a copy of another document's chunk is what dedup is for
        lost = [x for x in dropped if x.get("uncovered_chars") and x["duplicate_of"]["doc_id"] == x["doc_id"]]
        # each character once, per document (dropped chunks overlap: their own counts would count it again)
        uncovered = [int(d["uncovered_chars"]) for d in documents if d.get("uncovered_chars")]
        header["dedup"] = {"threshold": settings["dedup"], "chunks_dropped": len(dropped),
                           "chunks_with_uncovered_text": len(lost), "uncovered_chars": sum(uncovered),
                           "documents_with_uncovered_text": len(uncovered), "dropped": dropped}
    return header


def _commit(folder: OutputFolder, manifest: dict, run: dict | None, ondisk: bool) -> None:
    """:func:`assemble`'s last step: ``manifest.json.tmp`` (and a new ``run.json.tmp``) written whole, then every
    assembled file renamed into place through the commit journal (:meth:`OutputFolder.begin_commit`), manifest
    last; an ``index.ivfdata`` of another index type is removed unless the index is on disk (``ondisk``)."""
    manifest_tmp = tmp_path(folder.manifest_path)
    manifest_tmp.write_bytes(folder.json_bytes(manifest, indent=2))
    flush(manifest_tmp)
    fault("assemble-manifest.tmp")
    renamed = [IVFDATA_FILE] if ondisk else []
    if run is not None:
        run_tmp = tmp_path(folder.run_path)
        run_tmp.write_bytes(folder.json_bytes(run))
        flush(run_tmp)
        renamed.append(RUN_FILE)
    folder.begin_commit([*renamed, CHUNKS_FILE, INDEX_FILE, MANIFEST_FILE],
                        remove=[] if ondisk else [IVFDATA_FILE],  # an index.ivfdata of another index type
                        after_first=lambda: fault("commit-renamed-1"))
