"""``plot.png`` (:func:`write_plot`): the main metric per strategy and system with bootstrap CIs, the paired
differences (late − naive, or every mode pair), and quality against two costs (tokens through the encoder,
seconds). Confidence intervals of a single system's mean use the same paired bootstrap as the comparisons,
paired against zero. matplotlib (Agg backend) is imported inside :func:`write_plot`.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence

from ..plots import short_spec
from ..result import MODE_PAIRS
from ..stats import paired_bootstrap
from .formatting import _col_name


def _mean_ci(values: dict, config) -> tuple[float, float, float]:
    zeros = {q: 0.0 for q in values}
    r = paired_bootstrap(values, zeros, n_resamples=config.n_resamples, confidence=config.confidence, seed=config.seed)
    return r.mean_diff, r.ci_low, r.ci_high


def _pair_series(result, metric: str) -> tuple[list[dict], list[tuple[str, str, str]], str, str]:
    """plot.png's panel (b): the comparisons it draws and its series ``(kind, metric, legend label)``, y label and
    title. Only late and naive: late − naive for every headline metric; with fused or contextual systems too, every
    mode pair (``kind`` ``"A-B"`` of :data:`~latechunk.eval.result.MODE_PAIRS`) for ``metric``, one series a pair."""
    pairs = {f"{a}-{b}" for a, b in MODE_PAIRS}
    kinds = list(dict.fromkeys(c["kind"] for c in result.comparisons if c["kind"] in pairs))
    if kinds and kinds != ["late-naive"]:
        comps = [c for c in result.comparisons if c["kind"] in kinds and c["metric"] == metric]
        series = [(k, metric, k.replace("-", " − ") + f" ({_col_name(metric)})") for k in kinds]
        return comps, series, f"difference in {_col_name(metric)} (points)", "paired differences, bootstrap 95% CI"
    comps = [c for c in result.comparisons if c["kind"] == "late-naive" and c["metric"] in result.headline]
    series = [("late-naive", m, _col_name(m)) for m in result.headline if any(c["metric"] == m for c in comps)]
    return comps, series, "late − naive (points)", "late minus naive, paired bootstrap 95% CI"


def _tick_label(spec: str, window: int | None = None) -> str:
    """A category label of plot.png: the SPEC's non-default settings one a line (a sweep's SPECs differ in
    them; on one line six were wider than their slots and overlapped), the macro window when it has one."""
    name, _, settings = short_spec(spec).partition(":")
    lines = [name] + [x for x in settings.split(",") if x]
    return "\n".join(lines + ([f"w={window}"] if window is not None else []))


def _renderer(fig):
    """The figure's Agg renderer, to measure text (a figure made under another backend gets an Agg canvas)."""
    if not hasattr(fig.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    return fig.canvas.get_renderer()


def _categories(ax, labels: Sequence[str]) -> None:
    """Category ticks at 0..n-1, labelled; labels that would overlap are turned, each on one line."""
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=7)
    renderer = _renderer(ax.figure)
    boxes = [t.get_window_extent(renderer) for t in ax.get_xticklabels()]
    if any(a.x1 + 2 > b.x0 for a, b in itertools.pairwise(boxes)):
        ax.set_xticklabels([x.replace("\n", " ") for x in labels], fontsize=6, rotation=60, ha="right",
                           rotation_mode="anchor")


