"""What a manifest records about the software it was made with."""

from __future__ import annotations

import platform

__all__ = ["versions"]


def versions(*extra: str) -> dict:
    """Versions of latechunk, Python, torch, transformers, faiss, numpy and the platform.

    Args:
        extra: Further importable module names whose ``__version__`` to record (e.g. ``"ir_measures"``).

    Returns:
        ``{name: version string}``; ``"?"`` for a module without ``__version__``.
    """
    import importlib

    import latechunk

    out = {"latechunk": latechunk.__version__, "python": platform.python_version()}
    for name in ("torch", "transformers", "faiss", "numpy", *extra):
        out[name] = getattr(importlib.import_module(name), "__version__", "?")
    out["platform"] = platform.platform()
    return out
