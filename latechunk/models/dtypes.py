"""The dtypes an encoder runs in and the names a user may give them (:func:`canonical_dtype`).

Part of :mod:`latechunk.models`; tests: ``tests/model_loading/test_models.py``.
"""

from __future__ import annotations

DTYPE_NAMES = ("float32", "bfloat16", "float16")
"""The dtypes an encoder runs in, by their torch names."""
_DTYPE_ALIASES = {"fp32": "float32", "float": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16"}


def canonical_dtype(value: str | None, what: str = "dtype") -> str | None:
    """A dtype name as written by a user (``--dtype``, ``$LATECHUNK_CPU_DTYPE``, ``dtype=``), as its torch name.

    Case and surrounding spaces are ignored, and the usual short names are accepted: ``fp32``/``float`` ->
    ``float32``, ``bf16`` -> ``bfloat16``, ``fp16``/``half`` -> ``float16``. ``None`` stays ``None``.

    Raises:
        ValueError: naming ``what`` and the value, when it is none of :data:`DTYPE_NAMES` or their short names.
    """
    if value is None:
        return None
    key = str(value).strip().lower()
    name = _DTYPE_ALIASES.get(key, key)
    if name not in DTYPE_NAMES:
        raise ValueError(f"{what} must be float32, bfloat16 or float16 (or fp32, bf16, fp16), got {value!r}")
    return name
