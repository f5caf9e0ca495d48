"""Sharded, resumable ingest: stream the inputs through :func:`~latechunk.pipeline.iter_embed`, write each
pipeline group as a checksummed shard, and assemble the output folder from the shards at the end.

Layout of the output folder ``DIR``::

    run.json                settings of the run, written first; ``--resume`` refuses different settings
    progress.json           shards complete and input items consumed (for people; the shard records are the truth)
    shards/NNNNN.parquet    chunk rows of one group (columns of ``export.CHUNK_COLUMNS``)
    shards/NNNNN.npy        (rows, dim) float32 chunk vectors, ``np.save(..., allow_pickle=False)``
    shards/NNNNN.json       commit record: input items ``[start, end)``, documents embedded (chunks, sha256,
                            source), documents skipped (reason, source), sha256 and size of the .parquet and .npy
    index.faiss, chunks.parquet, manifest.json    assembled from the shards (manifest last)

Every file is written to ``NAME.tmp``, flushed to disk and ``os.replace``-d, so a file either exists whole or not
at all. A shard counts once its ``.json`` exists and the checksums in it match its data files; the ``.json`` is
written after both. ``--resume`` keeps the complete shards, deletes whatever follows the first incomplete one, and
skips the input items the complete shards consumed (checked against a running digest of those items).

Why the result equals an uninterrupted run: the input order is fixed (:func:`latechunk.io.iter_inputs` sorts), a
shard is exactly one pipeline group, and a group's token budget restarts at every group boundary. A run resumed at
a boundary therefore forms the same groups, the same forward batches and the same vectors as the run it continues.

Memory stays flat in the corpus size: inputs are streamed, one group is in memory at a time, and assembly reads
one shard at a time (vectors memory-mapped). What grows is the FAISS index itself (``ntotal * dim * 4`` bytes) and
the per-document lines of the manifest.

Tests: ``tests/test_ingest.py`` (SIGKILL at three points, resume, compare with an uninterrupted run).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from latechunk.encoder import Encoder
from latechunk.export import IndexSpec, as_float32_rows, chunk_table
from latechunk.io import iter_inputs
from latechunk.pipeline import Skipped, iter_embed, new_stats
from latechunk.strategies.base import get_strategy
from latechunk.types import Document

__all__ = [
    "MANIFEST_FORMAT",
    "OUTPUT_FILES",
    "RUN_FORMAT",
    "check_shard_files",
    "ingest",
    "prepare_output",
    "run_settings",
    "scan_shards",
    "sha256_file",
    "sha256_text",
]

RUN_FORMAT = "latechunk-run/1"
MANIFEST_FORMAT = "latechunk-index/1"
#: files and folders of an output folder that ``--force`` removes (nothing else there is touched)
OUTPUT_FILES = ("index.faiss", "chunks.parquet", "manifest.json", "run.json", "progress.json", "shards")
#: test hook: ``LATECHUNK_FAULT_KILL_AT=<event>`` makes the process SIGKILL itself at that event (see _fault)
FAULT_ENV = "LATECHUNK_FAULT_KILL_AT"


# ---------------------------------------------------------------------------------------------------- helpers
def sha256_text(text: str) -> str:
    """sha256 hex digest of ``text`` encoded as UTF-8 (the manifest's per-document hash)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    """sha256 hex digest of a file's bytes, read in 4 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _fault(event: str) -> None:
    """Fault injection for the resume tests: SIGKILL this process when ``$LATECHUNK_FAULT_KILL_AT == event``.

    Events: ``shard-NNNNN-parquet`` (after the shard's parquet is in place), ``shard-NNNNN-npy.tmp`` (vectors
    written to the temp name, not yet renamed), ``shard-NNNNN-json`` (shard committed), ``assemble-index``
    (index.faiss in place), ``assemble-chunks.tmp`` (chunks.parquet half written).
    """
    if os.environ.get(FAULT_ENV) == event:
        os.kill(os.getpid(), signal.SIGKILL)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _commit(tmp: Path, final: Path) -> None:
    """Flush ``tmp`` to disk and rename it to ``final`` (atomic on POSIX)."""
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    _fsync_dir(final.parent)


def _write_json(path: Path, obj: dict, indent: int | None = 1) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=indent, ensure_ascii=False) + "\n", encoding="utf-8")
    _commit(tmp, path)


