"""The same-file check: of two paths to one file (a symlink or hard link to it, one file reached through two
inputs) the real path is read, the other listed as ``same file as ...``."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from latechunk.io.suffixes import TABLE_SUFFIXES
from latechunk.io.walk import _utf8_name


def _mark_same_files(listed: list[tuple[Path, list[tuple[Path, str, str]]]], several: bool
                     ) -> list[list[tuple[Path, str, str]]]:
    """Each input's items (``listed``: :func:`_input_files`, all inputs) with every file that is the same file as
    another one read (a symlink or hard link to it, or one file reached through two inputs) given the reason
    ``same file as WHERE (read once, under that id)``, so it is embedded once.

    The one read is the real file, whatever the input order: a path that is not a symlink before one that is, a
    path without a symlinked folder in it before one through such a folder, a path whose name is valid UTF-8
    before one that is not read for its name; among equals the first in reading order. A later path to it under
    the same id is left to the duplicate-id check (which names an input given twice).

    Args:
        listed: ``[(input, [(file, doc id root, reason), ...]), ...]`` in reading order.
        several: Whether there are several inputs (the reason then names the input of the file read).

    Returns:
        The items of each input, in order, with those reasons set.
    """
    ident: dict[tuple[int, int], tuple[int, int]] = {}  # (input, item) -> (device, inode), in reading order
    for k, (_p, items) in enumerate(listed):
        for i, (f, _rel, reason) in enumerate(items):
            if not reason and f.suffix.lower() not in TABLE_SUFFIXES:  # a file read as one document
                with contextlib.suppress(OSError):
                    st = f.stat()
                    if stat.S_ISREG(st.st_mode):
                        ident[(k, i)] = (st.st_dev, st.st_ino)
    out = [list(items) for _p, items in listed]
    paths_of: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for pos, key in ident.items():
        paths_of.setdefault(key, []).append(pos)
    for positions in paths_of.values():
        if len(positions) < 2:
            continue
        keep = min(positions, key=lambda pos: (_path_rank(*listed[pos[0]][1][pos[1]][:2]), pos))
        kept_rel = listed[keep[0]][1][keep[1]][1]
        where = kept_rel + (f" (input {str(listed[keep[0]][0])!r})" if several else "")
        for pos in positions:
            f, rel, _ = listed[pos[0]][1][pos[1]]
            if pos == keep or (rel == kept_rel and pos > keep):  # the same id again: the duplicate-id check says it
                continue
            out[pos[0]][pos[1]] = (f, rel, f"same file as {where} (read once, under that id)")
    return out


def _path_rank(f: Path, rel: str) -> int:
    """How far ``f`` is from the real path of its file (0: none of it a symlink; 1: through a symlinked folder; 2: a
    symlink itself; 3: not read, its name not valid UTF-8): of two paths to one file the lower is read."""
    if _utf8_name(rel) != rel:
        return 3
    if os.path.islink(f):
        return 2
    return 0 if os.path.realpath(f) == os.path.abspath(f) else 1
