"""Shards: one pipeline group's chunk rows, vectors and commit record; write one, scan them, check one.

A shard ``k`` is three files in ``DIR/shards`` (:mod:`latechunk.output` names them and lists the record's keys):
``NNNNN.parquet`` (chunk rows), ``NNNNN.npy`` ((rows, dim) float32 vectors) and ``NNNNN.json`` (its record:
the input items ``[start, end)`` it consumed and their running digest, its documents and skipped items, the size
and sha256 of the two data files, its stats). The record is written last, so a shard counts once its ``.json``
exists and the checksums in it match its data files.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from latechunk.ingest.files import commit, fault, read_json, sha256_file, sha256_text, tmp_path, write_json
from latechunk.output import (
    ASSEMBLED_FILES,
    COMMIT_FILE,
    PROGRESS_FILE,
    SHARD_FORMAT,
    OutputFolder,
    chunk_table,
    write_shard_table,
)
from latechunk.types import Boundaries, Document

__all__ = ["check_shard_files", "clean_shards", "document_record", "complete_shards", "scan_shards", "write_shard"]



def document_record(doc: Document, chunks: int, extra: dict | None = None) -> dict:
    """An embedded document's record in its shard and in the manifest's ``documents``.

    Args:
        doc: The document.
        chunks: How many chunks (rows) it has.
        extra: More keys, appended as given (``embed`` adds ``source_type``, ``tokens`` and, under ``--dedup``,
            ``dropped``: see :func:`latechunk.ingest.stream.write_group`).

    Returns:
        ``{"doc_id", "chunks", "sha256" (of the text as read), "source"}``, and ``"title"`` when the source
        declares one (a JSONL/parquet ``title``, a markdown file's front-matter title, BR-022, an HTML ``<title>``;
        the chunk table's ``title`` is the resolved one, :func:`latechunk.titles.document_title`, where a first
        heading comes before a record's or a page's title), and
        ``"converted_from"``/``"converter"`` for a document whose text is a conversion (an HTML page's markdown:
        ``"html"``, ``"markdownify 1.2.3"``; its offsets and sha256 are the markdown's), ``"front_matter_problem"``
        for a markdown file whose front matter was ignored in part or whole
        (:func:`latechunk.front_matter.front_matter_problem`), ``"degraded"`` for one read with U+FFFD for bytes
        that are not UTF-8 (``--encoding-errors replace``); then ``extra``.
    """
    rec = {"doc_id": doc.doc_id, "chunks": int(chunks), "sha256": sha256_text(doc.text),
           "source": doc.metadata.get("source", "")}
    for key in ("title", "converted_from", "converter", "front_matter_problem", "degraded"):
        value = doc.metadata.get(key)
        if isinstance(value, str) and value:
            rec[key] = value
    rec.update(extra or {})
    return rec

def write_shard(folder: OutputFolder, k: int, inputs: tuple[int, int], digest: str, documents: Sequence[Document],
                boundaries: Sequence[Boundaries], vectors: np.ndarray, skipped: list[dict], strategy: str,
                stats: dict, doc_extra: Sequence[dict] | None = None, dedup: list[dict] | None = None) -> dict:
    """Write shard ``k`` (parquet, then npy, then its record, each committed atomically) and return its record.

    Args:
        folder: The output folder.
        k: Shard number.
        inputs: Input items ``[start, end)`` the shard consumed.
        digest: Running digest of the input items up to ``end`` (:func:`latechunk.ingest.stream.chain`).
        documents: Its embedded documents, in input order.
        boundaries: Their Boundaries, same order.
        vectors: (rows, dim) float32 chunk vectors, row i = chunk row i.
        skipped: Its skipped items ``{"doc_id", "reason", "source"}``, in input order.
        strategy: The strategy's canonical SPEC.
        stats: ``{"content_tokens", "tokens_encoded", "forward_calls", "seconds": {stage: s}}`` of its group.
        doc_extra: Per document, more keys for its record (:func:`document_record`); None: none.
        dedup: Under ``--dedup``: the chunks dropped from this shard (records of
            :func:`latechunk.ingest.stream.write_group`), stored as the record's ``dedup``; None: no such key.

    Returns:
        The shard record (keys :data:`latechunk.output.SHARD_KEYS`, and ``dedup`` when given).

    Raises:
        RuntimeError: if the vectors and the chunk rows differ in number (a bug).
    """
    name = folder.shard_name(k)
    table = chunk_table(documents, boundaries, strategy)
    if vectors.shape[0] != table.num_rows:
        raise RuntimeError(f"shard {name}: {vectors.shape[0]} vectors for {table.num_rows} chunks")
    ppath, vpath = folder.shard_path(k, "parquet"), folder.shard_path(k, "npy")
    tmp = tmp_path(ppath)
    write_shard_table(table, tmp)
    commit(tmp, ppath)
    fault(f"shard-{name}-parquet")
    tmp = tmp_path(vpath)
    with open(tmp, "wb") as fh:
        np.save(fh, np.ascontiguousarray(vectors, dtype=np.float32), allow_pickle=False)
    fault(f"shard-{name}-npy.tmp")
    commit(tmp, vpath)
    rec = {
        "format": SHARD_FORMAT,
        "shard": k,
        "name": name,
        "inputs": list(inputs),
        "inputs_digest": digest,
        "rows": int(table.num_rows),
        "dim": int(vectors.shape[1]),
        "files": {p.name: {"bytes": p.stat().st_size, "sha256": sha256_file(p)} for p in (ppath, vpath)},
        "documents": [
            document_record(d, len(b), doc_extra[i] if doc_extra is not None else None)
            for i, (d, b) in enumerate(zip(documents, boundaries))
        ],
        "skipped": skipped,
        "stats": stats,
    }
    if dedup is not None:
        rec["dedup"] = dedup
    write_json(folder.shard_path(k, "json"), rec)
    fault(f"shard-{name}-json")
    return rec


def check_shard_files(shard_dir: Path, rec: dict, verify_hashes: bool) -> list[str]:
    """Check a shard's data files against its record: each listed file exists with the recorded size in bytes
    (and sha256 with ``verify_hashes``), and the record lists exactly its ``.parquet`` and ``.npy``.

    Args:
        shard_dir: The ``shards/`` folder.
        rec: The shard's record (its ``.json``).
        verify_hashes: Also compare each file's sha256 (reads the files); else sizes only.

    Returns:
        One line per problem (``[]`` when the shard is whole).

    Raises:
        KeyError: on a record that lacks ``name`` or a file's ``bytes``/``sha256``.
    """
    problems = []
    for fname, info in rec.get("files", {}).items():
        f = shard_dir / fname
        if not f.is_file():
            problems.append(f"shards/{fname} is missing")
            continue
        size = f.stat().st_size
        if size != info["bytes"]:
            problems.append(f"shards/{fname} has {size} bytes, its record says {info['bytes']} (truncated or replaced)")
        elif verify_hashes and sha256_file(f) != info["sha256"]:
            problems.append(f"shards/{fname}: sha256 differs from its record (corrupted or replaced)")
    if set(rec.get("files", {})) != {f"{rec['name']}.parquet", f"{rec['name']}.npy"}:
        problems.append(f"shards/{rec.get('name')}.json does not list its .parquet and .npy")
    return problems


def scan_shards(out: str | Path, verify_hashes: bool = True) -> tuple[list[dict], list[str]]:
    """The complete shards of an output folder from shard 0 on, in order, and why the scan stopped there.

    A shard is complete when its ``.json`` parses, names itself, continues the previous shard's input range,
    and its ``.parquet`` and ``.npy`` have the recorded sizes (and sha256 with ``verify_hashes``).

    Args:
        out: The output folder.
        verify_hashes: Also compare each data file's sha256; else sizes only.

    Returns:
        ``(records, notes)``: shard records ``0..k-1``; notes say why shard ``k`` did not count (empty when the
        scan ran out of shard records).
    """
    folder = OutputFolder(Path(out))
    records: list[dict] = []
    notes: list[str] = []
    k = 0
    while True:
        name = folder.shard_name(k)
        jpath = folder.shard_path(k, "json")
        if not jpath.is_file():
            break
        try:
            rec = folder.read_json(jpath)
        except ValueError as err:
            notes.append(f"shards/{err}")
            break
        prev_end = records[-1]["inputs"][1] if records else 0
        if rec.get("shard") != k or rec.get("inputs", [None])[0] != prev_end:
            notes.append(f"shards/{name}.json does not continue shard {k - 1}")
            break
        bad = check_shard_files(folder.shards_dir, rec, verify_hashes)
        if bad:
            notes.extend(bad)
            break
        records.append(rec)
        k += 1
    return records, notes


def complete_shards(out: Path) -> dict[int, dict]:
    """Every complete shard of ``out`` by number, gaps allowed (records parse and name themselves; data files
    have the recorded sizes and sha256). Whether each continues the input stream is checked by the run.

    Args:
        out: The output folder.

    Returns:
        ``{shard number: record}``; ``{}`` when there is no ``shards/`` folder. Unreadable or incomplete
        shards are left out.
    """
    folder = OutputFolder(out)
    found: dict[int, dict] = {}
    if not folder.shards_dir.is_dir():
        return found
    for jpath in sorted(folder.shards_dir.glob("*.json")):
        k = folder.shard_number(jpath.name)
        if k is None or jpath.name != f"{folder.shard_name(k)}.json":
            continue
        rec = read_json(jpath)
        if rec is None or rec.get("shard") != k or rec.get("name") != folder.shard_name(k):
            continue
        try:
            if check_shard_files(folder.shards_dir, rec, True):
                continue
        except (KeyError, TypeError, AttributeError):
            continue
        found[k] = rec
    return found


def clean_shards(out: Path, keep: Callable[[int], bool]) -> None:
    """Delete temp files, the shard files whose number ``keep`` rejects, the assembled files and progress.json
    (they are rebuilt) and the rank markers of an earlier run.

    Args:
        out: The output folder.
        keep: ``keep(k)``: whether shard ``k``'s files stay.
    """
    folder = OutputFolder(out)
    folder.shards_dir.mkdir(exist_ok=True)
    for f in folder.shards_dir.iterdir():
        idx = folder.shard_number(f.name)
        if f.name.endswith(".tmp") or idx is None or not keep(idx):
            f.unlink()
    for name in (COMMIT_FILE, *ASSEMBLED_FILES, PROGRESS_FILE):  # the journal first: no reader then commits them
        for p in (out / name, out / f"{name}.tmp"):
            if p.exists():
                p.unlink()
    if folder.ranks_dir.is_dir():
        shutil.rmtree(folder.ranks_dir)
