"""The report folder of ``latechunk compare``: ``report.md``, ``results.json``, ``per_query.csv``, ``plot.png``.

Nothing here computes a metric: every number comes from a :class:`~latechunk.eval.harness.CompareResult`; this module
only formats (quality metrics as percentages, i.e. the mean over queries times 100, one decimal) and draws.
Confidence intervals of a single system's mean (the plot's error bars) use the same paired bootstrap as the
comparisons, paired against zero. Two diagnostics of the chunks themselves are added to the manifest here, from
the result's pipeline runs, by :func:`add_diagnostics` (before ``results.json`` is written): parse alarms per
strategy (:func:`latechunk.alarms.parse_alarms`) and the boundary agreement of every strategy pair
(:func:`latechunk.agree.agreement_report`). Tests: ``tests/test_eval_harness.py``, ``tests/test_eval_report.py``.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path

from .config import CompareConfig
from .plots import short_spec
from .result import MODE_PAIRS, CompareResult, System
from .stats import paired_bootstrap

__all__ = ["PER_QUERY_COLUMNS", "REPORT_FILES", "add_diagnostics", "markdown_report", "per_query_rows", "print_alarms", "print_table",
           "short_spec", "write_report"]

REPORT_FILES = ("report.md", "results.json", "per_query.csv", "plot.png")

PER_QUERY_COLUMNS = ("dataset", "query_id", "question", "strategy", "mode", "window", "window_overlap", "label",
                     "top_hits")
"""The columns of ``per_query.csv`` that name a query or a system (or show its hits); every other one is a metric.
Folders written before ``question`` and ``top_hits`` existed lack those two."""

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


#: up to this many documents, report.md says the document-level metrics cannot separate systems
SMALL_CORPUS_DOCUMENTS = 10


def _ci(c: dict, metric: str) -> str:
    return f"{_fmt_diff(metric, c['mean_diff'])} [{_fmt_bound(metric, c['ci_low'])}, {_fmt_bound(metric, c['ci_high'])}]"


def _fmt_bound(metric: str, value: float) -> str:
    """An interval bound as :func:`_fmt_diff` prints it, with two more decimals where it would print as ±0.0 (a
    trial read "[+0.0, +4.0]", unstarred, as excluding 0: the bound was 0 or just below it)."""
    text = _fmt_diff(metric, value)
    if value != 0 and text.lstrip("+-") in ("0.0", "0.00"):
        return f"{100 * value:+.3f}" if _is_pct(metric) else f"{value:+.4f}"
    return "0.0" if value == 0 and _is_pct(metric) else ("0.00" if value == 0 else text)


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


def _overlap_sweep(result) -> bool:
    """Whether the result's late passes differ in window overlap (``--window-overlap 0|32|64``)."""
    return len({w.get("overlap") for w in result.manifest.get("windows", [])}) > 1


def _pass_name(result, window, overlap) -> str:
    """A late pass in a table cell: ``256``, or ``256 o=32`` in an overlap sweep; ``–`` for no window."""
    if window is None:
        return "–"
    return f"{window} o={overlap}" if _overlap_sweep(result) and overlap is not None else str(window)


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


