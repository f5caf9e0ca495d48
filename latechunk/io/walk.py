"""Walking the inputs: every entry below an input folder, in sorted order, with why it is not read (a symlinked,
version-control, hidden or latechunk output folder, a symlink loop or broken symlink, a special file, an unsupported
type, a BEIR queries file); a Hugging Face dataset folder is one entry, never walked."""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from latechunk.io.arrow import hf_dataset_kind
from latechunk.io.suffixes import unsupported_reason

#: folders of version-control systems, listed as one skipped entry each and never walked
VCS_FOLDERS = frozenset({".git", ".hg", ".svn", ".bzr"})


def is_output_folder(d: Path) -> bool:
    """Whether ``d`` is a folder written by ``latechunk embed``.

    Args:
        d: A folder.

    Returns:
        True when it holds latechunk's run.json (its ``format`` is ``latechunk-run/N``, or it has latechunk's
        ``created`` and ``settings`` keys: any other project's run.json, an ML experiment's, is not one), or an
        index.faiss beside a manifest.json.

    Raises:
        OSError: when ``d``'s entries cannot be checked (a path too long for the file system, ...).
    """
    run = d / "run.json"
    if run.is_file():
        try:
            with open(run, "rb") as f:
                head = f.read(1 << 16)
            run_json = json.loads(head)
            if str(run_json.get("format", "")).startswith("latechunk-run/") or (
                    "format" not in run_json and isinstance(run_json.get("settings"), dict) and "created" in run_json):
                return True  # (the second: a run.json of a version before the format key, if any)
        except (ValueError, AttributeError, OSError):  # not JSON, not an object, too big: not latechunk's
            pass
    return (d / "index.faiss").is_file() and (d / "manifest.json").is_file()


def _not_a_file_reason(path: Path) -> str:
    """Why ``path`` (not a folder) cannot be read as a file: a broken symlink, a symlink loop or a special file;
    ``""`` for a regular file (or a symlink to one)."""
    try:
        st = os.stat(path)
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "symlink loop (never followed)"
        if err.errno != errno.ENAMETOOLONG and path.is_symlink():
            return f"broken symlink (its target {os.readlink(path)!r} does not exist)"
        return f"unreadable: {err.strerror or err}"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (a FIFO, socket or device)"
    return ""


def _folder_reason(d: Path, name: str) -> str:
    """Why the folder ``d`` (named ``name``) found inside an input folder is not walked; ``""`` when it is."""
    try:
        if d.is_symlink():
            return "symlinked folder not followed (name it as an input to read it)"
        if name in VCS_FOLDERS:
            return "version-control folder (not read)"
        if name.startswith("."):  # .venv, .cache, .tox, .ipynb_checkpoints: tools' files, not the corpus
            return "hidden folder (not read; name it as an input to read it)"
        if is_output_folder(d):
            return "latechunk output folder (not read as documents)"
    except OSError as err:  # e.g. a path longer than the file system takes (folders nested a thousand deep)
        return f"unreadable folder: {err.strerror or err}"
    return ""


#: why a BEIR folder's ``queries.jsonl`` (beside its ``corpus.jsonl``) is not read as documents
BEIR_QUERIES_REASON = ("BEIR queries file beside corpus.jsonl (questions, not documents; name the file itself to "
                       "embed it)")


def _walk(root: Path) -> Iterator[tuple[Path, str, bool]]:
    """Everything below ``root`` as ``(path, reason, is_folder)``: a file to read has reason ``""``, and so has a
    Hugging Face dataset folder (:func:`hf_dataset_kind`: read as one table, never walked); a file or folder that
    is not read (unsupported type, symlinked or version-control folder, latechunk output folder, symlink loop,
    broken symlink, special file, unreadable folder) comes with its reason, a folder as one entry. ``is_folder``
    comes from the walk itself (a path too long for the file system cannot be asked again)."""
    unreadable: list[tuple[Path, str, bool]] = []

    def onerror(err: OSError) -> None:
        unreadable.append((Path(err.filename), f"unreadable folder: {err.strerror or err}", True))

    if is_output_folder(root):
        yield root, "latechunk output folder (not read as documents)", True
        return
    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror, followlinks=False):
        d = Path(dirpath)
        keep = []
        for name in dirnames:
            reason = _folder_reason(d / name, name)
            try:
                dataset = not reason and hf_dataset_kind(d / name)
            except OSError as err:  # a path too long for the file system, ...
                reason, dataset = f"unreadable folder: {err.strerror or err}", False
            if reason or dataset:
                yield d / name, reason, True  # a dataset folder: reason "", read whole (not walked)
            else:
                keep.append(name)
        dirnames[:] = keep
        beir = "corpus.jsonl" in filenames
        for name in filenames:
            f = d / name
            if beir and name == "queries.jsonl":  # a BEIR dataset folder: its questions are not documents
                yield f, BEIR_QUERIES_REASON, False
                continue
            yield f, (_not_a_file_reason(f) or unsupported_reason(f)), False
    yield from unreadable  # the root itself too (listed under its own name)


def _input_files(paths: Sequence[Path]) -> Iterator[tuple[Path, list[tuple[Path, str, str]]]]:
    """Per input path: ``(path, [(file, doc id root, reason), ...])`` in reading order (sorted by path).

    A folder gives every entry :func:`_walk` finds, with its path relative to the folder (a folder that is not
    read ends in ``/``; a Hugging Face dataset folder found inside it does not); a file or a Hugging Face dataset
    folder gives itself with its name. ``reason`` is ``""`` for a file or dataset folder to read, else why it is
    not read: the same suffix policy (:func:`unsupported_reason`) for both.
    """
    for p in paths:
        if p.is_dir() and hf_dataset_kind(p):
            yield p, [(p, p.name or p.resolve().name, "")]
        elif p.is_dir():
            entries = sorted(_walk(p), key=lambda e: e[0])
            yield p, [(f, (f.relative_to(p).as_posix() if f != p else p.name) + ("/" if reason and folder else ""),
                       reason) for f, reason, folder in entries]
        else:
            yield p, [(p, p.name, _not_a_file_reason(p) or unsupported_reason(p))]


def _utf8_name(rel: str) -> str:
    r"""``rel`` itself when it is valid UTF-8; else its bytes (os.fsdecode's surrogate escapes) with each byte that is
    not UTF-8 written as ``\xNN``, a valid string that names the file in the skipped list."""
    try:
        rel.encode("utf-8")
        return rel
    except UnicodeEncodeError:
        return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
