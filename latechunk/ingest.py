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
    ranks/                  several processes only, removed when the run is complete: ``go.json`` (rank 0: the
                            folder is ready) and ``R.json`` per rank (running, done or failed; pid, device, progress)

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

Several processes (one per GPU on one machine: ``torchrun --nproc-per-node N -m latechunk embed ...`` or
``accelerate launch -m latechunk embed ...``; :func:`dist_env` reads ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``, the
CLI puts rank r on ``cuda:LOCAL_RANK``). Every rank reads and tokenizes the whole input stream and so forms the
same groups as a single process (groups depend on token counts alone), but chunks, encodes and writes only the
groups ``k % WORLD_SIZE == RANK``, as shard ``k`` under the single-process name; the others pass by as light
records that keep the input positions and the running digest right (``select_group`` of
:func:`~latechunk.pipeline.iter_embed`). The file system is the rendezvous, no ``torch.distributed``:

- rank 0 checks and prepares the folder (``--force``/``--resume`` as above), then writes ``ranks/go.json``; the
  others wait for a ``go.json`` newer than their own process (a stale one of an earlier run is older) whose rank 0
  still runs, check that ``run.json`` holds their own settings, and start. Before that they touch nothing in
  ``DIR`` and refuse what rank 0 will refuse (a non-empty folder without ``--force``, other settings on resume);
- each rank keeps ``ranks/R.json`` up to date and marks it ``failed`` with the error when it fails; every rank
  looks at the others once per group, so a failed rank, or one whose process is gone without finishing (SIGKILL,
  out of memory: seen from its pid), stops rank 0 with an error naming it, and a failed rank 0 stops the others;
- rank 0 then waits for every shard ``.json`` (each must cover exactly the input items rank 0 put in that group)
  and every rank's ``done`` (same number of groups, same input digest), and assembles exactly as a single process
  does; the manifest records ``world_size``. Any wait gives up after ``$LATECHUNK_RANK_TIMEOUT`` seconds (default
  1800) without progress.

``--resume`` with several ranks: rank 0 keeps every complete shard (checksums verified), gaps allowed, and deletes
the rest; each rank then skips the kept shards it meets and writes the missing ones of its own, after checking
that a kept shard covers exactly the input items (and digest) this run puts in that group. A shard does not
depend on which rank or how many wrote it, so a run may be resumed with another number of processes, or with a
single one (which keeps the shards up to the first gap and redoes the rest).

Tests: ``tests/test_ingest.py`` (SIGKILL at three points, resume, compare with an uninterrupted run),
``tests/test_multiprocess.py`` (two ranks against one process, a killed rank, resume with two ranks).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from latechunk.encoder import Encoder
from latechunk.export import IndexSpec, as_float32_rows, chunk_table, new_index
from latechunk.io import count_inputs, iter_inputs
from latechunk.pipeline import GroupResult, iter_embed, new_stats
from latechunk.strategies.base import get_strategy
from latechunk.types import Document, Skipped