def markdown_report(result) -> str:
    """The text of ``report.md``.

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult` (from
            :func:`~latechunk.eval.harness.run_compare` or :func:`load_result`).

    Returns:
        The Markdown text: headline tables, costs, the late passes (one per macro window), comparisons with
        bootstrap CIs, and how the numbers were made.
    """
    man = result.manifest
    cfg = result.config
    ds = man["dataset"]
    model = man["model"]
    m = man["machine"]
    cpu = next((line.split(":", 1)[1].strip() for line in m.get("lscpu_head", []) if line.startswith("Model name")), "?")
    sec = man["seconds"]
    parts = [f"# latechunk compare: {ds['name']}", ""]
    parts.append(f"Command: `{man['command'] or '(library call)'}`  ")
    dirty = man.get("git_dirty")
    parts.append(f"Git commit: `{man['git_commit'] or '?'}`"
                 + (" (tracked files modified)" if dirty else " (clean)" if dirty is False else ""))
    parts.append("")
    parts.append(
        f"- **Dataset**: `{ds['spec']}` ({ds['name']}): {ds['documents']} documents, {ds['queries']} of "
        f"{ds['queries_total']} queries scored ({ds['queries_with_spans']} with {ds['spans']} answer spans; "
        f"{ds['doc_qrels_queries']} with document qrels, from {ds['qrels_source']}). Content sha256 "
        f"({ds.get('content_sha256_of', 'documents, queries')}) "
        f"`{ds['content_sha256'][:16]}…`; parse cache key `{(ds['sha256'] or '–')[:16]}…` "
        f"({'hit' if ds['cache_hit'] else 'parsed'})."
        + "".join(f" Left out: {n}." for n in ds.get("notes", ()))
    )
    parts.append(
        f"- **Model**: `{model['name']}` (weights sha256 `{(model['sha256'] or '?')[:16]}…`), dim {model['dim']}, "
        f"{model['dtype']} on {model['device']}, max length {model['max_length']} tokens, pooling {model['pooling']}. "
        f"Query vectors: {man['query_vectors']['n']} computed once and shared by every system "
        f"(sha256 `{man['query_vectors']['sha256'][:16]}…`)."
    )
    ix = man["index"]
    parts.append(
        f"- **Index**: one FAISS `{ix['factory']}` index per system, metric `{ix['metric']}`, identical settings; "
        f"searched {ix['search_depth']} deep (span metrics read the first {ix['span_depth']}"
        f"{', duplicates dropped by char offsets before scoring' if man['dedup'] else ''}; document run from the "
        f"first {ix['doc_depth']} chunks, a document scored as its best chunk)."
    )
    parts.append(f"- **k**: {', '.join(map(str, man['ks']))}. **Modes**: {', '.join(man['modes'])}.")
    titles = man.get("titles")
    if titles and "contextual" in man["modes"]:  # where the contextual headers' titles came from
        parts.append("- **Titles** (contextual headers `[title > section path]`): "
                     + ", ".join(f"{n} document{'s' if n != 1 else ''} from {o.replace('_', ' ')}"
                                 for o, n in titles["origins"].items())
                     + "; e.g. " + ", ".join(f"`{e['doc_id']}` → \"{e['title']}\"" for e in titles["examples"][:3])
                     + ".")
    parts.append("- **Strategies** (tables use the short names; full SPECs): "
                 + "; ".join(f"`{short_spec(x)}` = `{x}`" for x in man["strategies"]) + ".")
    parts.append(
        f"- **Machine**: {m['nproc']} CPUs available (`nproc`), {cpu}; torch threads {m['torch_threads']}; "
        f"GPU: {m['gpu'] or 'none'}; {m['platform']}."
    )
    v = man["versions"]
    parts.append("- **Versions**: " + ", ".join(f"{k} {val}" for k, val in v.items()) + ".")
    parts.append(
        f"- **Wall time**: {sec['total']:.1f} s in all ("
        + ", ".join(f"{k.replace('_', ' ')} {val:.1f} s" for k, val in sec.items() if k != "total")
        + ")."
    )
    parts.append("")
    parts.append("## Late passes (one per macro window)")
    parts.append("")
    rows = []
    # contextual mode's own encoding, where it ran (a trial: its tokens and seconds were missing, so the wall time
    # did not add up); naive_extra (re-encoded state-dependent cuts) is counted with naive, as before
    ctx = any("contextual_tokens" in w for w in man["windows"])
    for w in man["windows"]:
        s = w["seconds"]
        recut = w.get("recut", {})  # naive/contextual re-encoded for this window's cuts (state-dependent strategies)
        encoded = ", ".join(f"{m} (of {', '.join(f'`{short_spec(x)}`' for x in recut[m])} only: its cuts depend "
                            "on the window)" if m in recut else m for m in w["modes"])
        row = [str(w["window"]), str(w["overlap"]), encoded, f"{w['late_tokens']:,}",
               str(w["late_forward_calls"]), f"{w['naive_tokens']:,}"]
        row += [f"{w.get('contextual_tokens', 0):,}"] if ctx else []
        row += [f"{s.get('late_encode', 0):.1f}", f"{s.get('naive_encode', 0) + s.get('naive_extra', 0):.1f}"]
        row += [f"{s.get('contextual_encode', 0):.1f}"] if ctx else []
        rows.append(row + [f"{s['wall']:.1f}", f"{w['documents_embedded']}/{w['documents_in']}"])
    parts.append(_table(["window", "overlap", "modes encoded", "late tokens", "late forward calls", "naive tokens"]
                        + (["contextual tokens"] if ctx else []) + ["late encode s", "naive encode s"]
                        + (["contextual encode s"] if ctx else []) + ["wall s", "docs"], rows))
    parts.append("")
    parts.append(
        "Late mode encodes each document once per window (overlapping macro windows for a document longer than "
        "the window) and pools every strategy's chunks from those states, so its token count is shared by all "
        "strategies of the window. Naive mode encodes each chunk's text on its own with the model's pooling. "
        "Late and naive of one strategy index the same chunk records (checked by hash: "
        + ", ".join(_hash_labels(result.systems)) + ")."
        + (" Fused systems encode nothing of their own: each is made from a pass's late vectors and the naive "
           "vectors of the same chunks, so late and naive are encoded whenever fused is asked for (and their "
           "systems are reported only when asked for too)." if "fused" in man.get("modes", ()) else "")
    )
    parts.append("")
    parts.append("## Units and definitions")
    parts.append("")
    parts.append(
        "Quality values are percentages (mean over queries × 100); `Dup@k` is a mean count of slots. Span metrics "
        "count **characters** of the source document (Python `str` indices), as Chroma's code does (their report "
        "speaks of tokens). `AR@k`: share of a query's answer spans lying wholly inside one top-k chunk. "
        "`SpanRecall@k`, `SpanPrecision@k`, `SpanIoU@k`: Chroma's recall, precision and IoU over the top-k "
        "chunks (precision and IoU sum the retrieved chunk lengths). `PrecisionΩ`: Chroma's precision Ω, the best "
        "precision the strategy's chunks allow (same for both modes). `FactsProtected`: share of all answer spans "
        "that some chunk holds whole (span-weighted; bounds AR at any k). `Dup@k`: top-k slots spent on a chunk "
        "overlapping an earlier top-k chunk of the same document (counted before any dedup). Document level "
        "(ir_measures, qrels derived from the spans where the dataset has none): nDCG@10, R@100 and MRR@10 "
        "with a document scored as its best retrieved chunk. Costs: chunks, mean chunk length in model tokens, "
        "tokens through the encoder per mode, observed overlap multiplier (chunk tokens / content tokens) beside "
        "s/(s-v) for `fixed`, FAISS index bytes, seconds. Best value per column in **bold**."
    )
    parts.append("")
    span_metrics = [x for x in result.metric_names if x.startswith(("AR@", "SpanRecall@", "SpanPrecision@", "SpanIoU@"))]
    if span_metrics:
        parts.append(f"## Answer and span metrics (mean over {ds['queries_with_spans']} queries, %)")
        parts.append("")
        extra = ["PrecisionOmega"] if "PrecisionOmega" in result.metric_names else []
        parts.append(_metric_table(result, span_metrics + extra, with_fp=True))
        parts.append("")
    rest = [x for x in result.metric_names if x.startswith("Dup@") or x in _DOC_NAMES]
    if rest:
        parts.append("## Duplicates and document-level metrics")
        parts.append("")
        parts.append(_metric_table(result, rest))
        parts.append("")
        n_docs = int(ds.get("documents") or 0)
        if any(x in _DOC_NAMES for x in rest) and 0 < n_docs <= SMALL_CORPUS_DOCUMENTS:
            # a trial read 99-100 for every system as a result
            parts.append(f"With {n_docs} documents the document-level metrics rank a handful of documents: R@100 "
                         "holds every document by construction and nDCG@10 and MRR@10 have little room to differ, "
                         "so they hardly tell these systems apart; read the span metrics above.")
            parts.append("")
    parts.append("## Costs")
    parts.append("")
    parts.append(_cost_table(result))
    parts.append("")
    if any(s.compact for s in result.systems):
        settings = man["index"].get("compact_settings", [])
        k = next(iter(next(s for s in result.systems if s.compact).compact.values()))["overlap_k"]
        parts.append("## Compact vectors (precision, truncated dimensions)")
        parts.append("")
        parts.append(
            "One index per setting over the same vectors, searched with the same queries (truncated and "
            "renormalised like the vectors) and scored by the same code; the first setting is the main index of "
            "every other table. Settings: "
            + ", ".join(f"`{x['label']}` (faiss `{x['faiss_factory']}`)" for x in settings)
            + ". float16/int8: faiss scalar quantizers (int8 ranges calibrated per dimension on the corpus), "
            "scored against the float query; ubinary: Hamming search for "
            + next((f"{x['rescore_multiplier']}" for x in settings if "rescore_multiplier" in x), "4")
            + f" × k candidates, rescored with the float query (sentence-transformers' `quantize_embeddings` and "
            f"`semantic_search_faiss` semantics). `top-k kept`: mean share (%) of the main index's top {k} "
            f"chunks that the setting also ranks in its top {k}. Index bytes: the serialized FAISS index."
        )
        parts.append("")
        parts.append(_compact_table(result))
        parts.append("")
    ln_metrics = list(result.headline) + [x for x in (f"SpanIoU@{result.main_k}", "nDCG@10") if x in result.metric_names
                                         and x not in result.headline]
    for kind in _PAIR_KINDS:  # late − naive, late − contextual, naive − contextual
        if not any(c["kind"] == kind for c in result.comparisons):
            continue
        mode_a, mode_b = kind.split("-")
        parts.append(f"## {mode_a.capitalize()} minus {mode_b} (paired bootstrap, {int(cfg.confidence * 100)}% CI, "
                     f"{cfg.n_resamples} resamples, seed {cfg.seed})")
        parts.append("")
        parts.append("Percentage points; `*` marks an interval that excludes 0. Every metric's comparison is in "
                     "`results.json`.")
        parts.append("")
        parts.append(_late_naive_table(result, ln_metrics, kind))
        parts.append("")
    main_metric = f"AR@{result.main_k}" if f"AR@{result.main_k}" in result.headline else result.headline[0]
    if any(c["kind"] == "strategy" and c["metric"] == main_metric for c in result.comparisons):
        parts.append(f"## Strategy A minus B ({_col_name(main_metric)}, paired bootstrap {int(cfg.confidence * 100)}% CI)")
        parts.append("")
        parts.append(_strategy_table(result, main_metric))
        parts.append("")
    if len(man["windows"]) > 1:
        parts.append("## Window sweep (late mode)")
        parts.append("")
        parts.append(_window_table(result))
        parts.append("")
    parts += _map_section(result)
    parts += _dedup_section(result)
    parts += _alarm_section(result)
    parts += _agreement_section(result)
    parts.append("![late vs naive per strategy; cost vs quality](plot.png)")
    parts.append("")
    return "\n".join(parts)


