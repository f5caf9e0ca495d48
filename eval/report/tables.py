"""The Markdown tables of report.md: metrics per system (best value in bold), costs, compact-vector settings,
the paired mode comparisons (late − naive, ...), strategy A − B, the window sweep, and the chunk-record hash
labels. Each takes a :class:`~latechunk.eval.result.CompareResult` and returns the table's text.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..plots import short_spec
from .formatting import _best, _ci, _col_name, _fmt, _overlap_sweep, _pass_name, _table


def _metric_table(result, metrics: Sequence[str], with_fp: bool = False) -> str:
    systems = result.systems
    cols = list(metrics) + (["FactsProtected"] if with_fp else [])
    best = {m: _best([s.aggregates.get(m) for s in systems], m) for m in cols}
    best_text = {m: _fmt(m, b) for m, b in best.items() if b is not None}  # bold as printed: ties that round alike
    rows = []
    for s in systems:
        cells = [f"`{short_spec(s.strategy)}`", s.label]
        for m in cols:
            v = s.aggregates.get(m)
            text = _fmt(m, v)
            if v is not None and best[m] is not None and text == best_text[m] and len(systems) > 1:
                text = f"**{text}**"
            cells.append(text)
        rows.append(cells)
    return _table(["strategy", "mode"] + [_col_name(m) for m in cols], rows)


def _cost_table(result) -> str:
    rows = []
    for s in result.systems:
        c = s.costs
        theo = "–" if c.get("overlap_theoretical") is None else f"{c['overlap_theoretical']:.3f}"
        tokens = f"{c['tokens_encoded']:,}" + (" (shared)" if c.get("tokens_encoded_shared") else "")
        rows.append([
            f"`{short_spec(s.strategy)}`", s.label, f"{c['chunks']:,}", f"{c['mean_chunk_tokens']:.1f}", f"{c['mean_chunk_chars']:.0f}",
            tokens, f"{c['overlap_observed']:.3f}", theo, f"{c['index_bytes']:,}",
            f"{c['seconds_encode']:.1f}" + (f" + {c['seconds_pool']:.2f}" if s.mode == "late" else ""),
        ])
    return _table(["strategy", "mode", "chunks", "mean chunk tokens", "mean chunk chars", "tokens through encoder",
                   "overlap observed", "s/(s-v)", "index bytes", "seconds (encode + pool)"], rows)


def _compact_metrics(result) -> list[str]:
    """The metrics shown per compact-vector setting: the headline metrics at the main k (AR@5, SpanRecall@5 or
    the document measures)."""
    k = result.main_k
    at_k = [m for m in result.headline if m.endswith(f"@{k}")]
    return at_k or list(result.headline[:1])


def _compact_table(result) -> str:
    """One row per system and compact-vector setting: headline metric(s) at the main k, top-k kept, index bytes
    (and the ratio to the system's first setting)."""
    metrics = _compact_metrics(result)
    rows = []
    for s in result.systems:
        ref = next(iter(s.compact.values()), {}).get("index_bytes") or 1
        for label, c in s.compact.items():
            rows.append([f"`{short_spec(s.strategy)}`", s.label, f"`{label}`", f"`{c['faiss_factory']}`"]
                        + [_fmt(m, c["metrics"].get(m)) for m in metrics]
                        + [f"{100 * c['overlap_with_main']:.1f}", f"{c['index_bytes']:,}",
                           f"{c['index_bytes'] / ref:.3f}"])
    return _table(["strategy", "mode", "setting", "faiss index"] + [_col_name(m) for m in metrics]
                  + ["top-k kept (%)", "index bytes", "× first"], rows)


_PAIR_KINDS = ("late-naive", "late-contextual", "naive-contextual", "fused-late", "fused-naive")
"""The mode-pair comparisons, in report order (``kind`` = ``"A-B"``: mode A minus mode B)."""


def _late_naive_table(result, metrics: Sequence[str], kind: str = "late-naive") -> str:
    """One row per strategy, window and metric of the ``kind`` comparisons (mode A minus mode B)."""
    mode_a, mode_b = kind.split("-")
    by = {(s.label, s.strategy): s for s in result.systems}
    rows = []
    for c in result.comparisons:
        if c["kind"] != kind or c["metric"] not in metrics:
            continue
        a, b = by[(c["a"], c["strategy"])], by[(c["b"], c["strategy"])]
        m = c["metric"]
        sig = " *" if c["ci_low"] > 0 or c["ci_high"] < 0 else ""
        rows.append([f"`{short_spec(c['strategy'])}`", _pass_name(result, c["window"], c.get("window_overlap")), _col_name(m),
                     _fmt(m, a.aggregates[m]),
                     _fmt(m, b.aggregates[m]), _ci(c, m) + sig, f"{c['p_le_zero']:.3f}"])
    return _table(["strategy", "window", "metric", mode_a, mode_b, f"{mode_a} − {mode_b} [95% CI]", "P(boot mean ≤ 0)"],
                  rows)


def _strategy_table(result, metric: str) -> str:
    rows = []
    for c in result.comparisons:
        if c["kind"] != "strategy" or c["metric"] != metric:
            continue
        sig = " *" if c["ci_low"] > 0 or c["ci_high"] < 0 else ""
        rows.append([c["mode"], f"`{short_spec(c['a'])}`", f"`{short_spec(c['b'])}`", _ci(c, metric) + sig])
    return _table(["mode", "A", "B", f"A − B, {_col_name(metric)} [95% CI]"], rows)


def _window_table(result) -> str:
    metrics = result.headline
    comps = {(c["strategy"], c["window"], c.get("window_overlap"), c["metric"]): c for c in result.comparisons
             if c["kind"] in ("window", "overlap")}
    ln = {(c["strategy"], c["window"], c.get("window_overlap"), c["metric"]): c for c in result.comparisons
          if c["kind"] == "late-naive"}
    first = result.manifest["windows"][0]["window"]
    first_o = result.manifest["windows"][0]["overlap"]
    ks = sorted(int(m.split("@")[1]) for m in metrics if m.startswith("AR@"))
    shown = list(dict.fromkeys(f"AR@{k}" for k in (ks[0], result.main_k) if f"AR@{k}" in metrics)) if ks else [metrics[0]]
    rows = []
    for s in result.systems:
        if s.mode != "late":
            continue
        cells = [f"`{short_spec(s.strategy)}`", str(s.window), str(s.window_overlap)]
        cells += [_fmt(m, s.aggregates.get(m)) for m in metrics]
        for m in shown:
            c = comps.get((s.strategy, s.window, s.window_overlap, m))
            ref = (s.window, s.window_overlap) == (first, first_o)
            cells.append("(reference)" if ref else (_ci(c, m) if c else "–"))
        for m in shown:
            c = ln.get((s.strategy, s.window, s.window_overlap, m))
            cells.append(_ci(c, m) if c else "–")
        rows.append(cells)
    ref_name = (f"w − w={first}, o − o={first_o} at the same w" if _overlap_sweep(result) else f"w − w={first}")
    return _table(["strategy", "window", "overlap"] + [_col_name(m) for m in metrics]
                  + [f"{m}: {ref_name} [95% CI]" for m in shown] + [f"{m}: late − naive [95% CI]" for m in shown], rows)


def _hash_labels(systems) -> list[str]:
    """One label (short strategy name, hash prefix) per chunk-record set; a strategy whose cuts differ per late pass (semantic in a
    window sweep) gets one per pass, named by its window (and overlap where the passes' overlaps differ)."""
    hashes: dict[str, list[str]] = {}
    passes = {}
    for s in systems:
        hashes.setdefault(s.strategy, [])
        if s.chunks_sha256 not in hashes[s.strategy]:
            hashes[s.strategy].append(s.chunks_sha256)
        if s.window is not None:
            passes.setdefault((s.strategy, s.chunks_sha256), (s.window, s.window_overlap))
    overlaps = {ov for _, ov in passes.values()}
    out = []
    for spec, hs in hashes.items():
        for h in hs:
            where = ""
            if len(hs) > 1 and (spec, h) in passes:
                w, ov = passes[(spec, h)]
                where = f" w={w}" + (f" o={ov}" if len(overlaps) > 1 else "")
            out.append(f"`{short_spec(spec)}`{where} {h[:8]}")
    return out
