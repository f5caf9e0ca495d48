"""The late-chunking map of a comparison: late − naive over chunk size x macro window x overlap, and its cost.

Where does late chunking (Günther et al., arXiv:2409.04701) beat naive chunking, and what does it cost? A
``latechunk compare`` run that sweeps strategies (``fixed:size=32|64|128``), macro windows (``--window
128|256|512``) and window overlaps (``--window-overlap 0|32|64``) holds, per late pass and strategy, the paired
bootstrap interval of late minus naive (:mod:`.harness`, :mod:`.stats`). This module only reads those numbers
back and draws them (matplotlib, Agg backend); it computes no metric:

- :func:`map_cells` / :func:`write_map`: a heatmap per metric (the recall metric at the report's k and
  ``SpanIoU@k``), rows = strategies (chunk sizes), columns = late passes (window x overlap); each cell the mean
  paired difference in points, ``*`` and a frame where its 95% interval excludes 0.
- :func:`cost_points` / :func:`pareto_front` / :func:`write_frontier`: quality vs cost, cost = tokens through
  the encoder / the corpus's content tokens (late: the pass, shared by every strategy; naive: the chunks'
  texts), with the Pareto front (no other point both cheaper or as cheap and at least as good).
- :func:`merge_results`: several report folders of one dataset and model (e.g. one run per overlap) as one
  result, so their map is drawn as if one command had run them (the paired intervals are the same: same
  per-query values, same bootstrap seed).
- ``python -m latechunk.eval.map_cli --out DIR REPORT_DIR...`` (:mod:`.map_cli`): ``map.png``,
  ``frontier.png`` and ``map.md`` of the merged folders.

:func:`short_spec` (a SPEC without its default parameters) lives here so that :mod:`.report`, which draws the map
into its folder, can import this module without a cycle.

Tests: ``tests/eval/test_eval_plots.py``.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "CostPoint",
    "MapCell",
    "cost_points",
    "has_map",
    "iou_metric",
    "map_cells",
    "map_markdown",
    "merge_results",
    "pareto_front",
    "recall_metric",
    "short_spec",
    "write_frontier",
    "write_map",
]


@dataclass(frozen=True)
class MapCell:
    """One cell of the map: late minus naive for one strategy and one late pass.

    Attributes:
        strategy: The canonical SPEC (a row).
        window / overlap: The late pass (a column), tokens (frame included / content tokens).
        metric: The per-query metric compared.
        diff / low / high: Mean paired difference and its bootstrap interval, as fractions (x 100 = points).
        late / naive: The two systems' means (fractions).
    """

    strategy: str
    window: int
    overlap: int | None
    metric: str
    diff: float
    low: float
    high: float
    late: float
    naive: float

    @property
    def significant(self) -> bool:
        """True when the interval excludes 0."""
        return self.low > 0 or self.high < 0


@dataclass(frozen=True)
class CostPoint:
    """One system on the quality/cost plane.

    Attributes:
        strategy / mode / window / overlap: The system (``window``/``overlap`` ``None`` for naive).
        label: ``"late w=256 o=0"`` or ``"naive"`` style.
        cost: Tokens through the encoder / the corpus's content tokens (late: its pass's tokens, shared by every
            strategy of the pass; naive: its own chunks' tokens, frames included).
        tokens: Tokens through the encoder.
        quality: ``{metric: mean}`` (fractions).
    """

    strategy: str
    mode: str
    window: int | None
    overlap: int | None
    label: str
    cost: float
    tokens: int
    quality: dict


def recall_metric(result) -> str:
    """The map's recall metric: ``SpanRecall@k`` at the report's main k where the dataset has answer spans,
    else ``AR@k``, else the first headline metric.

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult`.

    Returns:
        The metric name.
    """
    k = result.main_k
    for m in (f"SpanRecall@{k}", f"AR@{k}"):
        if m in result.metric_names:
            return m
    return result.headline[0]


def iou_metric(result) -> str | None:
    """``SpanIoU@k`` at the report's main k, or ``None`` where the dataset has no answer spans."""
    m = f"SpanIoU@{result.main_k}"
    return m if m in result.metric_names else None


def _passes(result) -> list[tuple[int, int | None]]:
    """The late passes ``(window, overlap)`` in the manifest's order."""
    return list(dict.fromkeys((w["window"], w.get("overlap")) for w in result.manifest.get("windows", [])))


def has_map(result) -> bool:
    """Whether the result has a map to draw: late and naive, and several late passes or several strategies.

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult`.

    Returns:
        True when :func:`map_cells` has at least two cells.
    """
    if not {"late", "naive"} <= set(result.config.modes):
        return False
    return len(_passes(result)) > 1 and len(map_cells(result, recall_metric(result))) > 1


def map_cells(result, metric: str) -> list[MapCell]:
    """The late − naive cells of one metric, straight from the result's ``late-naive`` comparisons.

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult`.
        metric: A per-query metric name (``SpanRecall@5``).

    Returns:
        One :class:`MapCell` per (strategy, late pass) that has the comparison, strategies in report order,
        passes in the manifest's order.
    """
    by_label = {(s.strategy, s.label): s for s in result.systems}
    order = {p: i for i, p in enumerate(_passes(result))}
    specs = list(dict.fromkeys(s.strategy for s in result.systems))
    cells = []
    for c in result.comparisons:
        if c["kind"] != "late-naive" or c["metric"] != metric or c.get("window") is None:
            continue
        a, b = by_label[(c["strategy"], c["a"])], by_label[(c["strategy"], c["b"])]
        cells.append(MapCell(c["strategy"], int(c["window"]), c.get("window_overlap", a.window_overlap), metric,
                             float(c["mean_diff"]), float(c["ci_low"]), float(c["ci_high"]),
                             float(a.aggregates[metric]), float(b.aggregates[metric])))
    cells.sort(key=lambda x: (specs.index(x.strategy), order.get((x.window, x.overlap), len(order))))
    return cells


def _digits(metric: str) -> int:
    """Decimals of a metric's points in tables and cells: 2 for IoU (a few tenths of a percent), else 1."""
    return 2 if "IoU" in metric else 1


def _grid(cells: Sequence[MapCell]):
    rows = list(dict.fromkeys(c.strategy for c in cells))
    cols = list(dict.fromkeys((c.window, c.overlap) for c in sorted(cells, key=lambda c: (c.window, c.overlap or 0))))
    return rows, cols, {(c.strategy, (c.window, c.overlap)): c for c in cells}


def short_spec(spec: str) -> str:
    """A SPEC with only its non-default parameters: ``fixed:size=256,overlap=0`` -> ``fixed``.

    Args:
        spec: A SPEC string.

    Returns:
        ``name`` or ``name:key=value,...`` with the parameters that differ from the strategy's defaults.

    Raises:
        ValueError: as :func:`~latechunk.strategies.base.get_strategy` (unknown strategy or parameter).
    """
    from latechunk.strategies.base import get_strategy

    strat = get_strategy(spec)
    full = strat.spec.partition(":")[2].split(",") if ":" in strat.spec else []
    default = type(strat)().spec
    default_pairs = set(default.partition(":")[2].split(",")) if ":" in default else set()
    diff = [pair for pair in full if pair and pair not in default_pairs]
    return f"{strat.name}:{','.join(diff)}" if diff else strat.name


def _row_name(spec: str) -> str:
    return short_spec(spec)


def write_map(result, path: str | os.PathLike) -> list[str]:
    """``map.png``: one heatmap per metric (recall at k and, where the dataset has spans, IoU at k) of late −
    naive in points, rows = strategies, columns = late passes (window x overlap); ``*`` and a black frame mark a
    cell whose paired 95% interval excludes 0; the colour scale is symmetric around 0 (red: late loses, blue:
    late wins).

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult` with :func:`has_map`.
        path: The PNG file (matplotlib, Agg backend).

    Returns:
        The metrics drawn, in panel order.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    metrics = [m for m in (recall_metric(result), iou_metric(result)) if m]
    grids = [(m, *_grid(map_cells(result, m))) for m in metrics]
    n_rows = max(len(g[1]) for g in grids)
    n_cols = max(len(g[2]) for g in grids)
    fig, axes = plt.subplots(1, len(grids), figsize=(max(6.0, 0.9 * n_cols + 2.5) * len(grids), 0.55 * n_rows + 2.2),
                             squeeze=False)
    for ax, (metric, rows, cols, at) in zip(axes[0], grids):
        data = np.full((len(rows), len(cols)), np.nan)
        for i, r in enumerate(rows):
            for j, col in enumerate(cols):
                if (r, col) in at:
                    data[i, j] = 100 * at[(r, col)].diff
        lim = max(float(np.nanmax(np.abs(data))) if np.isfinite(data).any() else 1.0, 0.1)
        im = ax.imshow(data, cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto")
        for i, r in enumerate(rows):
            for j, col in enumerate(cols):
                c = at.get((r, col))
                if c is None:
                    continue
                ax.text(j, i, f"{100 * c.diff:+.{_digits(metric)}f}" + ("*" if c.significant else ""),
                        ha="center", va="center",
                        fontsize=8, fontweight="bold" if c.significant else "normal")
                if c.significant:
                    ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", lw=1.5))
        ax.set_xticks(range(len(cols)))
        ax.set_xticklabels([f"w={w}\no={o}" for w, o in cols], fontsize=7)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([_row_name(r) for r in rows], fontsize=7)
        ax.set_xlabel("late pass: macro window w x overlap o (tokens)")
        ax.set_title(f"late − naive, {metric} (points); * = 95% CI excludes 0", fontsize=9)
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle(f"late chunking map: {result.manifest['dataset']['name']}, {result.manifest['model']['name']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return metrics


def _content_tokens(result) -> int:
    wins = result.manifest.get("windows", [])
    return int(wins[0]["content_tokens"]) if wins else 0


def cost_points(result) -> list[CostPoint]:
    """Every late and naive system as a :class:`CostPoint` (cost = tokens through the encoder / content tokens).

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult`.

    Returns:
        The points, in report order; empty where the corpus's content tokens are unknown.
    """
    corpus = _content_tokens(result)
    if corpus <= 0:
        return []
    metrics = [m for m in (recall_metric(result), iou_metric(result)) if m]
    out = []
    for s in result.systems:
        if s.mode not in ("late", "naive"):
            continue
        tokens = int(s.costs.get("tokens_encoded", 0))
        out.append(CostPoint(s.strategy, s.mode, s.window if s.mode == "late" else None,
                             s.window_overlap if s.mode == "late" else None, s.label, tokens / corpus, tokens,
                             {m: float(s.aggregates[m]) for m in metrics if m in s.aggregates}))
    return out


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """The indices of the points on the quality/cost Pareto front (lower cost and higher quality are better).

    A point is on the front when no other point has a cost at most its cost and a quality at least its quality,
    one of them strictly better. Exact ties are all kept.

    Args:
        points: ``(cost, quality)`` pairs.

    Returns:
        The indices of the non-dominated points, cheapest first.
    """
    front = []
    for i, (c, q) in enumerate(points):
        dominated = any((c2 <= c and q2 >= q) and (c2 < c or q2 > q) for j, (c2, q2) in enumerate(points) if j != i)
        if not dominated:
            front.append(i)
    return sorted(front, key=lambda i: (points[i][0], -points[i][1]))


def write_frontier(result, path: str | os.PathLike) -> list[str]:
    """``frontier.png``: quality vs cost (tokens through the encoder / content tokens), one panel per metric
    (recall at k, IoU at k), late points by strategy (marker: window, label: overlap), naive points as crosses,
    the Pareto front (:func:`pareto_front`) as a line.

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult`.
        path: The PNG file (matplotlib, Agg backend).

    Returns:
        The metrics drawn, in panel order.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = cost_points(result)
    metrics = [m for m in (recall_metric(result), iou_metric(result)) if m]
    specs = list(dict.fromkeys(p.strategy for p in pts))
    windows = sorted({p.window for p in pts if p.window is not None})
    markers = "osD^v<>p"
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, axes = plt.subplots(1, len(metrics), figsize=(7.5 * len(metrics), 5.5), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        mine = [p for p in pts if metric in p.quality]
        for p in mine:
            color = colors[specs.index(p.strategy) % len(colors)]
            y = 100 * p.quality[metric]
            if p.mode == "naive":
                ax.scatter(p.cost, y, marker="x", color=color, s=50)
            else:
                ax.scatter(p.cost, y, marker=markers[windows.index(p.window) % len(markers)], color=color, s=30,
                           alpha=0.8)
                ax.annotate(str(p.overlap), (p.cost, y), fontsize=6, xytext=(2, 2), textcoords="offset points")
        front = pareto_front([(p.cost, p.quality[metric]) for p in mine])
        ax.plot([mine[i].cost for i in front], [100 * mine[i].quality[metric] for i in front], "k--", lw=0.8,
                label="Pareto front")
        for spec in specs:
            ax.scatter([], [], color=colors[specs.index(spec) % len(colors)], label=_row_name(spec))
        for w in windows:
            ax.scatter([], [], color="grey", marker=markers[windows.index(w) % len(markers)], label=f"late w={w}")
        ax.scatter([], [], color="grey", marker="x", label="naive")
        ax.set_xlabel("tokens through the encoder / corpus content tokens (label: overlap)")
        ax.set_ylabel(f"{metric} (%)")
        ax.set_title(f"{metric} vs encoder cost")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
    fig.suptitle(f"quality vs cost: {result.manifest['dataset']['name']}, {result.manifest['model']['name']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return metrics


def map_markdown(result, images: bool = False) -> str:
    """The map as Markdown: per metric a table (rows strategies, columns late passes) of late − naive in points
    with the 95% interval, ``*`` where it excludes 0; then the late passes' cost (tokens through the encoder /
    content tokens) and the cheapest late pass on the Pareto front of each metric.

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult` with :func:`has_map`.
        images: Also link ``map.png`` and ``frontier.png`` (as :func:`latechunk.eval.report.write_report` writes
            them beside ``report.md``).

    Returns:
        The Markdown text (a ``## Late chunking map`` section).
    """
    parts = ["## Late chunking map (late − naive per chunk size and late pass)", ""]
    for metric in [m for m in (recall_metric(result), iou_metric(result)) if m]:
        rows, cols, at = _grid(map_cells(result, metric))
        d = _digits(metric)
        parts.append(f"{metric}, late − naive in points [paired bootstrap 95% CI]; * = the interval excludes 0.")
        parts.append("")
        parts.append("| strategy | " + " | ".join(f"w={w} o={o}" for w, o in cols) + " |")
        parts.append("| --- |" + " ---: |" * len(cols))
        for r in rows:
            cells = []
            for col in cols:
                c = at.get((r, col))
                cells.append("–" if c is None else (f"{100 * c.diff:+.{d}f} [{100 * c.low:+.{d}f}, {100 * c.high:+.{d}f}]"
                                                    + (" *" if c.significant else "")))
            parts.append(f"| `{_row_name(r)}` | " + " | ".join(cells) + " |")
        parts.append("")
    pts = cost_points(result)
    late = {(p.window, p.overlap): p for p in pts if p.mode == "late"}
    if late:
        parts.append("Late passes: tokens through the encoder / corpus content tokens (shared by every strategy).")
        parts.append("")
        parts.append("| window | overlap | tokens through the encoder | cost |")
        parts.append("| ---: | ---: | ---: | ---: |")
        for (w, o), p in sorted(late.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
            parts.append(f"| {w} | {o} | {p.tokens:,} | {p.cost:.3f} |")
        parts.append("")
    if images:
        parts += ["![late − naive map](map.png)", "", "![quality vs cost](frontier.png)", ""]
    return "\n".join(parts)


def merge_results(results: Sequence) -> object:
    """Several comparisons of one dataset, model and query set (e.g. one run per window overlap) as one result.

    Late systems of every run are kept (labelled ``late w=W o=O``); a naive or contextual system found in
    several runs (same strategy and chunk-record hash) is kept once; the late − naive and window comparisons of
    every run are kept (the same numbers a single run would give: same per-query values, same bootstrap seed).
    The manifest is the first run's, with every run's late passes and commands.

    Args:
        results: :class:`~latechunk.eval.result.CompareResult` objects (e.g. from
            :func:`latechunk.eval.report.load_result`).

    Returns:
        A new :class:`~latechunk.eval.result.CompareResult` (the inputs are not changed).

    Raises:
        ValueError: on no results, or results of another dataset, model or query set, or two runs with the same
            late pass.
    """
    from .result import CompareResult

    if not results:
        raise ValueError("merge_results: give at least one result")
    first = results[0]
    key = lambda r: (r.manifest["dataset"].get("content_sha256"), r.manifest["model"].get("sha256"),
                     r.manifest.get("query_vectors", {}).get("sha256"))
    for r in results[1:]:
        if key(r) != key(first):
            raise ValueError("merge_results: the runs differ in dataset, model or query vectors; "
                             "only runs of one dataset and model can be drawn as one map")
    systems, seen_text, seen_pass, windows, comps, commands = [], {}, set(), [], [], []
    for r in results:
        relabel = {}
        for w in r.manifest.get("windows", []):
            p = (w["window"], w.get("overlap"))
            if p in seen_pass:
                raise ValueError(f"merge_results: late pass window={p[0]} overlap={p[1]} is in two runs")
            seen_pass.add(p)
            windows.append(copy.deepcopy(w))
        for s in r.systems:
            s2 = copy.deepcopy(s)
            if s.mode == "late":
                s2.label = f"late w={s.window} o={s.window_overlap}"
            else:
                k = (s.strategy, s.mode, s.chunks_sha256, s.window, s.window_overlap)
                if k in seen_text:
                    relabel[(s.strategy, s.label)] = seen_text[k]
                    continue
                seen_text[k] = s2.label
            relabel[(s.strategy, s.label)] = s2.label
            systems.append(s2)
        for c in r.comparisons:
            if c["kind"] == "strategy":
                continue  # within one run's first pass only
            c2 = dict(c)
            c2["a"] = relabel.get((c["strategy"], c["a"]), c["a"])
            c2["b"] = relabel.get((c["strategy"], c["b"]), c["b"])
            comps.append(c2)
        commands.append(r.manifest.get("command", ""))
    order = {p: i for i, p in enumerate(sorted(seen_pass, key=lambda p: (p[0], p[1] or 0)))}
    specs = list(dict.fromkeys(s.strategy for s in systems))
    mode_rank = {"late": 0, "naive": 1, "contextual": 2, "fused": 3}
    systems.sort(key=lambda s: (specs.index(s.strategy), mode_rank.get(s.mode, 3),
                                order.get((s.window, s.window_overlap), -1)))
    windows.sort(key=lambda w: order[(w["window"], w.get("overlap"))])
    manifest = copy.deepcopy(first.manifest)
    manifest["windows"] = windows
    manifest["command"] = " ;; ".join(commands)
    manifest["merged_from"] = commands
    names = list(dict.fromkeys(m for r in results for m in r.metric_names))
    return CompareResult(first.config, systems, comps, names, list(first.headline), first.main_k, manifest)
