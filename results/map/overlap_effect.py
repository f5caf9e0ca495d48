"""What a window overlap buys: late(w, o) − late(w, 0) per strategy and window, and the quality/cost Pareto front.

Reads the report folders ``results/map/DATASET_ovO`` (one ``latechunk compare`` run per overlap O, each with
``--window 128|256|512``), pairs every late system with the overlap-0 system of the same strategy and window over
the same queries (``latechunk.eval.stats.paired_bootstrap``, 10,000 resamples, seed 0), and, per metric, lists
the late passes on the Pareto front of (cost, mean over the strategies) with cost = tokens through the encoder /
content tokens (``latechunk.eval.plots.pareto_front``). Run from the repository root:

    python results/map/overlap_effect.py xquad [chroma]
"""

from __future__ import annotations

import sys
from pathlib import Path

from latechunk.eval.plots import merge_results, pareto_front, short_spec
from latechunk.eval.report import load_result
from latechunk.eval.stats import paired_bootstrap

METRICS = ("SpanRecall@5", "SpanIoU@5")
HERE = Path(__file__).resolve().parent


def _d(m: str) -> int:
    return 2 if "IoU" in m else 1


def main(names: list[str]) -> None:
    """Print the Markdown tables for the named datasets (default: all)."""
    for name in names:
        folders = sorted(HERE.glob(f"{name}_ov*"), key=lambda p: int(p.name.rsplit("ov", 1)[1]))
        if len(folders) < 2:
            print(f"{name}: fewer than two overlaps run ({[f.name for f in folders]})\n")
            continue
        merged = merge_results([load_result(f) for f in folders])
        late = [s for s in merged.systems if s.mode == "late"]
        passes = sorted({(s.window, s.window_overlap) for s in late})
        overlaps = sorted({o for _, o in passes})
        print(f"### {name}: late(w, o) − late(w, o=0), points [95% CI]; * = excludes 0\n")
        for m in METRICS:
            print(f"{m}\n")
            print("| strategy | " + " | ".join(f"w={w} o={o}" for w, o in passes if o != 0) + " |")
            print("| --- |" + " ---: |" * sum(o != 0 for _, o in passes))
            for spec in dict.fromkeys(s.strategy for s in late):
                cells = []
                for w, o in passes:
                    if o == 0:
                        continue
                    a = merged.system(spec, "late", w, o)
                    b = merged.system(spec, "late", w, 0)
                    r = paired_bootstrap(a.per_query[m], b.per_query[m], n_resamples=10000, confidence=0.95, seed=0)
                    d = _d(m)
                    sig = " *" if r.ci_low > 0 or r.ci_high < 0 else ""
                    cells.append(f"{100 * r.mean_diff:+.{d}f} [{100 * r.ci_low:+.{d}f}, {100 * r.ci_high:+.{d}f}]{sig}")
                print(f"| `{short_spec(spec)}` | " + " | ".join(cells) + " |")
            print()
        win = {(w["window"], w["overlap"]): w for w in merged.manifest["windows"]}
        print("Late passes: cost (tokens through the encoder / content tokens) and the mean over strategies; "
              "front = on the quality/cost Pareto front of that metric.\n")
        print("| window | overlap | cost | " + " | ".join(f"mean {m}" for m in METRICS) + " | on the front of |")
        print("| ---: | ---: | ---: |" + " ---: |" * len(METRICS) + " --- |")
        rows = []
        for w, o in passes:
            x = win[(w, o)]
            cost = x["late_tokens"] / x["content_tokens"]
            means = [sum(s.aggregates[m] for s in late if (s.window, s.window_overlap) == (w, o))
                     / sum(1 for s in late if (s.window, s.window_overlap) == (w, o)) for m in METRICS]
            rows.append((w, o, cost, means))
        fronts = {m: {i for i in pareto_front([(r[2], r[3][j]) for r in rows])} for j, m in enumerate(METRICS)}
        for i, (w, o, cost, means) in enumerate(rows):
            on = [m for m in METRICS if i in fronts[m]]
            print(f"| {w} | {o} | {cost:.3f} | " + " | ".join(f"{100 * v:.{_d(m)}f}" for v, m in zip(means, METRICS))
                  + f" | {', '.join(on) or '–'} |")
        cheapest = min(range(len(rows)), key=lambda i: rows[i][2])
        print(f"\nCheapest late pass: w={rows[cheapest][0]} o={rows[cheapest][1]} (cost {rows[cheapest][2]:.3f}); "
              f"per window, the cheapest overlap is {overlaps[0]}.\n")


if __name__ == "__main__":
    main(sys.argv[1:] or ["xquad", "chroma"])