def write_plot(result, path: str | os.PathLike) -> None:
    """``plot.png``: (a) the main metric per strategy, late (each macro window) and naive, with bootstrap CIs;
    (b) late minus naive with CIs (with fused or contextual systems: every paired difference of the main metric,
    fused − late and fused − naive among them); (c) quality vs tokens through the encoder; (d) quality vs encode seconds.

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult`.
        path: The PNG file to write (matplotlib, Agg backend).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    metric = f"AR@{result.main_k}" if f"AR@{result.main_k}" in result.headline else result.headline[0]
    specs = list(dict.fromkeys(s.strategy for s in result.systems))
    labels = list(dict.fromkeys(s.label for s in result.systems))
    fig, axes = plt.subplots(2, 2, figsize=(14, 10))
    ax = axes[0, 0]
    width = 0.8 / max(len(labels), 1)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    if len(labels) > len(colors):  # one colour a system (tab20 has 20; beyond, a continuous map)
        cmap = plt.get_cmap("tab20" if len(labels) <= 20 else "turbo")
        colors = [cmap(i / max(len(labels) - 1, 1)) if len(labels) > 20 else cmap(i) for i in range(len(labels))]
    for j, label in enumerate(labels):
        xs, ys, lo, hi = [], [], [], []
        for i, spec in enumerate(specs):
            s = next((x for x in result.systems if x.strategy == spec and x.label == label), None)
            if s is None or metric not in s.per_query:
                continue
            mean, a, b = _mean_ci(s.per_query[metric], result.config)
            xs.append(i + (j - (len(labels) - 1) / 2) * width)
            ys.append(100 * mean)
            lo.append(100 * (mean - a))
            hi.append(100 * (b - mean))
        ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", capsize=3, label=label, color=colors[j % len(colors)])
    _categories(ax, [_tick_label(s) for s in specs])
    ax.set_ylabel(f"{_col_name(metric)} (%)")
    ax.set_title(f"{_col_name(metric)} per strategy, 95% bootstrap CI")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)

    ax = axes[0, 1]
    # late − naive for every headline metric; with other pairs (fused − late, fused − naive, ... − contextual),
    # every pair for the main metric instead, one series a pair
    comps, series, ylabel, title = _pair_series(result, metric)
    windows: dict[str, set] = {}
    for c in comps:
        windows.setdefault(c["strategy"], set()).update([c["window"]] if c["window"] is not None else [])

    def key(c):  # a pair without a macro window (naive − contextual) sits with its strategy's one window
        w = c["window"]
        if w is None and len(windows[c["strategy"]]) == 1:
            w = next(iter(windows[c["strategy"]]))
        return c["strategy"], w

    names = list(dict.fromkeys(key(c) for c in comps))
    pair_colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for j, (kind, m, name) in enumerate(series):
        ys, lo, hi, xs = [], [], [], []
        for i, k in enumerate(names):
            c = next((c for c in comps if key(c) == k and c["metric"] == m and c["kind"] == kind), None)
            if c is None:
                continue
            xs.append(i + (j - (len(series) - 1) / 2) * (0.8 / max(len(series), 1)))
            ys.append(100 * c["mean_diff"])
            lo.append(100 * (c["mean_diff"] - c["ci_low"]))
            hi.append(100 * (c["ci_high"] - c["mean_diff"]))
        ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", capsize=3, label=name, color=pair_colors[j % len(pair_colors)])
    ax.axhline(0, color="black", lw=0.8)
    _categories(ax, [_tick_label(s, w) for s, w in names])
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if series:
        ax.legend(fontsize=7, ncol=2)
    else:  # one mode asked for (fused alone too: its late and naive parts are encoded but not reported)
        ax.set_title("paired differences")
        ax.text(0.5, 0.5, "no mode pairs to compare:\none mode was asked for (--modes)", ha="center", va="center",
                transform=ax.transAxes, fontsize=10)
    ax.grid(alpha=0.3)

    for ax, cost, xlabel in ((axes[1, 0], "tokens_encoded", "tokens through the encoder (late: shared pass)"),
                             (axes[1, 1], "seconds", "encode (+ pool) seconds")):
        for j, label in enumerate(labels):
            pts = [(s.costs[cost], 100 * s.aggregates[metric], short_spec(s.strategy))
                   for s in result.systems if s.label == label and metric in s.aggregates]
            if not pts:
                continue
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], label=label, color=colors[j % len(colors)])
            for x, y, name in pts:
                ax.annotate(name, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        xs = [s.costs[cost] for s in result.systems]
        if xs and min(xs) > 0 and max(xs) / min(xs) >= 10:  # log only over a decade or more: else its minor-tick
            ax.set_xscale("log")                            # labels (3.235 x 10^5 ...) overlap and say nothing
        else:
            ax.ticklabel_format(axis="x", style="plain", useOffset=False)
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if abs(v) >= 100 else f"{v:g}"))
            ax.tick_params(axis="x", labelrotation=20)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(f"{_col_name(metric)} (%)")
        ax.set_title(f"cost vs quality ({cost.replace('_', ' ')})")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.suptitle(f"latechunk compare: {result.manifest['dataset']['name']}, {result.manifest['model']['name']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
