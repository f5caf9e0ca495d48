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
- where the folders hold fused systems (``--modes ...,fused``): fused(A) - naive(B), fused(A) - late(B) and
  fused(A) - fused(B)

Both folders must score the same dataset and queries (checked: the paired test needs the same query ids).
A side may be given as several folders (e.g. a late-only and a naive-only run of the same model): their rows are
merged, and a system found in two of them is refused. Systems are keyed by strategy, mode, macro window and window
overlap (the ``window_overlap`` column of newer report folders; older ones have none), so a folder that sweeps
several windows or overlaps needs ``--window`` / ``--window-overlap`` to say which late pass to pair.

Usage::

    python scripts/compare_models.py --a results/train/chroma_trained --b results/train/chroma_base \
        --a-name trained --b-name base --metrics SpanRecall@5,SpanIoU@5 --out results/train/table.md
    # a model scored in two runs (late, then naive), against a base folder that swept windows 128|256|512
    python scripts/compare_models.py --a runs/trained_late runs/trained_naive --b results/map/chroma_ov0 \
        --window 128 --window-overlap 0
"""

from __future__ import annotations

import argparse
import csv
import gzip
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

DEFAULT_METRICS = "AR@1,AR@5,SpanRecall@1,SpanRecall@5,SpanRecall@10,SpanIoU@5,SpanPrecision@5"


FIXED_COLUMNS = ("dataset", "query_id", "question", "strategy", "mode", "window", "window_overlap", "label",
                 "top_hits")
"""The columns of ``per_query.csv`` that name a system or a query (or show its hits; ``question`` and ``top_hits``
in folders written since they exist); every other column is a metric."""


def read_per_query(folder: Path) -> tuple[str, dict[tuple[str, str, str, str], dict[str, dict[str, float]]]]:
    """One report folder's per-query scores.

    Args:
        folder: A ``latechunk compare`` report folder (holding ``per_query.csv`` or ``per_query.csv.gz``).

    Returns:
        ``(dataset, {(strategy, mode, window, window_overlap): {metric: {query_id: score}}})``; ``window`` and
        ``window_overlap`` (tokens, as text) are ``""`` for naive systems, and ``window_overlap`` is ``""`` in
        folders written before the column existed. Blank cells (undefined metrics) are left out.

    Raises:
        FileNotFoundError: if ``per_query.csv`` is missing.
        ValueError: if the file holds several datasets or none, or one system scores a query twice.
    """
    path = Path(folder) / "per_query.csv"
    if not path.is_file() and path.with_suffix(".csv.gz").is_file():
        path = path.with_suffix(".csv.gz")  # the repository keeps report folders' per-query scores gzipped
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: give a report folder written by `latechunk compare`")
    systems: dict = defaultdict(lambda: defaultdict(dict))
    datasets = set()
    seen: set = set()
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        metrics = [m for m in reader.fieldnames or () if m not in FIXED_COLUMNS]
        for row in reader:
            datasets.add(row["dataset"])
            key = (row["strategy"], row["mode"], row["window"], row.get("window_overlap") or "")
            if (key, row["query_id"]) in seen:
                raise ValueError(f"{path}: system {key} scores query {row['query_id']!r} twice")
            seen.add((key, row["query_id"]))
            for m in metrics:
                if row[m] != "":
                    systems[key][m][row["query_id"]] = float(row[m])
    if len(datasets) != 1:
        raise ValueError(f"{path}: expected one dataset, found {sorted(datasets) or 'none'}")
    return datasets.pop(), systems


def read_folders(folders: Sequence[Path]) -> tuple[str, dict]:
    """Several report folders of one model merged (e.g. a late-only and a naive-only run).

    Args:
        folders: ``latechunk compare`` report folders of the same dataset.

    Returns:
        ``(dataset, systems)`` as :func:`read_per_query`, the systems of every folder together.

    Raises:
        ValueError: if the folders score different datasets, or a system appears in two of them.
    """
    dataset, merged = None, {}
    for folder in folders:
        ds, systems = read_per_query(folder)
        if dataset is not None and ds != dataset:
            raise ValueError(f"{folder} scores {ds!r} but {folders[0]} scores {dataset!r}")
        dataset = ds
        for key, scores in systems.items():
            if key in merged:
                raise ValueError(f"system {key} is in two of the folders {[str(f) for f in folders]}: give each once")
            merged[key] = scores
    if dataset is None:
        raise ValueError("no report folder given")
    return dataset, merged


def _pick(systems: dict, strategy: str, mode: str, window: str | None, overlap: str | None = None):
    keys = [k for k in systems if k[0] == strategy and k[1] == mode]
    if mode in ("late", "fused"):  # one per late pass
        keys = [k for k in keys if (window is None or k[2] == window) and (overlap is None or k[3] in (overlap, ""))]
    if len(keys) > 1:
        raise ValueError(f"{strategy} {mode}: several late passes (window, overlap) "
                         f"{sorted((k[2], k[3]) for k in keys)}; pick one with --window / --window-overlap")
    return systems[keys[0]] if keys else None


def compare(a_dir: Path | Sequence[Path], b_dir: Path | Sequence[Path], metrics: list[str], a_name: str = "A",
            b_name: str = "B", window: str | None = None, resamples: int = 10000, seed: int = 0,
            window_overlap: str | None = None) -> tuple[list[str], list[dict]]:
    """Means and paired intervals of two report folders.

    Args:
        a_dir / b_dir: The report folder of model A and of model B (same dataset and queries), or a list of
            folders per model (merged by :func:`read_folders`).
        metrics: Metric names (columns of ``per_query.csv``), e.g. ``SpanRecall@5``.
        a_name / b_name: Names for the tables.
        window: The late macro window to use where a folder holds several (``"256"``); None: the only one.
        resamples: Bootstrap resamples.
        seed: Bootstrap seed.
        window_overlap: The late passes' window overlap in tokens (``"0"``) where a folder holds several;
            None: the only one. Folders without the ``window_overlap`` column match any value.

    Returns:
        ``(markdown lines, rows)``; each row a dict with ``strategy``, ``comparison``, ``metric``, ``mean_a``,
        ``mean_b``, ``diff``, ``ci_low``, ``ci_high``, ``n_queries`` (values in percent points).

    Raises:
        ValueError: if the folders score different datasets, a system is in two folders of one side, a folder
            holds several late passes that ``window`` / ``window_overlap`` do not single out, or the query ids of a
            pair differ.
    """
    from latechunk.eval.stats import paired_bootstrap

    a_dirs = [Path(a_dir)] if isinstance(a_dir, (str, Path)) else [Path(d) for d in a_dir]
    b_dirs = [Path(b_dir)] if isinstance(b_dir, (str, Path)) else [Path(d) for d in b_dir]
    ds_a, sys_a = read_folders(a_dirs)
    ds_b, sys_b = read_folders(b_dirs)
    a_dir = " + ".join(str(d) for d in a_dirs)
    b_dir = " + ".join(str(d) for d in b_dirs)
    if ds_a != ds_b:
        raise ValueError(f"{a_dir} scores {ds_a!r} but {b_dir} scores {ds_b!r}: a paired test needs one dataset")
    strategies = [s for s in dict.fromkeys(k[0] for k in sys_a) if any(k[0] == s for k in sys_b)]
    lines = [(f"Dataset `{ds_a}`; A = {a_name} (`{a_dir}`), B = {b_name} (`{b_dir}`). Values in %; intervals: "
              f"paired bootstrap 95% ({resamples} resamples, seed {seed}) of the mean per-query difference."), ""]
    rows: list[dict] = []
    for strategy in strategies:
        s = {(n, mode): _pick(src, strategy, mode, window, window_overlap) for n, src in ((a_name, sys_a), (b_name, sys_b))
             for mode in ("late", "naive", "fused")}
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
                 ((b_name, "late"), (b_name, "naive")), ((a_name, "fused"), (b_name, "naive")),
                 ((a_name, "fused"), (b_name, "late")), ((a_name, "fused"), (b_name, "fused"))]
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
    p.add_argument("--a", required=True, type=Path, nargs="+",
                   help="report folder(s) of model A (e.g. the trained model; several are merged)")
    p.add_argument("--b", required=True, type=Path, nargs="+",
                   help="report folder(s) of model B (e.g. the base model; several are merged)")
    p.add_argument("--a-name", default="A")
    p.add_argument("--b-name", default="B")
    p.add_argument("--metrics", default=DEFAULT_METRICS, help=f"comma list (default {DEFAULT_METRICS})")
    p.add_argument("--window", default=None, help="late macro window to use where a folder holds several")
    p.add_argument("--window-overlap", default=None, help="late window overlap to use where a folder holds several")
    p.add_argument("--resamples", type=int, default=10000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="also write the tables here (markdown)")
    args = p.parse_args(argv)
    try:
        lines, _ = compare(args.a, args.b, [m.strip() for m in args.metrics.split(",") if m.strip()], args.a_name,
                           args.b_name, args.window, args.resamples, args.seed, args.window_overlap)
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