def _map_section(result) -> list[str]:
    """The late − naive map (chunk size x macro window x overlap) and the quality/cost frontier, where the result
    has several late passes and both modes (:mod:`.plots`)."""
    from .plots import has_map, map_markdown

    if not has_map(result):
        return []
    return [map_markdown(result, images=True), ""]


def _dedup_section(result) -> list[str]:
    """``compare --dedup-threshold``: each system's metrics on the full index beside the deduplicated one."""
    t = result.config.dedup_threshold
    if t is None or not any(m.startswith(_DEDUP) for m in result.metric_names):
        return []
    k = result.main_k
    base = [m for m in result.headline if m.endswith(f"@{k}")] or list(result.headline[:1])
    base += [m for m in (f"Dup@{k}", f"NearDup@{k}") if m in result.metric_names]
    shown = [m for m in base if f"{_DEDUP}{m}" in result.metric_names]
    rows = []
    for s in result.systems:
        cells = [f"`{short_spec(s.strategy)}`", s.label, f"{s.costs.get('chunks', 0):,}",
                 f"{s.costs.get('dedup_dropped', 0):,}"]
        for m in shown:
            cells += [_fmt(m, s.aggregates.get(m)), _fmt(m, s.aggregates.get(f"{_DEDUP}{m}"))]
        rows.append(cells)
    header = ["strategy", "mode", "chunks", "dropped"]
    for m in shown:
        header += [_col_name(m), _col_name(f"{_DEDUP}{m}")]
    return [
        f"## Dedup at ingest (cosine ≥ {t:g})", "",
        (f"Each system scored twice: on its full index and on the index `latechunk embed --dedup {t:g}` would "
         f"write (a chunk whose cosine to an earlier kept chunk, in document then chunk order, is at least {t:g} "
         f"is dropped: exact FAISS range search, `latechunk/dedup.py`). `NearDup@k`: share (%) of a query's top k "
         f"that are near-duplicates (cosine ≥ {t:g}) of a higher-ranked hit; `Dup@k`: slots overlapping an earlier "
         "hit of the same document (characters). Every metric of the deduplicated index is in `results.json` and "
         "`per_query.csv` as `dedup:<metric>`."), "",
        _table(header, rows), ""]


