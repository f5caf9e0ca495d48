"""A plain export: every row of the folder into a new (or emptied) collection, dropped again if the export fails
part way.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from latechunk.export.chroma import _chroma
from latechunk.export.lancedb import _lancedb
from latechunk.export.qdrant import _qdrant

_WRITERS = {"lancedb": _lancedb, "qdrant": _qdrant, "chroma": _chroma}


def _write(source, store: str, path: Path, client, collection: str, overwrite: bool, settings, progress: bool,
           batch_size: int) -> None:
    """Write every row of ``source`` into the store (:func:`export_folder`'s body, under its lock)."""
    from tqdm.auto import tqdm

    writer = _WRITERS[store](source, path, client, collection, overwrite, settings or {})  # refuses a non-empty one
    try:
        # on stderr when it is a terminal only (disable=None), and only when asked
        with tqdm(total=source.rows, unit="vec", desc=f"export {store}", file=sys.stderr,
                  disable=None if progress else True) as bar:
            for b in source.batches(batch_size):
                writer.write(b)
                bar.update(len(b.chunk_ids))
    except BaseException:
        with contextlib.suppress(Exception):  # the original error is the one to report
            writer.drop()  # an export that fails part way leaves no half-filled collection
        raise
    finally:
        writer.close()
