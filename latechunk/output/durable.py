"""Writes that survive a crash: flush a file, rename it into place, flush the folder.

Also a file's identity for the commit journal (:func:`_identity`) and the bytes of the folder's JSON files.

Tests: ``tests/output/test_output.py``, ``tests/ingest/test_ingest.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def _identity(path: Path) -> list[int] | None:
    """A file's identity for the commit journal: ``[size, mtime_ns]`` (kept by a copy that keeps times, unlike
    the inode), None when it does not exist."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return [st.st_size, st.st_mtime_ns]


def fsync_dir(path: Path) -> None:
    """Flush a folder's entries to disk (best effort: some file systems refuse; errors are ignored).

    Args:
        path: The folder.
    """
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


def flush(path: Path) -> None:
    """Flush a written file's data to disk (before it is renamed into place).

    Args:
        path: The file.

    Raises:
        OSError: if it cannot be opened or flushed.
    """
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def commit(tmp: Path, final: Path) -> None:
    """Flush ``tmp`` to disk and rename it to ``final`` (atomic on POSIX), then flush the folder.

    Args:
        tmp: The file as written (its temp name, :func:`latechunk.ingest.files.tmp_path`).
        final: Its name once committed (replaced if it exists).

    Raises:
        OSError: if ``tmp`` cannot be opened, flushed or renamed.
    """
    flush(tmp)
    os.replace(tmp, final)
    fsync_dir(final.parent)


def _json_bytes(obj, indent: int | None) -> bytes:
    return (json.dumps(obj, indent=indent, ensure_ascii=False) + "\n").encode("utf-8")