def _alarm_section(result) -> list[str]:
    """Parse alarms per strategy (from :func:`add_diagnostics`)."""
    alarms = result.manifest.get("alarms")
    if alarms is None:
        return []
    out = ["## Parse alarms", "",
           ("Chunks per 1,000 content tokens per document, against the other documents of its source type (or the "
            "corpus): a robust z of ln(density) beyond 3.5 and at least 3 chunks off, or a source type 10× away "
            "from the rest, is a parser alarm, not a chunking result (rule and sources: `latechunk/alarms.py`)."), ""]
    rows = [[f"`{short_spec(spec)}`", a["level"], f"`{a['doc_id']}`" if a["doc_id"] else "–", a["source"],
             f"{a['density']:.1f}", f"{a['expected']:.1f}", f"{a['ratio']:.1f}",
             "–" if a["z"] is None else f"{a['z']:+.1f}"]
            for spec, found in alarms.items() for a in found]
    if rows:
        out += [_table(["strategy", "level", "document", "source", "chunks / 1k tokens", "reference", "ratio",
                        "robust z"], rows), ""]
    unchecked = result.manifest.get("alarms_unchecked") or {}
    if not rows:  # "no alarm" only for what was checked (a trial read it as a clean bill for unchecked strategies)
        checked = [spec for spec in alarms if spec not in unchecked]
        if not unchecked:
            line = f"No alarm for any of the {len(alarms)} strategies."
        elif checked:
            line = f"No alarm for the {len(checked)} of {len(alarms)} strategies that could be checked."
        else:
            line = "No strategy could be checked (too few documents to compare; why, below)."
        out += [line, ""]
    out += [f"`{short_spec(spec)}`: {why}" for spec, why in unchecked.items()] + ([""] if unchecked else [])
    return out


