"""How report.md and the terminal table print a value: quality metrics as percentages (the mean over queries
times 100, one decimal), ``Dup@k`` as a count with two decimals, differences signed, a bootstrap interval as
``+d [low, high]``, column names (``R@100 (doc)``, ``PrecisionΩ``, ``... (dedup)``), the best value of a column,
a late pass's name in a cell, and the Markdown table itself. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

_LOWER_IS_BETTER = ("Dup@", "NearDup@", "dedup:Dup@", "dedup:NearDup@")
_DEDUP = "dedup:"  # eval.metrics.DEDUP_PREFIX: a metric of the deduplicated index (compare --dedup-threshold)
_DOC_NAMES = {"nDCG@10": "nDCG@10", "R@100": "R@100 (doc)", "RR@10": "MRR@10"}


def _is_pct(metric: str) -> bool:
    return not metric.removeprefix(_DEDUP).startswith("Dup@")


def _fmt(metric: str, value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{100 * value:.1f}" if _is_pct(metric) else f"{value:.2f}"


def _fmt_diff(metric: str, value: float) -> str:
    return f"{100 * value:+.1f}" if _is_pct(metric) else f"{value:+.2f}"


def _col_name(metric: str) -> str:
    if metric.startswith(_DEDUP):
        return f"{_col_name(metric[len(_DEDUP):])} (dedup)"
    if metric == "PrecisionOmega":
        return "PrecisionΩ"
    return _DOC_NAMES.get(metric, metric)


def _best(values: Sequence, metric: str):
    vals = [v for v in values if v is not None]
    if not vals:
        return None
    return min(vals) if metric.startswith(_LOWER_IS_BETTER) else max(vals)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" if i < 2 else "---:" for i in range(len(header))) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _ci(c: dict, metric: str) -> str:
    return f"{_fmt_diff(metric, c['mean_diff'])} [{_fmt_bound(metric, c['ci_low'])}, {_fmt_bound(metric, c['ci_high'])}]"


def _fmt_bound(metric: str, value: float) -> str:
    """An interval bound as :func:`_fmt_diff` prints it, with two more decimals where it would print as ±0.0 (a
    trial read "[+0.0, +4.0]", unstarred, as excluding 0: the bound was 0 or just below it)."""
    text = _fmt_diff(metric, value)
    if value != 0 and text.lstrip("+-") in ("0.0", "0.00"):
        return f"{100 * value:+.3f}" if _is_pct(metric) else f"{value:+.4f}"
    return "0.0" if value == 0 and _is_pct(metric) else ("0.00" if value == 0 else text)


def _overlap_sweep(result) -> bool:
    """Whether the result's late passes differ in window overlap (``--window-overlap 0|32|64``)."""
    return len({w.get("overlap") for w in result.manifest.get("windows", [])}) > 1


def _pass_name(result, window, overlap) -> str:
    """A late pass in a table cell: ``256``, or ``256 o=32`` in an overlap sweep; ``–`` for no window."""
    if window is None:
        return "–"
    return f"{window} o={overlap}" if _overlap_sweep(result) and overlap is not None else str(window)
