"""Files that exist whole or not at all: sha256, fsync, atomic commit, JSON writes, and the fault-injection hook.

Every file of an output folder is written to ``NAME.tmp``, flushed to disk and ``os.replace``-d onto ``NAME``
(atomic on POSIX), then the folder entry is flushed too. The kill tests (``tests/ingest/test_ingest.py``,
``tests/test_multiprocess.py``) stop a run at named events through :func:`fault`.
"""

from __future__ import annotations

import hashlib
import os
import signal
from collections.abc import Callable
from pathlib import Path

from latechunk.output import OutputFolder, commit, flush, fsync_dir  # re-exported: the folder's one writer

__all__ = ["FAULT_ENV", "commit", "fault", "flush", "fsync_dir", "read_json", "sha256_file", "sha256_text", "write_atomic",
           "write_json"]

#: test hook: ``LATECHUNK_FAULT_KILL_AT=<event>`` makes the process SIGKILL itself at that event (see :func:`fault`)
FAULT_ENV = "LATECHUNK_FAULT_KILL_AT"


def sha256_text(text: str) -> str:
    """sha256 hex digest of ``text`` encoded as UTF-8 (the manifest's per-document hash).

    Args:
        text: The text.

    Returns:
        64 lowercase hex characters.
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    """sha256 hex digest of a file's bytes, read in 4 MiB blocks.

    Args:
        path: The file.

    Returns:
        64 lowercase hex characters.

    Raises:
        OSError: if the file cannot be read.
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def fault(event: str) -> None:
    """Fault injection for the kill tests: SIGKILL this process when ``$LATECHUNK_FAULT_KILL_AT == event``.

    Events: ``shard-NNNNN-parquet`` (after the shard's parquet is in place), ``shard-NNNNN-npy.tmp`` (vectors
    written to the temp name, not yet renamed), ``shard-NNNNN-json`` (shard committed), ``assemble-index.tmp``
    (index.faiss whole at its temp name), ``assemble-chunks.tmp`` (chunks.parquet half written),
    ``assemble-manifest.tmp`` (every assembled file whole at its temp name, no commit journal yet),
    ``commit-renamed-1`` (the commit journal in place, only the first file renamed).

    Args:
        event: The event reached (one of the names above).
    """
    if os.environ.get(FAULT_ENV) == event:
        os.kill(os.getpid(), signal.SIGKILL)


def tmp_path(final: Path) -> Path:
    """The temp name a file is written under before :func:`commit`.

    Args:
        final: The file's name.

    Returns:
        ``NAME.tmp`` beside ``final``.
    """
    return final.with_name(final.name + ".tmp")


def write_atomic(final: Path, write: Callable[[Path], None], after_write: Callable[[], None] | None = None) -> None:
    """Write a file through ``write(tmp)``, then commit it to ``final``.

    Args:
        final: The file's name.
        write: Writes the whole file at the path it is given (the temp name).
        after_write: Called between the write and the commit (a fault-injection point).

    Raises:
        OSError: if the file cannot be written or committed (whatever ``write`` raises propagates too).
    """
    tmp = tmp_path(final)
    write(tmp)
    if after_write is not None:
        after_write()
    commit(tmp, final)


def write_json(path: Path, obj: dict, indent: int | None = 1) -> None:
    """Write ``obj`` as JSON (:meth:`OutputFolder.json_bytes`) to ``path`` atomically.

    Args:
        path: The file.
        obj: A JSON-ready dict.
        indent: Spaces per level; None: one line.

    Raises:
        OSError: if the file cannot be written or committed.
        TypeError, ValueError: if ``obj`` holds a value JSON cannot encode (nothing is written).
    """
    if indent is None:  # one line: the C encoder, the text whole (such files are small)
        write_atomic(path, lambda tmp: tmp.write_bytes(OutputFolder.json_bytes(obj, indent)))
    else:
        write_atomic(path, lambda tmp: _write_json_pieces(tmp, obj, indent))


_JSON_PIECE_CHARS = 1 << 16
"""Characters of encoded JSON gathered before each write (:func:`_write_json_pieces`)."""


def _write_json_pieces(tmp: Path, obj, indent: int) -> None:
    """Write ``obj`` as :meth:`OutputFolder.json_bytes` writes it (the same bytes), encoding it piece by piece: an
    indented dump is the pure-Python encoder's millions of small strings (some 30 a document record of a
    manifest, 1.5 KB a document together), which ``json.dumps`` keeps in a list before joining them, and the joined
    text and its UTF-8 copy after that; here memory holds about :data:`_JSON_PIECE_CHARS` characters of them.
    A value JSON cannot encode raises (TypeError, ValueError) with the temp file removed."""
    import json

    pieces: list[str] = []
    size = 0
    try:
        with open(tmp, "wb") as fh:
            # json.dumps(obj, indent=indent, ensure_ascii=False) is this encoder's "".join(iterencode(obj))
            for piece in json.JSONEncoder(ensure_ascii=False, indent=indent).iterencode(obj):
                pieces.append(piece)
                size += len(piece)
                if size >= _JSON_PIECE_CHARS:
                    fh.write("".join(pieces).encode("utf-8"))
                    pieces, size = [], 0
            pieces.append("\n")
            fh.write("".join(pieces).encode("utf-8"))
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_json(path: Path) -> dict | None:
    """A JSON object file, or ``None`` when it is missing, unreadable or not an object (a file being written
    by another process reads as ``None`` until it is committed).

    Args:
        path: The file.

    Returns:
        The parsed object, or None.
    """
    try:
        return OutputFolder.read_json(path)
    except ValueError:
        return None