__all__ = [
    "MANIFEST_FORMAT",
    "OUTPUT_FILES",
    "RUN_FORMAT",
    "RankError",
    "check_shard_files",
    "dist_env",
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
OUTPUT_FILES = ("index.faiss", "chunks.parquet", "manifest.json", "run.json", "progress.json", "shards", "ranks")
#: test hook: ``LATECHUNK_FAULT_KILL_AT=<event>`` makes the process SIGKILL itself at that event (see _fault)
FAULT_ENV = "LATECHUNK_FAULT_KILL_AT"
RANKS_FORMAT = "latechunk-ranks/1"
#: several processes: seconds to wait without progress from the others before giving up
RANK_TIMEOUT_ENV = "LATECHUNK_RANK_TIMEOUT"
DEFAULT_RANK_TIMEOUT = 1800.0
_POLL_S = 0.1


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
    """Check a shard's data files against its record: each listed file exists with the recorded size in bytes
    (and sha256 with ``verify_hashes``), and the record lists exactly its ``.parquet`` and ``.npy``.

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


def _remove_output(out: Path) -> None:
    for name in OUTPUT_FILES:
        p = out / name
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
        tmp = out / f"{name}.tmp"
        if tmp.exists():
            tmp.unlink()


def prepare_output(out: str | os.PathLike, settings: dict, force: bool = False, resume: bool = False,
                   scan: bool = True) -> list[dict]:
    """Make ``out`` ready for a run; return the complete shards to keep (``[]`` for a fresh run, or with
    ``scan=False``, when the caller scans the shards itself).

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
        kept, _ = scan_shards(out) if scan else ([], [])
        return kept
    if non_empty and not force:
        raise ValueError(f"output folder {out} exists and is not empty; pass --force to overwrite "
                         "(or --resume to continue an interrupted run)")
    out.mkdir(parents=True, exist_ok=True)
    if force:
        foreign = _foreign_files(out)
        if foreign:
            raise ValueError(
                f"{out} holds {', '.join(foreign[:5])} but no latechunk run.json or manifest.json, so --force "
                "will not delete them; choose another --out folder"
            )
        _remove_output(out)
    (out / "shards").mkdir(exist_ok=True)
    _write_json(out / "run.json", {"format": RUN_FORMAT, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                   "settings": settings})
    return kept


def _foreign_files(out: Path) -> list[str]:
    """Files that ``--force`` would delete but latechunk may not have written: in a folder that is not a
    latechunk output, top-level files named like ours, and anything in ``shards/`` not named like a shard."""
    if _is_latechunk_output(out):
        return []
    bad = [n for n in OUTPUT_FILES if n != "shards" and (out / n).exists()]
    if (out / "shards").is_dir():
        bad += [f"shards/{p.name}" for p in sorted((out / "shards").iterdir())
                if not p.is_file() or _shard_index(p.name) is None]
    return bad


def _is_latechunk_output(out: Path) -> bool:
    """True when ``out`` holds a run.json or manifest.json written by latechunk (so --force may clear it)."""
    for name in ("run.json", "manifest.json"):
        try:
            obj = json.loads((out / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(obj, dict) and str(obj.get("format", "")).startswith("latechunk"):
            return True
    return False


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
    _clean_shards(out, lambda i: i < k)


def _clean_shards(out: Path, keep: Callable[[int], bool]) -> None:
    """Delete temp files, the shard files whose number ``keep`` rejects, the assembled files (they are
    rebuilt) and the rank markers of an earlier run."""
    shard_dir = out / "shards"
    shard_dir.mkdir(exist_ok=True)
    for f in shard_dir.iterdir():
        idx = _shard_index(f.name)
        if f.name.endswith(".tmp") or idx is None or not keep(idx):
            f.unlink()
    for name in ("index.faiss", "chunks.parquet", "manifest.json", "progress.json"):
        for p in (out / name, out / f"{name}.tmp"):
            if p.exists():
                p.unlink()
    if (out / "ranks").is_dir():
        shutil.rmtree(out / "ranks")


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
    rank: int | None = None,
    world_size: int | None = None,
    rank_timeout: float | None = None,
) -> dict | None:
    """Chunk, embed and index ``inputs`` into ``out`` through checksummed shards; resumable after a kill.

    Args:
        inputs: Files, folders, ``.jsonl``, BEIR ``corpus.jsonl`` or ``.parquet`` (see :func:`iter_inputs`).
        out: Output folder (see the module docstring for its layout).
        strategy: One strategy SPEC.
        encoder: The :class:`Encoder`.
        mode: ``"late"`` or ``"naive"``.
        normalize: L2-normalise chunk vectors (as in :func:`~latechunk.pipeline.embed`).
        include_special: Late mode: the first/last chunk absorb the frame tokens (as in ``embed``).
        macro_windows: Encode long documents in macro windows; off: skip them, listed (as in ``embed``).
        group_tokens: Token budget of one pipeline group, i.e. of one shard (bounds memory).
        index_spec: FAISS index settings (default flat, cosine when ``normalize``).
        force: Remove a previous output in ``out`` first.
        resume: Continue the interrupted run in ``out`` (same settings required).
        progress: Show a progress bar.
        header: Extra manifest fields (model, strategy, versions, ...), written as given.
        on_shard: Called with each new shard record after it is committed (by the process that wrote it).
        rank: This process's place among ``world_size`` processes sharing the run (default ``$RANK``, see
            :func:`dist_env`). With ``world_size > 1`` this process writes the shards ``k`` with
            ``k % world_size == rank``, and rank 0 assembles (module docstring).
        world_size: Number of processes sharing the run (default ``$WORLD_SIZE``, else 1).
        rank_timeout: Several processes: seconds a process waits without any progress from the others
            (default ``$LATECHUNK_RANK_TIMEOUT`` or 1800).

    Returns:
        The manifest (also written to ``out/manifest.json``); ``None`` on ranks other than 0.

    Raises:
        ValueError: on bad settings, a folder that may not be written (see :func:`prepare_output`), or inputs
            that changed under a resumed run.
        RankError: several processes: another one failed, died or stalled, or they disagree on the groups.
    """
    t_start = time.time()
    strat = get_strategy(strategy)
    spec = strat.spec
    if mode not in ("late", "naive"):
        raise ValueError(f"mode must be 'late' or 'naive', got {mode!r}")
    if group_tokens < 1:
        raise ValueError(f"group_tokens must be >= 1, got {group_tokens}")
    if rank is None or world_size is None:
        env_rank, env_world, _ = dist_env()
        rank = env_rank if rank is None else rank
        world_size = env_world if world_size is None else world_size
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is outside 0..{world_size - 1} (world size {world_size})")
    index_spec = index_spec or IndexSpec(metric="cosine" if normalize else "ip")
    out = Path(out)
    settings = run_settings(inputs, out, spec, encoder, mode, normalize, include_special, macro_windows,
                            group_tokens, index_spec)
    run = _Run(inputs, out, strat, encoder, mode, normalize, include_special, macro_windows, group_tokens, progress,
               on_shard)
    if world_size > 1:
        timeout = float(os.environ.get(RANK_TIMEOUT_ENV, DEFAULT_RANK_TIMEOUT)) if rank_timeout is None else rank_timeout
        return _ingest_rank(run, settings, index_spec, header or {}, force, resume, rank, world_size, timeout, t_start)

    records = prepare_output(out, settings, force=force, resume=resume)
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

    def write(k: int, inputs_: tuple[int, int], end_digest: str, g: GroupResult | None, skipped: list[dict]) -> None:
        records.append(run.write(k, inputs_, end_digest, g, skipped))
        _write_json(out / "progress.json", {"shards": k + 1, "inputs_consumed": inputs_[1],
                                            "chunks": sum(r["rows"] for r in records)})

    run.stream(items, consumed, digest, len(records), None, write)
    return _assemble(out, records, settings, index_spec, encoder.dim, header or {}, t_start)


class _Run:
    """One process's pass over the inputs: the pipeline, the input bookkeeping and the shard writer."""

    def __init__(self, inputs, out: Path, strat, encoder: Encoder, mode: str, normalize: bool, include_special: bool,
                 macro_windows: bool, group_tokens: int, progress: bool, on_shard) -> None:
        self.inputs, self.out, self.strat, self.encoder = inputs, out, strat, encoder
        self.mode, self.normalize, self.include_special = mode, normalize, include_special
        self.macro_windows, self.group_tokens, self.progress, self.on_shard = macro_windows, group_tokens, progress, on_shard
        self.stats = new_stats()
        self.before = _snapshot(self.stats)

    def write(self, k: int, inputs: tuple[int, int], end_digest: str, g: GroupResult | None,
              skipped: list[dict]) -> dict:
        """Write group ``g`` (None: a shard of trailing skipped items only) as shard ``k``; return its record."""
        spec, dim = self.strat.spec, self.encoder.dim
        docs, bounds, vecs = (g.documents, g.boundaries[spec], g.vectors[spec].get(self.mode)) if g else ([], [], None)
        if vecs is None:
            vecs = np.zeros((0, dim), np.float32)
        delta = _stats_delta(self.stats, self.before, self.mode)
        self.before = _snapshot(self.stats)
        rec = _write_shard(self.out / "shards", k, inputs, end_digest, docs, bounds, vecs, skipped, spec, delta)
        if self.on_shard is not None:
            self.on_shard(rec)
        return rec

    def stream(self, items: Iterator, consumed: int, digest: str, k0: int,
               select: Callable[[int], bool] | None, on_group: Callable) -> tuple[int, int, str]:
        """Run the pipeline over ``items`` (the input items from position ``consumed``; ``digest`` is the running
        digest before them) and call ``on_group(k, (start, end), end_digest, group, skipped)`` for each shard
        ``k = k0, k0 + 1, ...`` in order: ``group`` is the pipeline's GroupResult (``None`` for a last shard of
        trailing skipped items, or of no items at all), ``skipped`` its skipped records in input order.
        ``select(k)`` (default all) picks the groups to chunk and encode; the others come as light records
        (``group.selected`` False). Returns ``(shards, items consumed, digest after them)``.
        """
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

        k, prev_end = k0, consumed
        bar = None
        if self.progress:  # input items, counted ahead (skipped ones and other ranks' groups included)
            from tqdm.auto import tqdm

            total = count_inputs(self.inputs)
            bar = tqdm(total=max(total, consumed), initial=consumed, unit="doc", desc="embed")
        groups = iter_embed(documents(), [self.strat], self.encoder, modes=(self.mode,), normalize=self.normalize,
                            include_special=self.include_special, macro_windows=self.macro_windows,
                            group_tokens=self.group_tokens, progress=False, stats=self.stats,
                            select_group=None if select is None else (lambda i: select(k0 + i)))
        try:
            with contextlib.closing(groups):  # on an error, stop the tokenizer thread before it propagates
                for g in groups:
                    before = prev_end
                    k, prev_end = self._group(g, k, k0, prev_end, doc_queue, skip_queue, on_group)
                    if bar is not None:
                        bar.update(prev_end - before)
        finally:
            if bar is not None:
                bar.update(max(0, state["consumed"] - bar.n))
                bar.close()
        if doc_queue:
            raise RuntimeError(f"{len(doc_queue)} documents read but not returned by the pipeline")
        if skip_queue or k == 0:
            # trailing skipped inputs after the last group (or inputs without any document)
            end = skip_queue[-1][0] + 1 if skip_queue else state["consumed"]
            end_digest = skip_queue[-1][2] if skip_queue else state["digest"]
            on_group(k, (prev_end, end), end_digest, None, [r for _, r, _ in skip_queue])
            k += 1
        return k, state["consumed"], state["digest"]

    def _group(self, g: GroupResult, k: int, k0: int, prev_end: int, doc_queue: deque, skip_queue: deque,
               on_group: Callable) -> tuple[int, int]:
        """Claim group ``g``'s input items from the reader's queues and hand it to ``on_group`` as shard ``k``."""
        if k0 + g.index != k:
            raise RuntimeError(f"pipeline group {g.index} arrived where group {k - k0} was expected")
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
        skipped = []
        while skip_queue and skip_queue[0][0] < end:
            pos, rec_, _ = skip_queue.popleft()
            skipped.append((pos, rec_))
        for s in g.skipped:
            pos, src = claimed[s.doc_id]
            skipped.append((pos, {"doc_id": s.doc_id, "reason": s.reason, "source": s.source or src}))
        skipped.sort(key=lambda t: t[0])
        on_group(k, (prev_end, end), end_digest, g, [r for _, r in skipped])
        self.before = _snapshot(self.stats)
        return k + 1, end


# ---------------------------------------------------------------------------------------------------- ranks
class RankError(RuntimeError):
    """Several processes: another one failed, died or stalled, or the processes disagree about the groups."""


def dist_env(environ: dict | None = None) -> tuple[int, int, int]:
    """``(rank, world_size, local_rank)`` from ``$RANK``, ``$WORLD_SIZE`` and ``$LOCAL_RANK`` (set for each
    process by ``torchrun`` and ``accelerate launch``); ``(0, 1, 0)`` when unset. ``LOCAL_RANK`` defaults to
    ``RANK``.

    Raises:
        ValueError: on a value that is not an integer or out of range.
    """
    env = os.environ if environ is None else environ

    def get(name: str, default: int) -> int:
        v = str(env.get(name, "")).strip()
        if not v:
            return default
        try:
            return int(v)
        except ValueError:
            raise ValueError(f"${name} must be an integer, got {v!r}") from None

    world = get("WORLD_SIZE", 1)
    rank = get("RANK", 0)
    local = get("LOCAL_RANK", rank)
    if world < 1:
        raise ValueError(f"$WORLD_SIZE must be >= 1, got {world}")
    if not 0 <= rank < world:
        raise ValueError(f"$RANK={rank} is outside 0..{world - 1} ($WORLD_SIZE={world})")
    if local < 0:
        raise ValueError(f"$LOCAL_RANK must be >= 0, got {local}")
    return rank, world, local


_T_IMPORT = time.time()


def _process_start() -> float:
    """Wall-clock time at which this process started (Linux: from /proc, to a clock tick, from monotonic
    counters so clock steps since boot do not matter); elsewhere the time this module was imported."""
    try:
        stat = Path("/proc/self/stat").read_text()
        ticks = int(stat[stat.rindex(")") + 2:].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return _T_IMPORT


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` (on this machine) still runs; a zombie (exited, not yet reaped) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2] not in "ZX"
    except (OSError, ValueError, IndexError):
        return True


def _read_json(path: Path) -> dict | None:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return obj if isinstance(obj, dict) else None


def _peer(out: Path, r: int, run: str, host: str) -> dict | None:
    """Rank ``r``'s status in run ``run`` (``None`` before it wrote one).

    Raises:
        RankError: when it failed, or its process is gone (same machine) without having finished.
    """
    path = out / "ranks" / f"{r}.json"
    st = _read_json(path)
    if st is None or st.get("run") != run:
        return None
    if st.get("state") not in ("done", "failed") and st.get("host") == host and not _pid_alive(int(st.get("pid", 0))):
        st = _read_json(path) or st  # it may have finished between the two looks: the status is written first
        if st.get("state") not in ("done", "failed"):
            raise RankError(f"rank {r} (pid {st.get('pid')}, {st.get('device')}) exited without finishing "
                            "(killed? out of memory?); the complete shards are kept: run again with --resume")
    if st.get("state") == "failed":
        raise RankError(f"rank {r} failed: {st.get('error', '?')}")
    return st


def _complete_shards(out: Path) -> dict[int, dict]:
    """Every complete shard of ``out`` by number, gaps allowed (records parse and name themselves; data files
    have the recorded sizes and sha256). Whether each continues the input stream is checked by the run."""
    shard_dir = out / "shards"
    found: dict[int, dict] = {}
    if not shard_dir.is_dir():
        return found
    for jpath in sorted(shard_dir.glob("*.json")):
        k = _shard_index(jpath.name)
        if k is None or jpath.name != f"{_shard_name(k)}.json":
            continue
        rec = _read_json(jpath)
        if rec is None or rec.get("shard") != k or rec.get("name") != _shard_name(k):
            continue
        try:
            if check_shard_files(shard_dir, rec, True):
                continue
        except (KeyError, TypeError, AttributeError):
            continue
        found[k] = rec
    return found


def _precheck_rank(out: Path, settings: dict, force: bool, resume: bool, since: float) -> None:
    """Ranks > 0, before waiting for rank 0: refuse what rank 0 will refuse, without touching ``out``.

    Entries of ``out`` older than this process were there before the run started (rank 0's are newer).
    """
    if force or not out.is_dir():
        return
    old = set()
    for p in out.iterdir():
        try:
            if p.stat().st_mtime < since:
                old.add(p.name)
        except OSError:
            pass
    if not resume and old:
        raise ValueError(f"output folder {out} exists and is not empty; pass --force to overwrite "
                         "(or --resume to continue an interrupted run)")
    if resume and "run.json" in old:
        prev = _read_json(out / "run.json") or {}
        diff = _diff_settings(prev.get("settings", {}), settings)
        if diff:
            raise ValueError("--resume with settings that differ from the interrupted run: " + "; ".join(diff)
                             + ". Use the same options, or --force to start over")


def _wait_go(out: Path, since: float, world: int, timeout: float, host: str) -> dict:
    """Ranks > 0: wait until rank 0 has made ``out`` ready (a ``ranks/go.json`` of this run) and return it.

    A ``go.json`` counts when it is newer than this process (launchers start the ranks together, and rank 0
    writes it only after loading its model) and the rank 0 that wrote it is still running.
    """
    path = out / "ranks" / "go.json"
    t_end = time.monotonic() + timeout
    while True:
        try:
            fresh = path.stat().st_mtime >= since
        except OSError:
            fresh = False
        go = _read_json(path) if fresh else None
        if go is not None and (go.get("host") != host or _pid_alive(int(go.get("pid", 0)))):
            if go.get("world_size") != world:
                raise RankError(f"rank 0 runs with world size {go.get('world_size')}, this rank with {world}")
            return go
        if time.monotonic() > t_end:
            raise RankError(f"rank 0 did not make {out} ready within {timeout:.0f} s (no ranks/go.json of this run); "
                            f"see rank 0's error, and give every rank the same --out (${RANK_TIMEOUT_ENV} sets the wait)")
        time.sleep(_POLL_S)


def _ingest_rank(run: _Run, settings: dict, index_spec: IndexSpec, header: dict, force: bool, resume: bool,
                 rank: int, world: int, timeout: float, t_start: float) -> dict | None:
    """One of ``world`` processes: encode the groups ``k % world == rank``; rank 0 prepares and assembles."""
    out = run.out
    host = socket.gethostname()
    rdir = out / "ranks"
    if rank == 0:
        prepare_output(out, settings, force=force, resume=resume, scan=False)
        kept = _complete_shards(out) if resume else {}
        _clean_shards(out, lambda i: i in kept)
        rdir.mkdir(exist_ok=True)
        token = uuid.uuid4().hex
        _write_json(rdir / "go.json", {"format": RANKS_FORMAT, "run": token, "world_size": world,
                                       "pid": os.getpid(), "host": host, "kept": sorted(kept)})
    else:
        since = _process_start()
        _precheck_rank(out, settings, force, resume, since)
        go = _wait_go(out, since, world, timeout, host)
        token = go["run"]
        kept = {}
    status = {"format": RANKS_FORMAT, "run": token, "rank": rank, "world_size": world, "pid": os.getpid(),
              "host": host, "device": str(run.encoder.device), "state": "running", "shards": 0, "inputs_consumed": 0}

    def set_status(**kw) -> None:
        status.update(kw)
        _write_json(rdir / f"{rank}.json", status)

    set_status()
    try:
        if rank != 0:
            prev = _read_json(out / "run.json") or {}
            diff = _diff_settings(prev.get("settings", {}), settings)
            if diff:
                raise ValueError(f"rank {rank} was started with other options than rank 0: " + "; ".join(diff))
            for k in go.get("kept", []):
                kept[k] = _read_json(out / "shards" / f"{_shard_name(k)}.json") or {}
        peers = [r for r in range(world) if r != rank] if rank == 0 else [0]
        expected: dict[int, tuple[list[int], str]] = {}
        records: dict[int, dict] = dict(kept)

        def on_group(k: int, inputs_: tuple[int, int], end_digest: str, g: GroupResult | None,
                     skipped: list[dict]) -> None:
            for r in peers:
                _peer(out, r, token, host)
            expected[k] = (list(inputs_), end_digest)
            if k in kept:
                if kept[k].get("inputs") != list(inputs_) or kept[k].get("inputs_digest") != end_digest:
                    raise ValueError(f"--resume: the inputs changed since the interrupted run (shards/{_shard_name(k)} "
                                     f"covered input items {kept[k].get('inputs')}, now {list(inputs_)}); "
                                     "pass --force to start over")
            elif g.selected if g is not None else k % world == rank:
                records[k] = run.write(k, inputs_, end_digest, g, skipped)
                set_status(shards=status["shards"] + 1, inputs_consumed=inputs_[1])

        n, consumed, digest = run.stream(iter_inputs(run.inputs), 0, "", 0,
                                         lambda k: k % world == rank and k not in kept, on_group)
        beyond = sorted(k for k in kept if k >= n)
        if beyond:
            raise ValueError(f"--resume: the inputs changed since the interrupted run (they now form {n} shards, "
                             f"but shards/{_shard_name(beyond[0])} is complete); pass --force to start over")
        if rank != 0:
            set_status(state="done", groups=n, inputs_consumed=consumed, digest=digest)
            return None
        set_status(state="collecting", groups=n, inputs_consumed=consumed, digest=digest)
        ordered = _collect(out, expected, records, world, token, host, timeout, digest)
        manifest = _assemble(out, ordered, settings, index_spec, run.encoder.dim, header, t_start, world_size=world)
        set_status(state="done")
    except BaseException as err:
        try:
            set_status(state="failed", error=f"{type(err).__name__}: {err}")
        except OSError:
            pass
        raise
    shutil.rmtree(rdir, ignore_errors=True)
    return manifest


def _collect(out: Path, expected: dict[int, tuple[list[int], str]], records: dict[int, dict], world: int,
             token: str, host: str, timeout: float, digest: str) -> list[dict]:
    """Rank 0: wait for every shard and every rank to finish; return the shard records in order.

    Each shard record must cover the input items rank 0 put in that group (same range, same running digest),
    and each rank must end having seen the same number of groups and the same inputs.
    """
    shard_dir = out / "shards"
    n = len(expected)
    pending = sorted(k for k in range(n) if k not in records)
    finished: set[int] = set()
    last = time.monotonic()
    while True:
        progressed = False
        for k in list(pending):
            rec = _read_json(shard_dir / f"{_shard_name(k)}.json")
            if rec is None:
                continue
            want_inputs, want_digest = expected[k]
            if rec.get("shard") != k or rec.get("inputs") != want_inputs or rec.get("inputs_digest") != want_digest:
                raise RankError(f"shards/{_shard_name(k)}.json from rank {k % world} covers input items "
                                f"{rec.get('inputs')}, but rank 0 formed that group from {want_inputs}: the ranks "
                                "read different inputs")
            bad = check_shard_files(shard_dir, rec, verify_hashes=False)
            if bad:
                raise RankError("; ".join(bad))
            records[k] = rec
            pending.remove(k)
            progressed = True
        for r in range(1, world):
            if r in finished:
                continue
            st = _peer(out, r, token, host)
            if st is None or st.get("state") != "done":
                continue
            if st.get("groups") != n or st.get("digest") != digest:
                raise RankError(f"rank {r} read {st.get('inputs_consumed')} input items into {st.get('groups')} "
                                f"groups, rank 0 {expected[n - 1][0][1] if n else 0} into {n}: the ranks read "
                                "different inputs")
            finished.add(r)
            progressed = True
        if not pending and len(finished) == world - 1:
            return [records[k] for k in range(n)]
        lost = [k for k in pending if k % world in finished]
        if lost and not progressed:
            raise RankError(f"rank {lost[0] % world} finished, but shards/{_shard_name(lost[0])}.json is missing")
        now = time.monotonic()
        if progressed:
            last = now
        elif now - last > timeout:
            waiting = sorted({k % world for k in pending} | (set(range(1, world)) - finished))
            raise RankError(f"no progress from rank(s) {waiting} for {timeout:.0f} s (waiting for "
                            f"{len(pending)} shard(s), first shards/{_shard_name(pending[0]) if pending else '-'}); "
                            f"${RANK_TIMEOUT_ENV} sets the wait; the complete shards are kept for --resume")
        time.sleep(_POLL_S)


# ---------------------------------------------------------------------------------------------------- assembly
def _chunk_schema():
    return chunk_table([], [], "").schema


def _assemble(out: Path, records: list[dict], settings: dict, spec: IndexSpec, dim: int, header: dict,
              t_start: float, world_size: int = 1) -> dict:
    """Build ``index.faiss``, ``chunks.parquet`` and ``manifest.json`` from the shards, one shard at a time."""
    import faiss
    import pyarrow.parquet as pq

    shard_dir = out / "shards"
    t0 = time.perf_counter()
    index = new_index(spec, dim)
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
        "world_size": world_size,
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

