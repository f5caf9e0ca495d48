#!/usr/bin/env python3
"""Paired comparison of two models from two ``latechunk compare`` report folders over the same queries.

Each report folder's ``per_query.csv`` (written by ``latechunk compare``: one row per system and query, columns
``dataset, query_id, strategy, mode, window, label`` then one column per metric) gives every system's per-query
scores. For each strategy that both folders hold, this prints (and with ``--out`` writes as markdown) the means
of every system and the paired bootstrap 95% interval (``latechunk.eval.stats.paired_bootstrap``: Efron &
Tibshirani 1993, Sakai 2014; queries resampled with their two scores kept together) of:

- late(A) - naive(B): does model A in late mode beat model B in naive mode? (A trained, B the base: the issue's
  headline comparison)
- late(A) - late(B), naive(A) - naive(B): what training did to each mode
- late(A) - naive(A), late(B) - naive(B): late vs naive within each model

Both folders must score the same dataset and queries (checked: the paired test needs the same query ids).

Usage::

    python scripts/compare_models.py --a eval/results/train/chroma_trained --b eval/results/train/chroma_base \
        --a-name trained --b-name base --metrics SpanRecall@5,SpanIoU@5 --out eval/results/train/table.md
"""

from __future__ import annotations

import argparse
import csv
import gzip
import sys
from collections import defaultdict
from pathlib import Path

DEFAULT_METRICS = "AR@1,AR@5,SpanRecall@1,SpanRecall@5,SpanRecall@10,SpanIoU@5,SpanPrecision@5"


def read_per_query(folder: Path) -> tuple[str, dict[tuple[str, str, str], dict[str, dict[str, float]]]]:
    """One report folder's per-query scores.

    Args:
        folder: A ``latechunk compare`` report folder (holding ``per_query.csv`` or ``per_query.csv.gz``).

    Returns:
        ``(dataset, {(strategy, mode, window): {metric: {query_id: score}}})``; ``window`` is ``""`` for naive
        systems. Blank cells (undefined metrics) are left out.

    Raises:
        FileNotFoundError: if ``per_query.csv`` is missing.
        ValueError: if the file holds several datasets or none.
    """
    path = Path(folder) / "per_query.csv"
    if not path.is_file() and path.with_suffix(".csv.gz").is_file():
        path = path.with_suffix(".csv.gz")  # the repository keeps report folders' per-query scores gzipped
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: give a report folder written by `latechunk compare`")
    systems: dict = defaultdict(lambda: defaultdict(dict))
    datasets = set()
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        fixed = {"dataset", "query_id", "strategy", "mode", "window", "label"}
        metrics = [m for m in reader.fieldnames or () if m not in fixed]
        for row in reader:
            datasets.add(row["dataset"])
            key = (row["strategy"], row["mode"], row["window"])
            for m in metrics:
                if row[m] != "":
                    systems[key][m][row["query_id"]] = float(row[m])
    if len(datasets) != 1:
        raise ValueError(f"{path}: expected one dataset, found {sorted(datasets) or 'none'}")
    return datasets.pop(), systems


def _pick(systems: dict, strategy: str, mode: str, window: str | None):
    keys = [k for k in systems if k[0] == strategy and k[1] == mode and (window is None or mode != "late" or k[2] == window)]
    if len(keys) > 1:
        raise ValueError(f"{strategy} {mode}: several macro windows {sorted(k[2] for k in keys)}; pick one with --window")
    return systems[keys[0]] if keys else None