def _agreement_section(result) -> list[str]:
    """The boundary agreement of every strategy pair (from :func:`add_diagnostics`)."""
    rep = result.manifest.get("agreement")
    if rep is None:
        return []
    if "error" in rep:
        return ["## Boundary agreement", "", f"Not computed: {rep['error']}", ""]
    from latechunk.agree import agreement_markdown

    return [agreement_markdown(rep).rstrip("\n"), "",
            (f"Over the documents of the first macro window's pass ({rep['window']} tokens); labels are the "
             "strategies' names (full SPECs above)."), ""]


def add_diagnostics(result) -> None:
    """Add parse alarms per strategy and the boundary agreement of every strategy pair to ``result.manifest``
    (``alarms``: ``{spec: [Alarm.to_dict()]}``; ``agreement``: :func:`latechunk.agree.agreement_report`'s counts,
    without the per-document lists, plus ``window``), computed from the chunks of the first macro window's pass.
    A result without its pipeline runs (:func:`load_result`) or that has both already is left as it is.

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult`.
    """
    from latechunk.agree import agreement_report
    from latechunk.alarms import alarms_unchecked, parse_alarms, source_type

    man = result.manifest
    if not result.embeds or ("alarms" in man and "agreement" in man):
        return
    first = ((man["windows"][0]["window"], man["windows"][0]["overlap"]) if man.get("windows")
             else next(iter(result.embeds)))
    res = result.embeds.get(first) or next(iter(result.embeds.values()))
    specs = list(dict.fromkeys(s.strategy for s in result.systems))
    alarms = {}
    for spec in specs:
        rows = [(d.doc_id, source_type(d.doc_id, str(d.metadata.get("source", ""))), int(t.n_content), len(b))
                for d, t, b in zip(res.documents, res.tokenizations, res.run(spec).boundaries)
                if t.n_content >= 1 and len(b) >= 1]
        alarms[spec] = [a.to_dict() for a in parse_alarms(rows)]
        unchecked = alarms_unchecked(rows)
        if unchecked:
            man.setdefault("alarms_unchecked", {})[spec] = unchecked
    man["alarms"] = alarms
    if len(specs) >= 2:
        try:
            rep = agreement_report({spec: res.run(spec).boundaries for spec in specs}, [d.text for d in res.documents])
        except ValueError as err:
            man["agreement"] = {"error": str(err)}
            return
        for pair in rep["pairs"]:
            pair.pop("documents", None)
        man["agreement"] = {**rep, "window": first[0] if isinstance(first, tuple) else first}


