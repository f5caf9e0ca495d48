"""Why does late chunking lose (or win) on a dataset? Per-query analysis of a ``latechunk compare`` report folder.

For one strategy of a compare folder (late and naive rows of one macro window), each query's *gold chunk* (the
chunk holding most of its first answer span) is described by:

- ``straddles``: its token span crosses a cut between two macro windows of the token-aligned plan, i.e. it is
  pooled from the states of two model inputs (two contexts cut at an arbitrary token);
- ``window position``: where it sits in the macro window that holds its first token (first / middle / last third
  of the window's content);
- ``lexical overlap``: the share of the question's content words (lower-cased, 3+ letters, not a stop word) found
  in the chunk text: near-verbatim questions score near 1;
- ``neighbour cosine``: the largest cosine between its late vector and the late vectors of its two neighbours
  in the document (and the same for naive vectors): how much late pooling makes neighbours alike.

Then late - naive (AR@1 and SpanRecall@5, in points) per group, with paired bootstrap 95% intervals (queries
resampled), and for the queries late loses at rank 1 (naive's top hit answers, late's does not): whether late's
top hit was a neighbour of the gold chunk (same document, adjacent chunk), another chunk of the same document, or
another document. Printed as markdown (``--out FILE`` also writes it).

    python scripts/late_diagnosis.py results/issue38/xquad_before --strategy recursive --dataset xquad
"""

from __future__ import annotations

import argparse
import csv
import gzip
import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

STOP = frozenset({
    "the", "and", "for", "are", "was", "were", "what", "which", "who", "whom", "whose", "when", "where", "why",
    "how", "did", "does", "do", "with", "from", "that", "this", "these", "those", "into", "onto", "than", "then",
    "there", "their", "they", "them", "its", "his", "her", "has", "have", "had", "been", "being", "not", "but",
    "can", "could", "would", "should", "may", "might", "will", "shall", "about", "after", "before", "over",
    "under", "between", "during", "many", "much", "most", "more", "some", "any", "each", "other", "such", "only",
    "also", "very",
})


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) >= 3 and w not in STOP}


def read_rows(folder: Path, spec_prefix: str) -> dict[str, dict[str, dict]]:
    """``{mode: {query_id: row}}`` for the strategy whose spec starts with ``spec_prefix`` (first window)."""
    path = folder / "per_query.csv"
    out: dict[str, dict[str, dict]] = defaultdict(dict)
    with (open(path, newline="", encoding="utf-8") if path.exists()
          else gzip.open(str(path) + ".gz", "rt", newline="", encoding="utf-8")) as f:
        for row in csv.DictReader(f):
            if (row["strategy"].startswith(spec_prefix) and row["mode"] in ("late", "naive")
                    and row["query_id"] not in out[row["mode"]]):
                out[row["mode"]][row["query_id"]] = row
    return out


