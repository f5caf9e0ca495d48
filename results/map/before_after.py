"""Before/after of issue 14's defaults, from report folders already written by ``latechunk compare``.

Before: macro window 512 (the model's input limit), overlap 127 (a quarter of the window's content), as in
``results/{chroma,xquad}_full``. After: window 256 (MiniLM's sentence-transformers ``max_seq_length``),
overlap 0, as in ``results/map/{chroma,xquad}_ov0``. Strategy: ``fixed`` (size 256, the default SPEC), late
mode. Paired bootstrap over the same queries (``latechunk.eval.stats.paired_bootstrap``, 10,000 resamples, seed
0), after - before. Run from the repository root:

    python results/map/before_after.py
"""

from __future__ import annotations

import sys

from latechunk.eval.report import load_result
from latechunk.eval.stats import paired_bootstrap

SPEC = "fixed:size=256,overlap=0"
RUNS = {"chroma": ("results/chroma_full", "results/map/chroma_ov0"),
        "xquad": ("results/xquad_full", "results/map/xquad_ov0")}
METRICS = ("SpanRecall@5", "SpanIoU@5", "AR@1", "AR@5")


def _digits(metric: str) -> int:
    return 2 if "IoU" in metric else 1  # IoU@5 of small answers is a few tenths of a percent


def _late(result, window: int):
    s = result.system(SPEC, "late", window)
    w = next(x for x in result.manifest["windows"] if x["window"] == window)
    return s, w


def main(names: list[str]) -> None:
    """Print the Markdown tables for the named datasets (default: all)."""
    print("| dataset | setting | " + " | ".join(METRICS) + " | tokens through the encoder | / content tokens |")
    print("| --- | --- |" + " ---: |" * (len(METRICS) + 2))
    for name in names or list(RUNS):
        before_dir, after_dir = RUNS[name]
        try:
            before, after = load_result(before_dir), load_result(after_dir)
        except FileNotFoundError as err:
            print(f"| {name} | (missing: {err}) |")
            continue
        b, wb = _late(before, 512)
        a, wa = _late(after, 256)
        for label, s, w in (("before: w=512 o=127", b, wb), ("after: w=256 o=0", a, wa)):
            cells = [f"{100 * s.aggregates[m]:.{_digits(m)}f}" for m in METRICS]
            print(f"| {name} | {label} (overlap {w['overlap']}) | " + " | ".join(cells)
                  + f" | {w['late_tokens']:,} | {w['late_tokens'] / w['content_tokens']:.3f} |")
        diffs = []
        for m in METRICS:
            r = paired_bootstrap(a.per_query[m], b.per_query[m], n_resamples=10000, confidence=0.95, seed=0)
            sig = " *" if r.ci_low > 0 or r.ci_high < 0 else ""
            d = _digits(m)
            diffs.append(f"{100 * r.mean_diff:+.{d}f} [{100 * r.ci_low:+.{d}f}, {100 * r.ci_high:+.{d}f}]{sig}")
        ratio = wa["late_tokens"] / wb["late_tokens"]
        print(f"| {name} | after − before [95% CI] | " + " | ".join(diffs) + f" | x{ratio:.3f} | |")


if __name__ == "__main__":
    main(sys.argv[1:])