def _shard_name(k: int) -> str:
    return f"{k:05d}"


def _shard_index(name: str) -> int | None:
    stem = name.split(".", 1)[0]
    return int(stem) if stem.isdigit() else None


def _chain(digest: str, item: Document | Skipped) -> str:
    """Running digest of the consumed input items: ``sha256(prev | kind | doc_id | text sha256 or reason)``."""
    if isinstance(item, Document):
        part = f"D\0{item.doc_id}\0{sha256_text(item.text)}"
    else:
        part = f"S\0{item.doc_id}\0{item.reason}\0{item.source}"
    return hashlib.sha256(f"{digest}\0{part}".encode()).hexdigest()


# ---------------------------------------------------------------------------------------------------- settings
def run_settings(
    inputs: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    strategy: str,
    encoder: Encoder,
    mode: str,
    normalize: bool,
    include_special: bool,
    macro_windows: bool,
    group_tokens: int,
    index_spec: IndexSpec,
) -> dict:
    """Everything that decides the output of a run (``run.json``); a resumed run must match it exactly.

    Input paths are stored relative to the output folder (never absolute), so a folder can be moved together
    with its inputs. The device is not part of it (see :func:`prepare_output`).
    """
    out_abs = Path(out).resolve()
    m = encoder.describe()
    return {
        "inputs_from_out": [os.path.relpath(Path(p).resolve(), out_abs) for p in inputs],
        "strategy": get_strategy(strategy).spec,
        "mode": mode,
        "normalize": bool(normalize),
        "include_special": bool(include_special),
        "macro_windows": bool(macro_windows),
        "group_tokens": int(group_tokens),
        "index": index_spec.to_dict(),
        "model": {k: m[k] for k in ("name", "sha256", "dim", "dtype", "max_length", "window", "window_overlap",
                                    "pooling", "document_prompt")} | {"batch_tokens": encoder.batch_tokens},
    }