def boot(diff: np.ndarray, n: int = 10000, seed: int = 0) -> tuple[float, float, float]:
    """Mean and paired-bootstrap 95% interval of per-query differences (points)."""
    if len(diff) == 0:
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(n, len(diff)))].mean(axis=1)
    return float(diff.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def fmt(m: tuple[float, float, float]) -> str:
    star = " *" if m[1] > 0 or m[2] < 0 else ""
    return f"{m[0]:+.1f} [{m[1]:+.1f}, {m[2]:+.1f}]{star}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="a latechunk compare report folder")
    ap.add_argument("--strategy", required=True, help="the strategy SPEC (prefix) to analyse, e.g. recursive")
    ap.add_argument("--dataset", required=True, help="the dataset the folder was run on (chroma, xquad, a path)")
    ap.add_argument("--macro-window", type=int, default=None, help="the late macro window (default: the model's)")
    ap.add_argument("--out", type=Path, default=None, help="also write the markdown here")
    args = ap.parse_args(argv)

    from latechunk.config import PipelineConfig
    from latechunk.encoder import Encoder
    from latechunk.eval.datasets import load_dataset
    from latechunk.pipeline import embed

    rows = read_rows(args.folder, args.strategy)
    if not rows.get("late") or not rows.get("naive"):
        sys.exit(f"no late and naive rows for {args.strategy!r} in {args.folder}/per_query.csv")
    spec = next(iter(rows["late"].values()))["strategy"]
    ds = load_dataset(args.dataset)
    enc = Encoder()
    res = embed(ds.documents, enc, PipelineConfig((spec,), modes=("late", "naive"), macro_window=args.macro_window))
    run = res.run(spec)
    mw = enc.macro_window(args.macro_window)
    late = np.asarray(run.vectors["late"].vectors, dtype=np.float32)
    naive = np.asarray(run.vectors["naive"].vectors, dtype=np.float32)
    docs: dict[str, dict] = {}
    row0 = 0
    n_straddle = n_chunks = 0
    for doc, tok, b in zip(res.documents, res.tokenizations, run.boundaries):
        plan = mw.plan(tok.n_content, tok.n_lead + tok.n_trail)
        cuts = np.asarray([w.keep_end for w in plan[:-1]], dtype=np.int64) + tok.content_start
        ts = b.token_spans.astype(np.int64)
        straddle = np.asarray([bool(((cuts > s) & (cuts < e)).any()) for s, e in ts])
        keeps = [w.keep_start + tok.content_start for w in plan]
        holder = [plan[max(int(np.searchsorted(keeps, s, side="right")) - 1, 0)] for s, _ in ts]
        # where the chunk's first token sits in the window that holds it (0 = its first content token, 1 = past its last)
        pos = np.asarray([(s - (w.start + tok.content_start)) / max(w.end - w.start, 1)
                          for (s, _), w in zip(ts, holder)]) if len(plan) > 1 else None
        n = len(ts)
        idx = np.arange(row0, row0 + n)
        nb_late = np.full(n, np.nan)
        nb_naive = np.full(n, np.nan)
        for i in range(n):
            nbs = [j for j in (i - 1, i + 1) if 0 <= j < n]
            if nbs:
                nb_late[i] = max(float(late[idx[i]] @ late[idx[j]]) for j in nbs)
                nb_naive[i] = max(float(naive[idx[i]] @ naive[idx[j]]) for j in nbs)
        docs[doc.doc_id] = {"text": doc.text, "chars": b.char_spans.astype(np.int64), "straddle": straddle,
                            "pos": pos, "nb_late": nb_late, "nb_naive": nb_naive, "windows": len(plan)}
        n_straddle += int(straddle.sum())
        n_chunks += n
        row0 += n

    feats = []
    for q in ds.queries:
        if q.query_id not in rows["late"] or q.query_id not in rows["naive"] or not q.spans:
            continue
        d, a, e = q.spans[0]
        info = docs.get(d)
        if info is None:
            continue
        ov = np.minimum(info["chars"][:, 1], e) - np.maximum(info["chars"][:, 0], a)
        g = int(np.argmax(ov))
        cs, ce = info["chars"][g]
        qw = content_words(q.text)
        lex = len(qw & content_words(info["text"][cs:ce])) / len(qw) if qw else float("nan")
        lr, nr = rows["late"][q.query_id], rows["naive"][q.query_id]
        top_late = (lr["top_hits"].split(" | ") or [""])[0]
        kind = ""
        if float(nr["AR@1"]) > float(lr["AR@1"]):
            tdoc, _, rng_ = top_late.rpartition(":")
            if tdoc != d:
                kind = "another document"
            else:
                ts_, te_ = (int(x) for x in rng_.split("-"))
                k = int(np.argmax(np.minimum(info["chars"][:, 1], te_) - np.maximum(info["chars"][:, 0], ts_)))
                kind = "a neighbour of the gold chunk" if abs(k - g) == 1 else "another chunk, same document"
        feats.append({
            "straddle": bool(info["straddle"][g]), "multiwin": info["windows"] > 1,
            "pos": None if info["pos"] is None else float(info["pos"][g]), "lex": lex,
            "nb_late": float(info["nb_late"][g]), "nb_naive": float(info["nb_naive"][g]),
            "d_ar1": 100 * (float(lr["AR@1"]) - float(nr["AR@1"])),
            "d_sr5": 100 * (float(lr["SpanRecall@5"]) - float(nr["SpanRecall@5"])), "lost": kind})

    def table(title: str, groups: dict[str, list[dict]]) -> list[str]:
        out = [f"### {title}", "", "| group | queries | late − naive AR@1 | late − naive SpanRecall@5 |",
               "| --- | ---: | ---: | ---: |"]
        for name, fs in groups.items():
            out.append(f"| {name} | {len(fs)} | {fmt(boot(np.array([f['d_ar1'] for f in fs])))} | "
                       f"{fmt(boot(np.array([f['d_sr5'] for f in fs])))} |")
        return out + [""]

    def terciles(key: str) -> dict[str, list[dict]]:
        vals = np.array([f[key] for f in feats if not np.isnan(f[key])])
        lo, hi = np.percentile(vals, [100 / 3, 200 / 3])
        return {f"low (< {lo:.2f})": [f for f in feats if f[key] < lo],
                "middle": [f for f in feats if lo <= f[key] < hi],
                f"high (>= {hi:.2f})": [f for f in feats if f[key] >= hi]}

    md = [f"## `{spec}` on {args.dataset}: late − naive by the gold chunk's features", "",
          (f"Folder `{args.folder}`; macro window {mw.size}, overlap {mw.overlap}; {len(feats)} queries, "
          f"{n_chunks} chunks of which {n_straddle} ({100 * n_straddle / max(n_chunks, 1):.1f}%) straddle two "
          "token-aligned macro windows. Paired bootstrap 95% intervals (10,000 resamples, seed 0), * excludes 0."), ""]
    md += table("All queries", {"all": feats})
    multi = [f for f in feats if f["multiwin"]]
    md += table("Gold chunk straddles two macro windows (documents longer than one window)",
                {"straddles": [f for f in multi if f["straddle"]], "whole in one window": [f for f in multi if not f["straddle"]]})
    md += table("Where the gold chunk starts in its window (documents longer than one window)",
                {"first third": [f for f in multi if f["pos"] < 1 / 3],
                 "middle third": [f for f in multi if 1 / 3 <= f["pos"] < 2 / 3],
                 "last third": [f for f in multi if f["pos"] >= 2 / 3]})
    md += table("Lexical overlap of question and gold chunk (near-verbatim = high)", terciles("lex"))
    md += table("Late cosine of the gold chunk with its nearest neighbour chunk", terciles("nb_late"))
    nbl = np.array([f["nb_late"] for f in feats if not np.isnan(f["nb_late"])])
    nbn = np.array([f["nb_naive"] for f in feats if not np.isnan(f["nb_naive"])])
    md += [f"Neighbour cosine of gold chunks: late mean {nbl.mean():.3f}, naive mean {nbn.mean():.3f}.", ""]
    lost = [f["lost"] for f in feats if f["lost"]]
    md += ["### Queries late loses at rank 1 (naive's top hit answers, late's does not): what late ranked first", "",
           "| late's top hit | queries |", "| --- | ---: |"]
    for k in ("a neighbour of the gold chunk", "another chunk, same document", "another document"):
        md.append(f"| {k} | {lost.count(k)} ({100 * lost.count(k) / max(len(lost), 1):.0f}%) |")
    text = "\n".join(md) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
