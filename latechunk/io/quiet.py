"""Silencing the C stdout (faiss ``printf``s) while a command's output is printed."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def quiet_c_stdout() -> Iterator[None]:
    """Send file descriptor 1 to /dev/null for the duration.

    faiss ``printf``s to the C stdout when it builds or opens on-disk inverted lists ("resizing ...", the
    ``.ivfdata`` it looks up), which would mix into a command's output (``search --json``). Used by
    :mod:`latechunk.index` (building) and :mod:`latechunk.output` (reading). Without a file descriptor 1 (a
    daemon) there is nothing to silence.
    """
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