def compare(a_dir: Path, b_dir: Path, metrics: list[str], a_name: str = "A", b_name: str = "B",
            window: str | None = None, resamples: int = 10000, seed: int = 0) -> tuple[list[str], list[dict]]:
    """Means and paired intervals of two report folders.

    Args:
        a_dir / b_dir: The report folders of model A and model B (same dataset and queries).
        metrics: Metric names (columns of ``per_query.csv``), e.g. ``SpanRecall@5``.
        a_name / b_name: Names for the tables.
        window: The late macro window to use where a folder holds several (``"256"``); None: the only one.
        resamples: Bootstrap resamples.
        seed: Bootstrap seed.

    Returns:
        ``(markdown lines, rows)``; each row a dict with ``strategy``, ``comparison``, ``metric``, ``mean_a``,
        ``mean_b``, ``diff``, ``ci_low``, ``ci_high``, ``n_queries`` (values in percent points).

    Raises:
        ValueError: if the folders score different datasets, or the query ids of a pair differ.
    """
    from latechunk.eval.stats import paired_bootstrap

    ds_a, sys_a = read_per_query(a_dir)
    ds_b, sys_b = read_per_query(b_dir)
    if ds_a != ds_b:
        raise ValueError(f"{a_dir} scores {ds_a!r} but {b_dir} scores {ds_b!r}: a paired test needs one dataset")
    strategies = [s for s in dict.fromkeys(k[0] for k in sys_a) if any(k[0] == s for k in sys_b)]
    lines = [(f"Dataset `{ds_a}`; A = {a_name} (`{a_dir}`), B = {b_name} (`{b_dir}`). Values in %; intervals: "
              f"paired bootstrap 95% ({resamples} resamples, seed {seed}) of the mean per-query difference."), ""]
    rows: list[dict] = []
    for strategy in strategies:
        s = {(n, mode): _pick(src, strategy, mode, window) for n, src in ((a_name, sys_a), (b_name, sys_b))
             for mode in ("late", "naive")}
        lines += [f"### `{strategy}`", "", "| system | " + " | ".join(metrics) + " |",
                  "| --- |" + " ---: |" * len(metrics)]
        for (n, mode), scores in s.items():
            if scores is None:
                continue
            vals = [100 * sum(scores[m].values()) / len(scores[m]) if scores.get(m) else float("nan") for m in metrics]
            lines.append(f"| {mode}({n}) | " + " | ".join(f"{v:.1f}" for v in vals) + " |")
        lines += ["", "| comparison | " + " | ".join(metrics) + " |", "| --- |" + " ---: |" * len(metrics)]
        pairs = [((a_name, "late"), (b_name, "naive")), ((a_name, "late"), (b_name, "late")),
                 ((a_name, "naive"), (b_name, "naive")), ((a_name, "late"), (a_name, "naive")),
                 ((b_name, "late"), (b_name, "naive"))]
        for x, y in pairs:
            if s[x] is None or s[y] is None:
                continue
            cells = []
            for m in metrics:
                if m not in s[x] or m not in s[y]:
                    cells.append("")
                    continue
                r = paired_bootstrap(s[x][m], s[y][m], n_resamples=resamples, seed=seed)
                sig = " *" if r.ci_low > 0 or r.ci_high < 0 else ""
                cells.append(f"{100 * r.mean_diff:+.1f} [{100 * r.ci_low:+.1f}, {100 * r.ci_high:+.1f}]{sig}")
                rows.append({"strategy": strategy, "comparison": f"{x[1]}({x[0]}) - {y[1]}({y[0]})", "metric": m,
                             "diff": 100 * r.mean_diff, "ci_low": 100 * r.ci_low, "ci_high": 100 * r.ci_high,
                             "n_queries": r.n_queries})
            lines.append(f"| {x[1]}({x[0]}) - {y[1]}({y[0]}) | " + " | ".join(cells) + " |")
        lines += ["", "`*`: the 95% interval excludes 0.", ""]
    return lines, rows


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring.

    Args:
        argv: Arguments (default ``sys.argv[1:]``).

    Returns:
        The exit status (0; 2 on bad input).
    """
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--a", required=True, type=Path, help="report folder of model A (e.g. the trained model)")
    p.add_argument("--b", required=True, type=Path, help="report folder of model B (e.g. the base model)")
    p.add_argument("--a-name", default="A")
    p.add_argument("--b-name", default="B")
    p.add_argument("--metrics", default=DEFAULT_METRICS, help=f"comma list (default {DEFAULT_METRICS})")
    p.add_argument("--window", default=None, help="late macro window to use where a folder holds several")
    p.add_argument("--resamples", type=int, default=10000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="also write the tables here (markdown)")
    args = p.parse_args(argv)
    try:
        lines, _ = compare(args.a, args.b, [m.strip() for m in args.metrics.split(",") if m.strip()], args.a_name,
                           args.b_name, args.window, args.resamples, args.seed)
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
