"""The text of report.md (:func:`markdown_report`), section by section: how the run was made (command, dataset,
model, index, machine, versions, wall time), the late passes, units and definitions, the metric tables, costs and
compact vectors, the paired comparisons (mode pairs, strategies, the window sweep), then the late − naive map,
dedup at ingest, parse alarms and boundary agreement. Every number comes from the
:class:`~latechunk.eval.result.CompareResult`; nothing here computes one.
"""

from __future__ import annotations

from ..plots import short_spec
from .formatting import _DEDUP, _DOC_NAMES, _col_name, _fmt, _table
from .tables import (
    _PAIR_KINDS,
    _compact_table,
    _cost_table,
    _hash_labels,
    _late_naive_table,
    _metric_table,
    _strategy_table,
    _window_table,
)

#: up to this many documents, report.md says the document-level metrics cannot separate systems
SMALL_CORPUS_DOCUMENTS = 10


def markdown_report(result) -> str:
    """The text of ``report.md``.

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult` (from
            :func:`~latechunk.eval.harness.run_compare` or :func:`load_result`).

    Returns:
        The Markdown text: headline tables, costs, the late passes (one per macro window), comparisons with
        bootstrap CIs, and how the numbers were made.
    """
    parts = _setup_lines(result)
    parts += _late_pass_section(result)
    parts += _units_section()
    parts += _metric_sections(result)
    parts += _cost_sections(result)
    parts += _comparison_sections(result)
    parts += _map_section(result)
    parts += _dedup_section(result)
    parts += _alarm_section(result)
    parts += _agreement_section(result)
    parts.append("![late vs naive per strategy; cost vs quality](plot.png)")
    parts.append("")
    return "\n".join(parts)


def _setup_lines(result) -> list[str]:
    """The title, command and git commit, then one bullet per part of the run: dataset, model, index, k and modes,
    titles (contextual mode), strategies, machine, versions, wall time."""
    man = result.manifest
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
    return parts


def _late_pass_section(result) -> list[str]:
    """``## Late passes``: one row per macro window and overlap (tokens, forward calls, seconds per mode), and
    what late, naive and fused encode."""
    man = result.manifest
    parts = []
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
    return parts


def _units_section() -> list[str]:
    """``## Units and definitions``: what each metric and cost counts."""
    parts = []
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
    return parts


def _metric_sections(result) -> list[str]:
    """The answer and span metrics, then duplicates and the document-level metrics (with a caveat for a corpus of
    at most :data:`SMALL_CORPUS_DOCUMENTS` documents)."""
    ds = result.manifest["dataset"]
    parts = []
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
    return parts


def _cost_sections(result) -> list[str]:
    """``## Costs`` and, where the run indexed compact vectors, ``## Compact vectors``."""
    man = result.manifest
    parts = []
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
    return parts


def _comparison_sections(result) -> list[str]:
    """The paired bootstrap comparisons: each mode pair (late − naive, ...), strategy A − B on the main metric, and
    the window sweep where there are several late passes."""
    man = result.manifest
    cfg = result.config
    parts = []
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
    return parts


def _map_section(result) -> list[str]:
    """The late − naive map (chunk size x macro window x overlap) and the quality/cost frontier, where the result
    has several late passes and both modes (:mod:`.plots`)."""
    from ..plots import has_map, map_markdown

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