def print_alarms(result, file=None) -> None:
    """Print each parse alarm of the result on stderr as plain text (``strategy: message``).

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult` (after :func:`add_diagnostics`).
        file: Where to write; None: ``sys.stderr``.
    """
    import sys

    for spec, found in (result.manifest.get("alarms") or {}).items():
        for a in found:
            print(f"{short_spec(spec)}: {a['message']}", file=file or sys.stderr)


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


def per_query_rows(result) -> tuple[list[str], list[list]]:
    """The rows of ``per_query.csv``: one per (system, query), one column per metric (blank where undefined).

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult`.

    Returns:
        ``(header, rows)``: :data:`PER_QUERY_COLUMNS` (``dataset``, ``query_id``, ``question`` (the query text),
        ``strategy``, ``mode``, ``window`` (the macro window in tokens, blank for naive systems whose chunks no
        macro window changes), ``window_overlap`` (its overlap in tokens, blank likewise), ``label``, ``top_hits``
        (the first k chunks retrieved, best first, ``doc_id:char_start-char_end`` joined with ``" | "``, k the
        largest ``--k``: check a hit against the answer spans by hand)), then the metric names; values as
        ``repr(float)`` (never rounded). Rows whose every metric is undefined are left out.
    """
    header = list(PER_QUERY_COLUMNS) + list(result.metric_names)
    if result.dataset is not None:
        qids = [q.query_id for q in result.dataset.queries]
        questions = {q.query_id: q.text for q in result.dataset.queries}
    else:  # a result read back by load_result: first-seen order
        qids = list(dict.fromkeys(q for s in result.systems for v in s.per_query.values() for q in v))
        questions = result.questions
    rows = []
    for s in result.systems:
        for qid in qids:
            vals = [s.per_query.get(m, {}).get(qid) for m in result.metric_names]
            if all(v is None for v in vals):
                continue
            rows.append([result.manifest["dataset"]["name"], qid, questions.get(qid, ""), s.strategy, s.mode,
                         "" if s.window is None else s.window, "" if s.window_overlap is None else s.window_overlap,
                         s.label, s.top_hits.get(qid, "")] + ["" if v is None else repr(float(v)) for v in vals])
    return header, rows


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


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


