"""The problem lines of ``latechunk verify``, at most :data:`MAX_PER_KIND` per kind.

Part of :mod:`latechunk.verify`; tests: ``tests/verify/test_verify.py``.
"""

from __future__ import annotations

from collections import Counter

MAX_PER_KIND = 10


class _Problems:
    """Problem lines, at most ``MAX_PER_KIND`` per kind (then one line saying how many more)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.counts: Counter = Counter()

    def add(self, kind: str, msg: str) -> None:
        self.counts[kind] += 1
        if self.counts[kind] <= MAX_PER_KIND:
            self.lines.append(msg)

    def finish(self) -> list[str]:
        extra = [f"... and {n - MAX_PER_KIND} more {kind} problem(s)" for kind, n in self.counts.items() if n > MAX_PER_KIND]
        return self.lines + extra