# ---------------------------------------------------------------------------------------------------- shards
def scan_shards(out: str | os.PathLike, verify_hashes: bool = True) -> tuple[list[dict], list[str]]:
    """The complete shards of an output folder, in order, and the reasons the scan stopped where it did.

    A shard is complete when its ``.json`` parses, names itself, continues the previous shard's input range,
    and its ``.parquet`` and ``.npy`` have the recorded sizes (and sha256 with ``verify_hashes``).

    Returns:
        ``(records, notes)``: shard records ``0..k-1``; notes say why shard ``k`` did not count (empty when the
        scan ran out of shard records).
    """
    shard_dir = Path(out) / "shards"
    records: list[dict] = []
    notes: list[str] = []
    k = 0
    while True:
        name = _shard_name(k)
        jpath = shard_dir / f"{name}.json"
        if not jpath.is_file():
            break
        try:
            rec = json.loads(jpath.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            notes.append(f"shards/{name}.json unreadable: {err}")
            break
        prev_end = records[-1]["inputs"][1] if records else 0
        if rec.get("shard") != k or rec.get("inputs", [None])[0] != prev_end:
            notes.append(f"shards/{name}.json does not continue shard {k - 1}")
            break
        bad = check_shard_files(shard_dir, rec, verify_hashes)
        if bad:
            notes.extend(bad)
            break
        records.append(rec)
        k += 1
    return records, notes


def check_shard_files(shard_dir: Path, rec: dict, verify_hashes: bool) -> list[str]:
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


def _remove_output(out: Path) -> None:
    import shutil

    for name in OUTPUT_FILES:
        p = out / name
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
        tmp = out / f"{name}.tmp"
        if tmp.exists():
            tmp.unlink()


def prepare_output(out: str | os.PathLike, settings: dict, force: bool = False, resume: bool = False) -> list[dict]:
    """Make ``out`` ready for a run; return the complete shards to keep (``[]`` for a fresh run).

    - a missing or empty folder: a fresh run;
    - ``resume``: the folder must hold the ``run.json`` of a run with the same settings; its complete shards are
      returned and nothing is removed yet (:func:`ingest` removes what follows them, partial shards, temp files
      and a half-assembled output, once it has checked that the inputs they consumed are unchanged);
    - ``force``: the files of a previous output (``OUTPUT_FILES``) are removed, nothing else in the folder;
    - otherwise an existing non-empty folder is an error: it is never overwritten.

    Raises:
        ValueError: for a non-empty folder without ``force``/``resume``, both flags at once, a folder without
            ``run.json`` on resume, or settings that differ from the interrupted run's.
    """
    out = Path(out)
    if force and resume:
        raise ValueError("--force (start over) and --resume (continue) exclude each other; give one")
    if out.exists() and not out.is_dir():
        raise ValueError(f"output path {out} exists and is not a folder")
    non_empty = out.is_dir() and any(out.iterdir())
    kept: list[dict] = []
    if non_empty and resume and not (out / "run.json").is_file() and _holds_nothing(out):
        force = True  # killed before run.json was in place: nothing to continue, start fresh
    elif non_empty and resume:
        run_file = out / "run.json"
        if not run_file.is_file():
            raise ValueError(f"{out} holds no run.json, so it is not an interrupted `latechunk embed` run; "
                             "pass --force to start over")
        try:
            old = json.loads(run_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise ValueError(f"{run_file} is unreadable ({err}); pass --force to start over") from err
        diff = _diff_settings(old.get("settings", {}), settings)
        if diff:
            raise ValueError("--resume with settings that differ from the interrupted run: " + "; ".join(diff)
                             + ". Use the same options, or --force to start over")
        kept, _ = scan_shards(out)
        return kept
    if non_empty and not force:
        raise ValueError(f"output folder {out} exists and is not empty; pass --force to overwrite "
                         "(or --resume to continue an interrupted run)")
    out.mkdir(parents=True, exist_ok=True)
    if force:
        _remove_output(out)
    (out / "shards").mkdir(exist_ok=True)
    _write_json(out / "run.json", {"format": RUN_FORMAT, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                   "settings": settings})
    return kept


def _holds_nothing(out: Path) -> bool:
    """True when ``out`` holds only an empty ``shards/`` and temp files of ours (a run killed at its start)."""
    for p in out.iterdir():
        if p.name == "shards" and p.is_dir() and not any(p.iterdir()):
            continue
        if p.name.endswith(".tmp") and p.name[: -len(".tmp")] in OUTPUT_FILES:
            continue
        return False
    return True


def _diff_settings(old: dict, new: dict, prefix: str = "") -> list[str]:
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out.extend(_diff_settings(a, b, f"{prefix}{key}."))
        elif a != b:
            out.append(f"{prefix}{key} was {a!r}, now {b!r}")
    return out


def _clean_for_resume(out: Path, k: int) -> None:
    """Delete temp files, every shard file numbered ``>= k`` and the assembled files (they are rebuilt)."""
    shard_dir = out / "shards"
    shard_dir.mkdir(exist_ok=True)
    for f in shard_dir.iterdir():
        idx = _shard_index(f.name)
        if f.name.endswith(".tmp") or idx is None or idx >= k:
            f.unlink()
    for name in ("index.faiss", "chunks.parquet", "manifest.json", "progress.json"):
        for p in (out / name, out / f"{name}.tmp"):
            if p.exists():
                p.unlink()


# ---------------------------------------------------------------------------------------------------- writing
def _write_shard(shard_dir: Path, k: int, inputs: tuple[int, int], digest: str, documents: list[Document],
                 boundaries, vectors: np.ndarray, skipped: list[dict], spec: str, stats: dict) -> dict:
    import pyarrow.parquet as pq

    name = _shard_name(k)
    table = chunk_table(documents, boundaries, spec)
    if vectors.shape[0] != table.num_rows:
        raise RuntimeError(f"shard {name}: {vectors.shape[0]} vectors for {table.num_rows} chunks")
    ppath, vpath = shard_dir / f"{name}.parquet", shard_dir / f"{name}.npy"
    tmp = ppath.with_name(ppath.name + ".tmp")
    pq.write_table(table, tmp)
    _commit(tmp, ppath)
    _fault(f"shard-{name}-parquet")
    tmp = vpath.with_name(vpath.name + ".tmp")
    with open(tmp, "wb") as fh:
        np.save(fh, np.ascontiguousarray(vectors, dtype=np.float32), allow_pickle=False)
    _fault(f"shard-{name}-npy.tmp")
    _commit(tmp, vpath)
    rec = {
        "format": "latechunk-shard/1",
        "shard": k,
        "name": name,
        "inputs": list(inputs),
        "inputs_digest": digest,
        "rows": int(table.num_rows),
        "dim": int(vectors.shape[1]),
        "files": {p.name: {"bytes": p.stat().st_size, "sha256": sha256_file(p)} for p in (ppath, vpath)},
        "documents": [
            {"doc_id": d.doc_id, "chunks": len(b), "sha256": sha256_text(d.text), "source": d.metadata.get("source", "")}
            for d, b in zip(documents, boundaries)
        ],
        "skipped": skipped,
        "stats": stats,
    }
    _write_json(shard_dir / f"{name}.json", rec)
    _fault(f"shard-{name}-json")
    return rec


def _stats_delta(now: dict, before: dict, mode: str) -> dict:
    tok_key = "late_tokens" if mode == "late" else "naive_tokens"
    return {
        "content_tokens": now["content_tokens"] - before["content_tokens"],
        "tokens_encoded": now[tok_key] - before[tok_key],
        "forward_calls": now["forward_calls"][mode] - before["forward_calls"][mode],
        "seconds": {k: now["seconds"][k] - before["seconds"].get(k, 0.0) for k in now["seconds"]},
    }


def _snapshot(stats: dict) -> dict:
    return json.loads(json.dumps(stats))


def ingest(
    inputs: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    strategy: str,
    encoder: Encoder,
    mode: str = "late",
    normalize: bool = True,
    include_special: bool = False,
    macro_windows: bool = True,
    group_tokens: int = 1 << 18,
    index_spec: IndexSpec | None = None,
    force: bool = False,
    resume: bool = False,
    progress: bool = False,
    header: dict | None = None,
    on_shard: Callable[[dict], None] | None = None,
) -> dict:
    """Chunk, embed and index ``inputs`` into ``out`` through checksummed shards; resumable after a kill.

    Args:
        inputs: Files, folders, ``.jsonl``, BEIR ``corpus.jsonl`` or ``.parquet`` (see :func:`iter_inputs`).
        out: Output folder (see the module docstring for its layout).
        strategy: One strategy SPEC.
        encoder: The :class:`Encoder`.
        mode: ``"late"`` or ``"naive"``.
        normalize / include_special / macro_windows: As in :func:`~latechunk.pipeline.embed`.
        group_tokens: Token budget of one pipeline group, i.e. of one shard (bounds memory).
        index_spec: FAISS index settings (default flat, cosine when ``normalize``).
        force: Remove a previous output in ``out`` first.
        resume: Continue the interrupted run in ``out`` (same settings required).
        progress: Show a progress bar.
        header: Extra manifest fields (model, strategy, versions, ...), written as given.
        on_shard: Called with each new shard record after it is committed.

    Returns:
        The manifest (also written to ``out/manifest.json``).

    Raises:
        ValueError: on bad settings, a folder that may not be written (see :func:`prepare_output`), or inputs
            that changed under a resumed run.
    """
    t_start = time.time()
    strat = get_strategy(strategy)
    spec = strat.spec
    if mode not in ("late", "naive"):
        raise ValueError(f"mode must be 'late' or 'naive', got {mode!r}")
    if group_tokens < 1:
        raise ValueError(f"group_tokens must be >= 1, got {group_tokens}")
    index_spec = index_spec or IndexSpec(metric="cosine" if normalize else "ip")
    out = Path(out)
    settings = run_settings(inputs, out, spec, encoder, mode, normalize, include_special, macro_windows,
                            group_tokens, index_spec)
    records = prepare_output(out, settings, force=force, resume=resume)
    shard_dir = out / "shards"

    # skip what the complete shards consumed, checking that those items are still the same
    items = iter_inputs(inputs)
    consumed = records[-1]["inputs"][1] if records else 0
    digest = ""
    for i in range(consumed):
        try:
            digest = _chain(digest, next(items))
        except StopIteration:
            raise ValueError(f"--resume: the inputs now hold {i} items, but the interrupted run had consumed "
                             f"{consumed}; pass --force to start over") from None
    if records and digest != records[-1]["inputs_digest"]:
        raise ValueError("--resume: the inputs changed since the interrupted run (the items it consumed differ); "
                         "pass --force to start over")
    if resume:
        _clean_for_resume(out, len(records))

    # The pipeline tokenizes one group ahead in a thread, so the reader below runs ahead of the groups. It
    # queues every item with its input position and the running digest after it; each group then claims its
    # documents (a group covers a contiguous run of len(documents) + len(skipped) documents) and the reader's
    # skipped items that lie before its last document. deque appends/pops are thread-safe.
    state = {"consumed": consumed, "digest": digest}
    doc_queue: deque = deque()  # (position, doc_id, source, digest after)
    skip_queue: deque = deque()  # (position, record, digest after)

    def documents() -> Iterator[Document]:
        for item in items:
            pos = state["consumed"]
            state["consumed"] += 1
            state["digest"] = _chain(state["digest"], item)
            if isinstance(item, Skipped):
                skip_queue.append((pos, {"doc_id": item.doc_id, "reason": item.reason, "source": item.source},
                                   state["digest"]))
            else:
                doc_queue.append((pos, item.doc_id, str(item.metadata.get("source", "")), state["digest"]))
                yield item

    stats = new_stats()
    before = _snapshot(stats)
    k = len(records)
    dim = encoder.dim

    def flush(group_docs, group_bounds, vectors, pipe_skipped, end: int, end_digest: str, claimed: dict) -> None:
        nonlocal k, before
        start = records[-1]["inputs"][1] if records else 0
        skipped = []
        while skip_queue and skip_queue[0][0] < end:
            pos, rec_, _ = skip_queue.popleft()
            skipped.append((pos, rec_))
        for s in pipe_skipped:
            pos, src = claimed[s.doc_id]
            skipped.append((pos, {"doc_id": s.doc_id, "reason": s.reason, "source": s.source or src}))
        skipped.sort(key=lambda t: t[0])
        delta = _stats_delta(stats, before, mode)
        before = _snapshot(stats)
        rec = _write_shard(shard_dir, k, (start, end), end_digest, group_docs, group_bounds,
                           vectors, [r for _, r in skipped], spec, delta)
        records.append(rec)
        _write_json(out / "progress.json", {"shards": k + 1, "inputs_consumed": end,
                                            "chunks": sum(r["rows"] for r in records)})
        k += 1
        if on_shard is not None:
            on_shard(rec)

    for g in iter_embed(documents(), [strat], encoder, modes=(mode,), normalize=normalize,
                        include_special=include_special, macro_windows=macro_windows, group_tokens=group_tokens,
                        progress=progress, stats=stats):
        n_docs = len(g.documents) + len(g.skipped)
        claimed = {}
        end, end_digest = None, None
        for _ in range(n_docs):
            pos, doc_id, src, dig = doc_queue.popleft()
            claimed[doc_id] = (pos, src)
            end, end_digest = pos + 1, dig
        if end is None:  # a group always holds at least one document
            raise RuntimeError("pipeline yielded an empty group")
        got = [d.doc_id for d in g.documents] + [s.doc_id for s in g.skipped]
        if set(got) != set(claimed):
            raise RuntimeError(f"pipeline group does not match the input order: {sorted(set(got) ^ set(claimed))[:5]}")
        vecs = g.vectors[spec].get(mode)
        if vecs is None:
            vecs = np.zeros((0, dim), np.float32)
        flush(g.documents, g.boundaries[spec], vecs, g.skipped, end, end_digest, claimed)
    if doc_queue:
        raise RuntimeError(f"{len(doc_queue)} documents read but not returned by the pipeline")
    if skip_queue or not records:
        # trailing skipped inputs after the last group (or inputs without any document)
        end = skip_queue[-1][0] + 1 if skip_queue else state["consumed"]
        end_digest = skip_queue[-1][2] if skip_queue else state["digest"]
        flush([], [], np.zeros((0, dim), np.float32), [], end, end_digest, {})

    return _assemble(out, records, settings, index_spec, dim, header or {}, t_start)


# ---------------------------------------------------------------------------------------------------- assembly
def _new_index(spec: IndexSpec, dim: int):
    import faiss

    if spec.gpu == "on":
        from latechunk.export import faiss_gpu_available

        if not faiss_gpu_available():
            raise ValueError("gpu='on' but this faiss has no GPU support or sees no GPU (pip install latechunk[gpu])")
    if spec.kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, spec.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = spec.ef_construction
        index.hnsw.efSearch = spec.ef_search
        return index
    return faiss.IndexFlatIP(dim)


def _chunk_schema():
    return chunk_table([], [], "").schema


def _assemble(out: Path, records: list[dict], settings: dict, spec: IndexSpec, dim: int, header: dict,
              t_start: float) -> dict:
    """Build ``index.faiss``, ``chunks.parquet`` and ``manifest.json`` from the shards, one shard at a time."""
    import faiss
    import pyarrow.parquet as pq

    shard_dir = out / "shards"
    t0 = time.perf_counter()
    index = _new_index(spec, dim)
    for rec in records:
        if rec["rows"]:
            v = np.load(shard_dir / f"{rec['name']}.npy", mmap_mode="r", allow_pickle=False)
            index.add(as_float32_rows(v, normalize=spec.metric == "cosine"))
    tmp = out / "index.faiss.tmp"
    faiss.write_index(index, str(tmp))
    _commit(tmp, out / "index.faiss")
    ntotal = int(index.ntotal)
    del index
    _fault("assemble-index")

    tmp = out / "chunks.parquet.tmp"
    with pq.ParquetWriter(tmp, _chunk_schema()) as writer:
        for i, rec in enumerate(records):
            table = pq.read_table(shard_dir / f"{rec['name']}.parquet")
            if table.num_rows:
                writer.write_table(table)
            if i == 0:
                _fault("assemble-chunks.tmp")
    _commit(tmp, out / "chunks.parquet")

    documents = [d for rec in records for d in rec["documents"]]
    skipped = [s for rec in records for s in rec["skipped"]]
    n_in = records[-1]["inputs"][1] if records else 0
    if len(documents) + len(skipped) != n_in:
        raise RuntimeError(f"accounting: {n_in} input items but {len(documents)} embedded + {len(skipped)} skipped")
    n_chunks = sum(d["chunks"] for d in documents)
    if n_chunks != ntotal:
        raise RuntimeError(f"accounting: {n_chunks} chunks listed but {ntotal} vectors in the index")
    seconds: dict[str, float] = {}
    for rec in records:
        for key, v in rec["stats"]["seconds"].items():
            seconds[key] = seconds.get(key, 0.0) + v
    seconds["assemble"] = time.perf_counter() - t0
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    manifest = {
        "format": MANIFEST_FORMAT,
        "created": run.get("created", ""),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        **header,
        "mode": settings["mode"],
        "normalize": settings["normalize"],
        "include_special": settings["include_special"],
        "macro_windows": settings["macro_windows"],
        "dim": dim,
        "index": {**spec.to_dict(), "ntotal": ntotal, "file": "index.faiss"},
        "inputs_from_out": settings["inputs_from_out"],
        "group_tokens": settings["group_tokens"],
        "counts": {
            "documents_in": n_in,
            "documents_embedded": len(documents),
            "documents_skipped": len(skipped),
            "chunks": n_chunks,
            "content_tokens": sum(r["stats"]["content_tokens"] for r in records),
            "tokens_encoded": sum(r["stats"]["tokens_encoded"] for r in records),
            "forward_calls": sum(r["stats"]["forward_calls"] for r in records),
        },
        "documents": documents,
        "skipped": skipped,
        "shards": [
            {"name": r["name"], "inputs": r["inputs"], "rows": r["rows"],
             "sha256": sha256_file(shard_dir / f"{r['name']}.json")}
            for r in records
        ],
        "seconds": {k: round(v, 3) for k, v in seconds.items()} | {"total": round(time.time() - t_start, 3)},
    }
    _write_json(out / "manifest.json", manifest, indent=2)
    return manifest