def write_report(result, out_dir: str | os.PathLike, plot: bool = True, log=None) -> Path:
    """Write ``report.md``, ``results.json``, ``per_query.csv`` and (``plot=True``) ``plot.png`` into ``out_dir``.

    Each text file is written to a temp name and renamed into place.

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult`.
        out_dir: The report folder (created with its parents).
        plot: Also draw ``plot.png``.
        log: Called with one line (``str``) before each step (diagnostics, files, plots); None: silent.

    Raises:
        OSError: if a file cannot be written.

    Returns:
        The folder.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    say = log or (lambda _msg: None)
    say("report: parse alarms and boundary agreement")
    add_diagnostics(result)
    say(f"report: results.json, per_query.csv, report.md in {out}")
    _write_text(out / "results.json", json.dumps(result.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n")
    header, rows = per_query_rows(result)
    tmp = out / "per_query.csv.tmp"
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    os.replace(tmp, out / "per_query.csv")
    _write_text(out / "report.md", markdown_report(result))
    if plot:
        say("report: plot.png")
        write_plot(result, out / "plot.png")
        from .plots import has_map, write_frontier, write_map

        if has_map(result):
            say("report: map.png, frontier.png")
            write_map(result, out / "map.png")
            write_frontier(result, out / "frontier.png")
    return out


def load_result(out_dir: str | os.PathLike):
    """Read a report folder back into a :class:`~latechunk.eval.harness.CompareResult` (``results.json`` +
    ``per_query.csv``), e.g. to re-render ``report.md`` and ``plot.png`` without re-running.

    Args:
        out_dir: A folder written by :func:`write_report`.

    Returns:
        The result, without ``dataset`` and ``embeds`` (per-query values in first-seen query order).

    Raises:
        FileNotFoundError: if ``results.json`` or ``per_query.csv`` (or ``per_query.csv.gz``) is missing.
        KeyError: if a file lacks a field or a row names an unknown system.
        ValueError: if ``results.json`` is not JSON.
    """
    out = Path(out_dir)
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    systems = []
    # results.json before overlap sweeps: one overlap per window, found in the manifest's late passes
    pass_overlap = {w["window"]: w.get("overlap") for w in data["manifest"].get("windows", [])}
    for d in data["systems"]:
        ov = d.get("window_overlap", pass_overlap.get(d["window"]) if d["window"] is not None else None)
        systems.append(System(d["strategy"], d["mode"], d["window"], d["label"], d["chunks_sha256"],
                              {}, dict(d["metrics"]), dict(d["std"]), dict(d["costs"]), dict(d.get("compact", {})),
                              window_overlap=ov))
    for c in data["comparisons"]:
        if c.get("window") is not None and "window_overlap" not in c:
            c["window_overlap"] = pass_overlap.get(c["window"])
    by_label = {(s.strategy, s.label): s for s in systems}
    per_query = out / "per_query.csv"
    if not per_query.exists() and (out / "per_query.csv.gz").exists():  # recorded folders keep it compressed
        import gzip

        opener, per_query = gzip.open, out / "per_query.csv.gz"
    else:
        opener = open
    with opener(per_query, "rt", newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        metrics = [c for c in reader.fieldnames or [] if c not in PER_QUERY_COLUMNS]
        questions: dict[str, str] = {}
        for row in reader:
            s = by_label[(row["strategy"], row["label"])]
            if row.get("question"):
                questions[row["query_id"]] = row["question"]
            if row.get("top_hits"):
                s.top_hits[row["query_id"]] = row["top_hits"]
            for m in metrics:
                if row[m] != "":
                    s.per_query.setdefault(m, {})[row["query_id"]] = float(row[m])
    return CompareResult(CompareConfig.from_dict(data["config"]), systems, data["comparisons"], data["metric_names"],
                         data["headline"], data["main_k"], data["manifest"], questions=questions)


#: The widest the strategy column of :func:`print_table` grows (characters; a longer SPEC folds onto more lines)
STRATEGY_COLUMN_WIDTH = 24


def _fitted_table(console, title: str, names: list[str], rows: list[list], priority: list[int], keep: int,
                  caption: str | None = None):
    """A rich table of the columns ``names`` that fits ``console.width``: the columns are taken in ``priority``
    order (indices into ``names``, most important first) as long as rich's own measure of the table stays within
    the width, and shown in their order in ``names``; the first ``keep`` of ``priority`` are always shown (rich
    folds their cells when even they are too wide).

    Returns:
        ``(table, left_out)``: the ``rich.table.Table`` and the names of the columns left out, in table order.
    """
    from rich.markup import escape
    from rich.measure import Measurement
    from rich.table import Table

    def build(shown: list[int]):
        t = Table(title=escape(title), caption=caption)
        for i in shown:
            t.add_column(escape(names[i]), overflow="fold",
                         max_width=STRATEGY_COLUMN_WIDTH if names[i] == "strategy" else None)
        for row in rows:
            t.add_row(*(row[i] for i in shown))
        return t

    n = len(priority)
    while True:
        shown = sorted(priority[:n])
        table = build(shown)
        # measured unbounded: rich clamps a measure to the options' width, which would always "fit"
        natural = Measurement.get(console, console.options.update(max_width=1 << 20), table).maximum
        if n <= keep or natural <= console.width:
            return table, [names[i] for i in range(len(names)) if i not in shown]
        n -= 1


def print_table(result, console=None, report: str | Path | None = None) -> None:
    """The main table in the terminal (rich): rows strategy x mode, headline metrics and costs, fitted to the
    terminal's width (a trial's was ~240 characters wide): columns are left out, the least important first (the
    costs, the metrics beyond the headline, then headline metrics at other k than the main one), until the table
    fits, and a line under it names them and says where every column is (``report``: report.md).

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult`.
        console: A ``rich.console.Console``; None: a new one (the terminal's width, ``$COLUMNS`` when set; 200
            columns when writing to a file or pipe without ``$COLUMNS``, so a log keeps more of the table).
        report: The report.md that holds the full table, named under a table that lost columns.
    """
    from rich.console import Console
    from rich.text import Text

    if console is None:
        console = Console()
        if not console.is_terminal and not os.environ.get("COLUMNS"):  # a log file: a wider table
            console = Console(width=max(console.width, 200))
    full = f"every column is in {report}" if report is not None else "every column is in the report folder's report.md"
    k = result.main_k
    metrics = list(result.headline) + [m for m in (f"SpanIoU@{k}", "PrecisionOmega", f"Dup@{k}", "nDCG@10")
                                       if m in result.metric_names and m not in result.headline]
    # names (dataset, strategy SPECs, labels, faiss factories) are data, printed literally, never as rich markup:
    # every cell is a Text and every title escaped (a dataset folder "docs [v2]" or a SPEC with a [/...] path)
    costs = ["chunks", "tokens enc.", "index bytes", "s (enc. + pool)"]
    names = ["strategy", "mode"] + [_col_name(m) for m in metrics] + costs
    best = {m: _best([s.aggregates.get(m) for s in result.systems], m) for m in metrics}
    rows = []
    for s in result.systems:
        cells = [Text(short_spec(s.strategy)), Text(s.label)]
        for m in metrics:
            v = s.aggregates.get(m)
            cells.append(Text(_fmt(m, v), style="bold" if v is not None and v == best[m] else ""))
        c = s.costs
        mark = " (shared)" if c.get("tokens_encoded_shared") else ""
        seconds = (f"{c['seconds_encode']:.1f}{mark} + {c['seconds_pool']:.2f}"
                   if s.mode == "late" and "seconds_encode" in c and "seconds_pool" in c else f"{c['seconds']:.1f}")
        cells += [Text(f"{c['chunks']:,}"), Text(f"{c['tokens_encoded']:,}{mark}"), Text(f"{c['index_bytes']:,}"),
                  Text(seconds)]
        rows.append(cells)
    headline = [2 + i for i, m in enumerate(metrics) if m in result.headline]
    at_k = [i for i in headline if metrics[i - 2].endswith(f"@{k}")]
    extra = [2 + i for i, m in enumerate(metrics) if m not in result.headline]
    cost = {name: 2 + len(metrics) + i for i, name in enumerate(costs)}
    priority = [0, 1, *at_k, *[i for i in headline if i not in at_k], cost["chunks"], cost["s (enc. + pool)"],
                *extra, cost["tokens enc."], cost["index bytes"]]
    shared = any(s.costs.get("tokens_encoded_shared") for s in result.systems)
    title = (f"latechunk compare: {result.manifest['dataset']['name']} "
             f"({result.manifest['dataset']['queries']} queries, %, best in bold)")
    t, left_out = _fitted_table(console, title, names, rows, priority, keep=2 + min(1, len(metrics)))
    if shared and not {"tokens enc.", "s (enc. + pool)"} <= set(left_out):
        # late systems of one macro window share one encoder pass: say so instead of repeating its cost
        t.caption = ("(shared): late rows of one macro window share one encoder pass; its tokens and encode "
                     "seconds are shown on each, pooling seconds after the +")
    console.print(t)
    if left_out:
        console.print(Text(f"{len(left_out)} column(s) left out to fit {console.width} columns "
                           f"({', '.join(left_out)}); {full}"))
    if any(s.compact for s in result.systems):  # one row per system and compact-vector setting
        cm = _compact_metrics(result)
        names = ["strategy", "mode", "setting", "faiss"] + [_col_name(m) for m in cm] + ["top-k kept %", "index bytes"]
        rows = [[Text(str(v)) for v in (short_spec(s.strategy), s.label, label, x["faiss_factory"],
                                        *[_fmt(m, x["metrics"].get(m)) for m in cm],
                                        f"{100 * x['overlap_with_main']:.1f}", f"{x['index_bytes']:,}")]
                for s in result.systems for label, x in s.compact.items()]
        n = len(names)
        priority = [0, 1, 2, *range(4, n - 2), n - 2, n - 1, 3]
        c, left_out = _fitted_table(console, "compact vectors: each setting beside the first (same vectors, same "
                                    "queries)", names, rows, priority, keep=3)
        console.print(c)
        if left_out:
            console.print(Text(f"{len(left_out)} column(s) left out to fit {console.width} columns "
                               f"({', '.join(left_out)}); {full}"))
