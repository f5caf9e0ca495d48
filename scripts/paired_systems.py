"""Paired difference of two systems of one ``latechunk compare`` report folder (or of two folders on the same
queries): mean per-query difference in points with a paired bootstrap 95% interval (queries resampled, 10,000
resamples, seed 0), as compare's own late - naive tables.

    python scripts/paired_systems.py results/issue38/chroma_after "sentence_window:late_unit=sentence" late \
        "sentence_window" late --metrics AR@1,SpanRecall@5
    python scripts/paired_systems.py A_FOLDER recursive late recursive late --other-folder B_FOLDER
"""

from __future__ import annotations

import argparse
import csv
import gzip
from pathlib import Path

import numpy as np


def rows(folder: Path, strategy: str, mode: str) -> dict[str, dict]:
    """``{query_id: row}`` of the first system whose canonical strategy starts with ``strategy``
    (``name`` alone matches its default SPEC only when no parameter was added) in ``mode``."""
    path = folder / "per_query.csv"
    out: dict[str, dict] = {}
    with (open(path, newline="", encoding="utf-8") if path.exists()
          else gzip.open(str(path) + ".gz", "rt", newline="", encoding="utf-8")) as f:
        for r in csv.DictReader(f):
            spec = r["strategy"]
            same = spec == strategy or (spec.startswith(strategy + ":") and strategy.count("=") == spec.count("=")) \
                or (":" not in strategy and spec.split(":")[0] == strategy and "late_unit" not in spec)
            if same and r["mode"] == mode and r["query_id"] not in out:
                out[r["query_id"]] = r
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("strategy_a")
    ap.add_argument("mode_a")
    ap.add_argument("strategy_b")
    ap.add_argument("mode_b")
    ap.add_argument("--other-folder", type=Path, default=None, help="system B's folder (default: the same)")
    ap.add_argument("--metrics", default="AR@1,SpanRecall@5")
    args = ap.parse_args(argv)
    a = rows(args.folder, args.strategy_a, args.mode_a)
    b = rows(args.other_folder or args.folder, args.strategy_b, args.mode_b)
    qs = sorted(set(a) & set(b))
    if not qs:
        raise SystemExit("no queries in common (check the strategy and mode names)")
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(qs), size=(10000, len(qs)))
    print(f"{args.strategy_a} {args.mode_a} - {args.strategy_b} {args.mode_b}, {len(qs)} queries")
    for m in args.metrics.split(","):
        d = 100 * np.array([float(a[q][m]) - float(b[q][m]) for q in qs])
        lo, hi = np.percentile(d[idx].mean(axis=1), [2.5, 97.5])
        star = " *" if lo > 0 or hi < 0 else ""
        print(f"  {m}: {d.mean():+.1f} [{lo:+.1f}, {hi:+.1f}]{star}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
