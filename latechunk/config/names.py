"""Settings renamed so that one name has one meaning across commands and the Python API (issue 37 §4): each old
name keeps working for one release, with a :class:`DeprecationWarning` that names the new one.

The names the API uses: ``macro_window`` and ``macro_window_overlap`` (the macro window and the content tokens
consecutive macro windows share; ``macro_windows`` / ``macro_window_overlaps`` for ``compare``'s sweeps of them),
``dtype`` for what the model computes in (``ModelConfig.dtype``; ``TrainConfig.dtype``, its autocast dtype) and
``precision`` only for how the index stores the vectors (``IndexConfig.precision``). ``DEFAULT_STRATEGY`` is
``embed``'s (:data:`latechunk.config.DEFAULT_STRATEGY`); ``train``'s own default is ``DEFAULT_TRAIN_STRATEGY``.
"""

from __future__ import annotations

import warnings

__all__ = ["RENAMED", "RENAMED_OPTIONS", "renamed"]

RENAMED: dict[str, str] = {
    "TrainConfig.precision": "TrainConfig.dtype",
    "TrainConfig.window_overlap": "TrainConfig.macro_window_overlap",
    "latechunk.train.PRECISIONS": "latechunk.train.DTYPES",
    "latechunk.train.DEFAULT_STRATEGY": "latechunk.train.DEFAULT_TRAIN_STRATEGY",
    "CompareConfig.windows": "CompareConfig.macro_windows",
    "CompareConfig.window_overlap": "CompareConfig.macro_window_overlaps",
    "CompareConfig.from_options(window=)": "CompareConfig.from_options(macro_window=)",
    "CompareConfig.from_options(window_overlap=)": "CompareConfig.from_options(macro_window_overlap=)",
}
"""Old name -> new name, for every setting renamed in the Python API (the command-line options:
:data:`RENAMED_OPTIONS`)."""

RENAMED_OPTIONS: dict[str, str] = {
    "embed --window": "--macro-window",
    "embed --window-overlap": "--macro-window-overlap",
    "compare --window": "--macro-window",
    "compare --window-overlap": "--macro-window-overlap",
    "compare --dedup": "--dedup-overlap",
    "train --window": "--macro-window",
    "train --window-overlap": "--macro-window-overlap",
    "train --precision": "--dtype",
}
"""``"COMMAND --old-option"`` -> its new name, for every command-line option renamed so that one name has one
meaning: the macro window and its overlap are ``--macro-window`` and ``--macro-window-overlap`` in every command;
``compare``'s filter of overlapping results is ``--dedup-overlap`` (``embed --dedup`` is a cosine threshold on chunk
vectors, as ``compare --dedup-threshold``); ``train``'s autocast dtype is ``--dtype`` (``--precision`` is the
index's storage). The old spelling keeps working, hidden from ``--help``, with a one-line deprecation message on
stderr, until the next release."""


def renamed(old: str, new: str, stacklevel: int = 3) -> None:
    """Warn that ``old`` is the deprecated name of ``new`` (a :class:`DeprecationWarning`).

    Args:
        old: The old name, as :data:`RENAMED` spells it (``"TrainConfig.precision"``).
        new: The new name.
        stacklevel: Passed to :func:`warnings.warn` (3: the caller of the function that calls this).
    """
    warnings.warn(f"{old} is deprecated: it is called {new} now (the old name works until the next release)",
                  DeprecationWarning, stacklevel=stacklevel)
