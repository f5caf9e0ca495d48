"""Output-folder policy: a fresh run, ``--force`` (never deletes files latechunk did not write) or ``--resume``.

The checks live here once each: :func:`check_not_empty` (a non-empty folder is never overwritten without a
flag), :func:`check_same_settings` (the ``run.json`` settings diff of ``--resume``) and :func:`foreign_files`
(what ``--force`` refuses to delete), and :func:`writer_lock`: one writer per folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from latechunk.config.embed import RECORDED_RUN_OPTIONS
from latechunk.ingest.files import sha256_file, write_json
from latechunk.ingest.shards import scan_shards
from latechunk.output import LOCK_FILE, OUTPUT_FILES, RUN_FORMAT, SHARD_FILE, SHARDS_DIR, OutputFolder

__all__ = ["APPENDED_DIR", "FolderLocked", "check_not_empty", "check_same_settings", "check_unlocked",
           "diff_settings", "foreign_files", "prepare_output", "writer_lock"]

APPENDED_DIR = "appended"
"""Folder of an output folder holding the documents appended from Python (``NNNNN.jsonl``, one per append;
:mod:`latechunk.ingest.append`). ``--force`` removes those files with the rest of the output."""


class FolderLocked(ValueError):
    """Another process is writing the output folder (it holds :data:`~latechunk.output.LOCK_FILE`)."""


#: locks this process holds: resolved folder -> [open lock file, depth] (re-entrant within a process: ``Index.add``
#: holds the lock around its document file and the append it runs)
_HELD: dict[str, list] = {}


def _lock_message(out: Path, fh) -> str:
    try:
        fh.seek(0)
        pid = fh.read().strip()
    except OSError:
        pid = ""
    holder = f" (pid {pid})" if pid.isdigit() else ""
    return (f"{out} is being written by another latechunk process{holder}: one writer at a time (embed, --resume, "
            f"--append, reindex, Index.add); wait for it to finish, then run again")


@contextlib.contextmanager
def writer_lock(out: str | os.PathLike) -> Iterator[None]:
    """Hold the folder's writer lock: an exclusive, non-blocking ``fcntl.flock`` on ``out/.latechunk.lock``
    (:data:`~latechunk.output.LOCK_FILE`), taken before anything else is written and released when the block
    ends (or the process dies: the kernel releases it). The file holds the writer's pid and is never removed
    (removing a lock file lets two writers lock two different files). Re-entrant within one process.

    Several processes of one run (``torchrun`` ranks): rank 0 holds it for the run (:func:`latechunk.ingest.ingest`).

    Args:
        out: The output folder (created when missing).

    Yields:
        Nothing; the lock is held inside the block.

    Raises:
        FolderLocked: at once, when another process holds the lock (the message names the folder and its pid).
        ValueError: if ``out`` exists and is not a folder, or the folder or its lock file cannot be created
            (a read-only folder or file system).
    """
    import fcntl

    out = Path(out)
    key = str(out.resolve())
    held = _HELD.get(key)
    if held is not None:
        held[1] += 1
        try:
            yield
        finally:
            held[1] -= 1
        return
    if out.exists() and not out.is_dir():
        raise ValueError(f"output path {out} exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        fh = open(out / LOCK_FILE, "a+", encoding="ascii")  # noqa: SIM115 (held across the block)
    except OSError as err:  # a read-only folder or file system: one clear line, not a traceback
        raise ValueError(f"cannot write to the output folder {out}: {err.strerror or err} (embed, --resume, "
                         "--append, reindex and Index.add need a writable folder; search, verify and export only "
                         "read it)") from err
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderLocked(_lock_message(out, fh)) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        _HELD[key] = [fh, 1]
        try:
            yield
        finally:
            del _HELD[key]
    finally:
        fh.close()  # closing the file releases the flock


def check_unlocked(out: str | os.PathLike) -> None:
    """Fail early (before a model loads) when another process is writing ``out``; takes no lock itself.

    Args:
        out: The output folder (nothing happens when it or its lock file does not exist).

    Raises:
        FolderLocked: naming the folder and the writer's pid.
    """
    path = Path(out) / LOCK_FILE
    if not path.is_file() or str(Path(out).resolve()) in _HELD:
        return
    with writer_lock(out):
        pass


def check_not_empty(out: Path, entries: Iterable[str] | None = None) -> None:
    """Refuse to write into a non-empty folder without ``--force``/``--resume``.

    Args:
        out: The output folder.
        entries: The entries that count (default: everything in ``out`` but hidden names: the writer lock,
            :data:`~latechunk.output.LOCK_FILE`, and a ``.gitignore`` or ``.DS_Store`` of the user's).

    Raises:
        ValueError: when there is any.
    """
    names = list(entries) if entries is not None else (
        [p.name for p in out.iterdir() if not p.name.startswith(".")] if out.is_dir() else [])
    if names:
        raise ValueError(f"output folder {out} exists and is not empty; pass --force to overwrite "
                         "(or --resume to continue an interrupted run)")


#: run.json keys recorded for the reader but never compared: they do not change a vector (the token budget per
#: forward batch: batches are padding-invariant), so a resumed run or an append may use another (e.g. a GPU's);
#: the model block's :data:`~latechunk.config.embed.RECORDED_RUN_OPTIONS`, which ``EmbedConfig.from_dict`` reads past
NOT_COMPARED = frozenset(f"model.{k}" for k in RECORDED_RUN_OPTIONS)


def diff_settings(old: dict, new: dict, prefix: str = "") -> list[str]:
    """The differences between two settings dicts (nested dicts compared key by key; :data:`NOT_COMPARED` keys
    left out).

    Args:
        old: The recorded settings.
        new: This run's settings.
        prefix: Prepended to every key path (used by the recursion; ``"model."`` for a nested block).

    Returns:
        One line per differing key, keys sorted: ``"a.b was X, now Y"``, a key that one side does not record
        ``"was not set"`` / ``"now not set"``; a key with its option beside it (``strategy (--strategy)``, the
        inputs as ``inputs`` (relative to the output folder)``).
    """
    out = []
    for key in sorted(set(old) | set(new)):
        if prefix + key in NOT_COMPARED:
            continue
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out.extend(diff_settings(a, b, f"{prefix}{key}."))
        elif a != b:
            was = "was not set" if key not in old else f"was {a!r}"
            now = "now not set" if key not in new else f"now {b!r}"
            out.append(f"{_setting_name(prefix + key)} {was}, {now}")
    return out


#: run.json keys by the embed option that sets them (the keys a user cannot map to an option alone)
_SETTING_OPTIONS = {
    "inputs_from_out": "inputs (relative to the output folder)", "strategy": "strategy (--strategy)",
    "mode": "mode (--mode)", "macro_window": "macro_window (--macro-window)",
    "macro_window_overlap": "macro_window_overlap (--macro-window-overlap)",
    "long_documents": "long_documents (--long-documents)", "include_special": "include_special (--include-special)",
    "normalize": "normalize (--normalize/--no-normalize)", "index.factory": "index.factory (--index)",
    "index.precision": "index.precision (--precision)", "index.truncate_dim": "index.truncate_dim (--truncate-dim)",
    "model.name": "model.name (--model)", "model.dtype": "model.dtype (--dtype)",
    "model.batch_tokens": "model.batch_tokens (--batch-tokens)", "model.backend": "model.backend (--backend)",
    "late_pooling": "late_pooling (--late-pooling)", "dedup": "dedup (--dedup)",
    "record_fields": "record_fields (--id-field/--text-field/--title-field)",
    "record_fields.id": "record_fields.id (--id-field)", "record_fields.text": "record_fields.text (--text-field)",
    "record_fields.title": "record_fields.title (--title-field)",
}


def _setting_name(key: str) -> str:
    return _SETTING_OPTIONS.get(key, key)


#: Settings a ``--resume`` may change: the index is built from the shards at assembly (they keep every float32
#: vector), so an index type that failed to train (too few vectors for ``PQ``) is replaced without encoding again.
RESUME_MAY_CHANGE = ("index",)


def check_same_settings(old: dict, new: dict, what: str = "--resume with settings that differ from the "
                        "interrupted run", may_change: tuple[str, ...] = RESUME_MAY_CHANGE) -> None:
    """Refuse settings that differ from a run's ``run.json`` settings, except :data:`RESUME_MAY_CHANGE`.

    Args:
        old: The recorded settings.
        new: This run's settings.
        what: How the message starts.
        may_change: Top-level settings left out of the comparison (an unfinished run's index; none for a
            finished one, whose index ``latechunk reindex`` changes).

    Raises:
        ValueError: naming every difference.
    """
    diff = diff_settings({k: v for k, v in old.items() if k not in may_change},
                         {k: v for k, v in new.items() if k not in may_change})
    if diff:
        raise ValueError(f"{what}: " + "; ".join(diff) + ". Use the same options, or --force to start over")


def _is_latechunk_output(out: Path) -> bool:
    """True when ``out`` holds a run.json or manifest.json written by latechunk (so --force may clear it)."""
    folder = OutputFolder(out)
    for path in (folder.run_path, folder.manifest_path):
        try:
            obj = folder.read_json(path)
        except ValueError:
            continue
        if str(obj.get("format", "")).startswith("latechunk"):
            return True
    return False


def foreign_files(out: Path) -> list[str]:
    """Files that ``--force`` would delete but latechunk may not have written: in a folder that is not a
    latechunk output, top-level files named like ours, and anything in ``shards/`` not named like a shard.

    Args:
        out: The output folder.

    Returns:
        Names relative to ``out`` (``shards/NAME`` inside ``shards/``); ``[]`` for a folder whose run.json or
        manifest.json says latechunk wrote it.
    """
    if _is_latechunk_output(out):
        return []
    bad = [n for n in OUTPUT_FILES if n != SHARDS_DIR and (out / n).exists()]
    shard_dir = out / SHARDS_DIR
    if shard_dir.is_dir():
        bad += [f"{SHARDS_DIR}/{p.name}" for p in sorted(shard_dir.iterdir())
                if not p.is_file() or OutputFolder.shard_number(p.name) is None]
    return bad


def check_force(out: str | Path) -> None:
    """Refuse ``--force`` into a folder it must not clear: one holding files named like latechunk's outputs
    without a latechunk run.json or manifest.json (:func:`foreign_files`), or a non-empty folder that is not a
    latechunk output (a folder of documents: an index written among them turned the folder into an "output
    folder" that later runs refused to read as input). A missing or empty folder, hidden files (``.gitignore``)
    and a run killed before its run.json (:func:`_holds_nothing`) pass.

    Args:
        out: The ``--out`` folder.

    Raises:
        ValueError: naming the folder and the files in the way.
    """
    out = Path(out)
    if not out.is_dir():
        return
    foreign = foreign_files(out)
    if foreign:
        raise ValueError(
            f"{out} holds {', '.join(foreign[:5])} but no latechunk run.json or manifest.json, so --force "
            "will not delete them; choose another --out folder"
        )
    others = _other_files(out)
    if others:
        raise ValueError(
            f"{out} is not a latechunk output folder (no run.json or manifest.json) and holds other files "
            f"({', '.join(others[:3])}{', ...' if len(others) > 3 else ''}): --force only replaces a previous "
            "latechunk output, it never writes an index among other files; choose a new or empty --out folder"
        )


def _other_files(out: Path) -> list[str]:
    """Names in a folder that is not a latechunk output which latechunk would not write there (hidden names such
    as ``.gitignore`` and the writer lock allowed); ``[]`` for a latechunk output or a folder of ours only."""
    if _is_latechunk_output(out) or _holds_nothing(out):
        return []
    ours = set(OUTPUT_FILES) | {f"{n}.tmp" for n in OUTPUT_FILES} | {LOCK_FILE, SHARDS_DIR, APPENDED_DIR}
    return sorted(p.name for p in out.iterdir() if p.name not in ours and not p.name.startswith("."))


def _holds_nothing(out: Path) -> bool:
    """True when ``out`` holds only an empty ``shards/`` and temp files of ours (a run killed at its start)."""
    for p in out.iterdir():
        if p.name == LOCK_FILE:
            continue
        if p.name == SHARDS_DIR and p.is_dir() and not any(p.iterdir()):
            continue
        if p.name.endswith(".tmp") and p.name[: -len(".tmp")] in OUTPUT_FILES:
            continue
        return False
    return True


def _remove_output(out: Path) -> None:
    appended = out / APPENDED_DIR  # only the files an append wrote (NNNNN.jsonl), then the folder if empty
    if appended.is_dir() and not appended.is_symlink():
        for f in appended.iterdir():
            stem = f.name.split(".", 1)[0]
            if f.is_file() and stem.isdigit() and f.name.endswith((".jsonl", ".jsonl.tmp")):
                f.unlink()
        if not any(appended.iterdir()):
            appended.rmdir()
    for name in OUTPUT_FILES:
        p = out / name
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
        tmp = out / f"{name}.tmp"
        if tmp.exists():
            tmp.unlink()


def prepare_output(out: str | Path, settings: dict, force: bool = False, resume: bool = False,
                   scan: bool = True, extra: dict | None = None) -> list[dict]:
    """Make ``out`` ready for a run; return the complete shards to keep (``[]`` for a fresh run, or with
    ``scan=False``, when the caller scans the shards itself).

    - a missing or empty folder: a fresh run;
    - ``resume``: the folder must hold the ``run.json`` of a run with the same settings; its complete shards are
      returned and nothing is removed yet (the stream removes what follows them, partial shards, temp files
      and a half-assembled output, once it has checked that the inputs they consumed are unchanged);
    - ``force``: the files of a previous output (:data:`latechunk.output.OUTPUT_FILES`) are removed, nothing
      else in the folder, and only from a folder latechunk wrote (:func:`foreign_files`); a non-empty folder that
      is not a latechunk output (a folder of documents) is refused, so no index is ever written among them;
    - otherwise an existing non-empty folder is an error: it is never overwritten.

    Args:
        out: The output folder.
        settings: This run's settings (``EmbedConfig.to_dict()`` with the model's facts), written to run.json.
        force: Remove a previous output first (never files latechunk did not write).
        resume: Continue the interrupted run in ``out``.
        scan: Return the complete shards (resume only).
        extra: More top-level run.json keys of a fresh run, never compared (``embed --reuse``'s folder:
            ``{"reuse": PATH}``, which ``--resume`` takes up again).

    Returns:
        The shard records to keep, in order.

    Raises:
        ValueError: for a non-empty folder without ``force``/``resume``, both flags at once, a folder without
            ``run.json`` on resume, settings that differ from the interrupted run's, or files ``--force`` will
            not delete.
    """
    out = Path(out)
    folder = OutputFolder(out)
    if force and resume:
        raise ValueError("--force (start over) and --resume (continue) exclude each other; give one")
    if out.exists() and not out.is_dir():
        raise ValueError(f"output path {out} exists and is not a folder")
    non_empty = out.is_dir() and any(not p.name.startswith(".") for p in out.iterdir())  # the lock, .gitignore
    if non_empty and resume and not folder.run_path.is_file() and _holds_nothing(out):
        force = True  # killed before run.json was in place: nothing to continue, start fresh
    elif non_empty and resume:
        if not folder.run_path.is_file():
            raise ValueError(f"{out} holds no run.json, so it is not an interrupted `latechunk embed` run; "
                             "pass --force to start over")
        try:
            old = folder.read_run()
        except ValueError as err:
            raise ValueError(f"{folder.run_path}: {err}; pass --force to start over") from err
        check_same_settings(old.get("settings", {}), settings)
        if old.get("settings", {}).get("index") != settings.get("index"):  # another --index: run.json says so
            write_json(folder.run_path, {**old, "settings": {**old.get("settings", {}), "index": settings["index"]}})
        return scan_shards(out)[0] if scan else []
    if non_empty and not force:
        check_not_empty(out)
    out.mkdir(parents=True, exist_ok=True)
    if force:
        check_force(out)
        _remove_output(out)
    folder.shards_dir.mkdir(exist_ok=True)
    write_json(folder.run_path, {"format": RUN_FORMAT, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                 "settings": settings, **(extra or {})})
    return []

#: keys :func:`latechunk.output.build_manifest` writes itself; every other top-level key is a header field
MANIFEST_OWN_KEYS = ("format", "created", "finished", "mode", "normalize", "include_special", "long_documents",
                 "macro_window", "macro_window_overlap", "inputs_from_out", "group_tokens", "settings", "dim",
                 "index", "world_size", "counts", "documents", "skipped", "degraded", "shards", "seconds")



def manifest_shards(folder: OutputFolder, manifest: dict) -> list[dict]:
    """The shard records ``manifest`` lists, checked against their files; later shards (an append that never
    finished) and temp files are removed. Used by ``--append`` and ``reindex`` before they assemble again.

    Args:
        folder: The output folder.
        manifest: Its manifest.

    Returns:
        The shard records, in order (as :func:`~latechunk.ingest.shards.scan_shards` reads them).

    Raises:
        ValueError: if a listed shard is missing or differs from its manifest entry (the message says to verify).
    """
    listed = manifest.get("shards") or []
    records, notes = scan_shards(folder.path)
    for i, s in enumerate(listed):
        if i >= len(records) or records[i]["name"] != s.get("name") or \
                sha256_file(folder.shard_path(i, "json")) != s.get("sha256"):
            why = "; ".join(notes) or f"shard {s.get('name')} differs from its manifest entry"
            raise ValueError(f"{folder.path}: its shards do not match its manifest ({why}); run "
                             f"`latechunk verify {folder.path}`, and embed into a new folder if it fails")
    n = len(listed)
    for f in folder.shards_dir.iterdir():
        # only shard files (NNNNN.json/.parquet/.npy, and their .tmp) are this folder's to remove: a file or
        # folder of another name (a vector store exported into shards/) was deleted here, or crashed the append
        # (IsADirectoryError)
        if not SHARD_FILE.fullmatch(f.name.removesuffix(".tmp")) or not f.is_file() or f.is_symlink():
            continue
        if f.name.endswith(".tmp") or folder.shard_number(f.name) >= n:
            f.unlink()
    return records[:n]
