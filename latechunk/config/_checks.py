"""The checks every config shares: a failed one raises ``ValueError`` with its message."""

from __future__ import annotations


def _require(ok: bool, msg: str) -> None:
    if not ok:
        raise ValueError(msg)


def _positive_int(name: str, value, minimum: int = 1) -> None:
    _require(isinstance(value, int) and not isinstance(value, bool) and value >= minimum,
             f"{name} must be an integer >= {minimum}, got {value!r}")
