#!/usr/bin/env python3
"""Recall and index bytes of each compact-vector setting on one dataset (issue 11, item 5): `--precision` and
`--truncate-dim` of `latechunk compare`, written as one Markdown page.

It runs (or, with ``--from``, reads back) one ``latechunk compare`` report folder whose systems were indexed once
per setting over the same vectors (:mod:`latechunk.eval.harness`), and writes a table per system: for each setting
its recall (AR@k and SpanRecall@k where the dataset has answer spans, else its document measures), the share of
float32's top-k it keeps, the FAISS index bytes and bytes per vector, with the command, machine and versions::

    python3 scripts/bench_precision.py --dataset chroma --strategies recursive:max_tokens=256 --modes late \\
        --precision float32,float16,int8,ubinary --truncate-dim all,256,128 \\
        --out results/chroma_precision --markdown results/precision.md
    python3 scripts/bench_precision.py --from results/chroma_precision --markdown results/precision.md

Every number but the seconds is a function of the inputs (flat indexes, deterministic batching).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _versions(result) -> str:
    v = result.manifest.get("versions", {})
    keys = ("latechunk", "torch", "transformers", "faiss", "sentence-transformers", "sentence_transformers", "numpy")
    have = {k: v[k] for k in keys if k in v}
    if "faiss" not in have:
        have["faiss"] = result.manifest["index"].get("faiss", "?")
    try:
        import sentence_transformers

        have.setdefault("sentence-transformers", sentence_transformers.__version__)
    except ImportError:
        pass
    return ", ".join(f"{k} {val}" for k, val in have.items())


def markdown(result, command: str, report_dir: str) -> str:
    """The page: one table per system (rows: settings), then how the numbers were made."""
    from latechunk.eval.report import _compact_metrics, _fmt, short_spec  # the report's own formatting

    man = result.manifest
    ds = man["dataset"]
    k = result.main_k
    metrics = _compact_metrics(result)
    if any(m.startswith("AR@") for m in metrics):
        metrics += [m for m in (f"SpanRecall@{k}", f"SpanIoU@{k}") if m in result.metric_names and m not in metrics]
    settings = man["index"].get("compact_settings", [])
    lines = [f"# Compact vectors on {ds['name']}: recall@{k} and index bytes per precision", ""]
    lines.append(f"Command: `{command}`  ")
    lines.append(f"Report folder: `{report_dir}` (`report.md`, `results.json`, `per_query.csv`); "
                 f"git commit `{man.get('git_commit') or '?'}`"
                 + (" (tracked files modified)" if man.get("git_dirty") else "") + ".")
    lines.append("")
    lines.append(f"- Dataset: `{ds['spec']}`: {ds['documents']} documents, {ds['queries']} queries "
                 f"({ds['queries_with_spans']} with answer spans).")
    lines.append(f"- Model: `{man['model']['name']}` ({man['model'].get('dim', '?')} dimensions), late mode; "
                 f"strategies: {', '.join(f'`{s}`' for s in man['strategies'])}.")
    lines.append("- Settings: " + ", ".join(f"`{x['label']}` (faiss `{x['faiss_factory']}`)" for x in settings) + ".")
    m = man["machine"]
    cpu = next((ln.split(":", 1)[1].strip() for ln in m.get("lscpu_head", []) if ln.startswith("Model name")), "?")
    lines.append(f"- Machine: {cpu}, {m.get('nproc')} CPUs, {m.get('platform')}, GPU: {m.get('gpu') or 'none'}; "
                 f"compare took {man['seconds']['total']:.0f} s.")
    lines.append(f"- Versions: {_versions(result)}.")
    lines.append("")
    for s in result.systems:
        if not s.compact:
            continue
        lines.append(f"## `{short_spec(s.strategy)}`, {s.label} ({s.costs['chunks']:,} chunks)")
        lines.append("")
        head = ["setting", "faiss index"] + metrics + [f"top-{k} kept (%)", "index bytes", "bytes / vector",
                                                        "× float32"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("| --- | --- | " + " | ".join("---:" for _ in head[2:]) + " |")
        ref = next(iter(s.compact.values()))["index_bytes"]
        for label, c in s.compact.items():
            n = max(c["index_ntotal"], 1)
            row = [f"`{label}`", f"`{c['faiss_factory']}`"] + [_fmt(mm, c["metrics"].get(mm)) for mm in metrics]
            row += [f"{100 * c['overlap_with_main']:.1f}", f"{c['index_bytes']:,}", f"{c['index_bytes'] / n:.1f}",
                    f"{c['index_bytes'] / ref:.3f}"]
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    lines.append("## How the numbers were made")
    lines.append("")
    lines.append(
        "One `latechunk compare` run: the corpus is chunked and embedded once (late chunking, arXiv:2409.04701); "
        "each system's float32 chunk vectors are indexed once per setting and searched with the same query "
        "vectors (truncated and renormalised like the chunk vectors when `--truncate-dim` is set), and every "
        "setting is scored by the same metric code. `float16`: faiss `SQfp16`; `int8`: faiss `SQ8`, 8-bit codes "
        "with per-dimension min/max ranges trained on the corpus (= sentence-transformers' `quantize_embeddings` "
        "int8/uint8 codes with the corpus as calibration set), scored against the float query; `ubinary`: "
        "`np.packbits(x > 0)` in a faiss `IndexBinaryFlat`, Hamming search for "
        f"{next((x['rescore_multiplier'] for x in settings if 'rescore_multiplier' in x), 4)} × k candidates, "
        "rescored with the float query against the ±1 codes (`semantic_search_faiss(..., rescore=True)`). "
        "`@N`: the first N dimensions (Matryoshka truncation; all-MiniLM-L6-v2 was not trained for it, so "
        "truncation costs it more than it would a Matryoshka model). "
        f"`top-{k} kept`: mean share of the float32 index's top {k} chunks that the setting also ranks in its "
        f"top {k}. Quality values are percentages (mean over queries × 100). Index bytes: the serialized FAISS "
        "index (what `index.faiss` holds; the shards keep float32 vectors either way).")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from", dest="from_dir", help="Read an existing compare report folder instead of running.")
    ap.add_argument("--dataset", default="chroma")
    ap.add_argument("--strategies", default="recursive:max_tokens=256", help="SPECs separated by spaces.")
    ap.add_argument("--modes", default="late")
    ap.add_argument("--k", default="1,5,10")
    ap.add_argument("--precision", default="float32,float16,int8,ubinary")
    ap.add_argument("--truncate-dim", default=None)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--out", default=None, help="Report folder of the compare run.")
    ap.add_argument("--markdown", default=None, help="Write the page here (default: print it).")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from latechunk.eval.report import load_result

    command = "python3 scripts/bench_precision.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    if args.from_dir:
        result = load_result(args.from_dir)
        report_dir = args.from_dir
        if result.manifest.get("command"):
            command = f"{result.manifest['command']}  (then `{command}`)"
    else:
        from latechunk.eval.harness import CompareConfig, run_compare

        config = CompareConfig.from_options(dataset=args.dataset, strategies=args.strategies.split(),
                                            modes=args.modes, k=args.k, precision=args.precision,
                                            truncate_dim=args.truncate_dim, device=args.device)
        report_dir = args.out or f"compare-precision-{Path(args.dataset).name}"
        result = run_compare(config, out_dir=report_dir, command=command)
    text = markdown(result, command, os.path.relpath(report_dir, REPO) if Path(report_dir).is_absolute() else report_dir)
    text += (f"\nWritten {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')} on {platform.node() or '?'}"
             f" (load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}).\n")
    if args.markdown:
        Path(args.markdown).write_text(text, encoding="utf-8")
        print(f"wrote {args.markdown}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
