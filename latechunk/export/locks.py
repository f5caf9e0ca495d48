"""The store's folder: refused when it holds another store's files or lies in a latechunk output folder, and
held by one export at a time (``fcntl.flock`` on :data:`STORE_LOCK_FILE`).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path


def _store_kinds(path: Path) -> list[tuple[str, str]]:
    """What ``path`` already holds, as ``(kind, evidence)``: another store's files (Chroma's ``chroma.sqlite3``,
    local Qdrant's ``meta.json`` beside ``collection/``, a LanceDB table folder ``NAME.lance``) or a latechunk
    output folder (its run.json or manifest.json)."""
    from latechunk.ingest.folder import _is_latechunk_output

    if not path.is_dir():
        return []
    kinds = []
    if (path / "chroma.sqlite3").is_file():
        kinds.append(("chroma", "chroma.sqlite3"))
    if (path / "meta.json").is_file() and (path / "collection").is_dir():
        kinds.append(("qdrant", "meta.json and collection/"))
    try:
        tables = sorted(p.name for p in path.iterdir() if p.name.endswith(".lance") and p.is_dir())
    except OSError:
        tables = []
    if tables:
        kinds.append(("lancedb", tables[0] + ("" if len(tables) == 1 else f" and {len(tables) - 1} more")))
    if _is_latechunk_output(path):
        kinds.append(("a latechunk output folder", "run.json / manifest.json"))
    return kinds


def _check_store_folder(path: Path, store: str) -> None:
    """Refuse a store folder that holds another store's files, or that is or lies inside a latechunk output
    folder (one store of one kind per folder: a Chroma export into a LanceDB folder mixed the two; a Qdrant
    export into ``OUT/shards`` was taken for an interrupted append's files, and the next append crashed on it)."""
    from latechunk.ingest.folder import _is_latechunk_output

    for above in path.resolve().parents:
        if _is_latechunk_output(above):
            raise ValueError(f"{store} path {path} is inside the latechunk output folder {above}; export into a "
                             "folder of its own, outside it")
    kinds = _store_kinds(path)
    for kind, evidence in kinds:
        if kind != store:
            what = kind if kind.startswith("a ") else f"a {kind} store"
            raise ValueError(f"{store} path {path} holds {what} ({evidence}); export into a folder of its own "
                             f"(a new or empty folder, or one that holds a {store} store)")
    if not kinds and path.is_dir():  # files of the user's, not a store: the store's files would mix with them
        try:
            names = sorted(p.name for p in path.iterdir() if p.name != STORE_LOCK_FILE)
        except OSError as err:
            raise ValueError(f"cannot read the {store} folder {path}: {err.strerror or err}") from err
        own = {"chroma": ("chroma.sqlite3",), "qdrant": ("meta.json",)}.get(store, ())  # a store just opened
        if names and not any(n in own or (store == "lancedb" and n.endswith(".lance")) for n in names):
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            raise ValueError(f"{store} path {path} holds {shown} but no {store} store; export into a folder of "
                             f"its own (a new or empty folder, or one that holds a {store} store)")


#: the lock file in a store's folder that one export at a time holds (``fcntl.flock``; never removed)
STORE_LOCK_FILE = ".latechunk-export.lock"


@contextlib.contextmanager
def _store_lock(path: Path, store: str) -> Iterator[None]:
    """Hold an exclusive ``fcntl.flock`` on ``path/.latechunk-export.lock`` while an export writes the store: a
    second export into the same folder (another collection, or the same one, which it then finds full) waits
    for the first, saying so, instead of two clients corrupting one store (Chroma: "database is locked" and
    "table collections already exists"). Released when the block ends or the process dies."""
    import fcntl

    try:
        fh = open(path / STORE_LOCK_FILE, "a+", encoding="ascii")  # noqa: SIM115 (held across the block)
    except OSError as err:
        raise ValueError(f"cannot write to the {store} folder {path}: {err.strerror or err}") from err
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            pid = fh.read().strip()
            logging.getLogger("latechunk").warning(
                "waiting for another latechunk export into %s%s to finish (one writer per store folder)",
                path, f" (pid {pid})" if pid.isdigit() else "")
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        yield
    finally:
        fh.close()
