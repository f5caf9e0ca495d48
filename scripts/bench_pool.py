#!/usr/bin/env python3
"""Pooling and chunking time as a share of the forward time, on the Chroma corpus (CPU).

Runs the late pipeline once over the corpora with one strategy and once with all five (the five share one
forward pass per document), and prints the seconds of each stage and (split + pool) / forward.
Target: pooling plus chunking under 3% of forward time.

    python3 scripts/bench_pool.py [--docs chatlogs state_of_the_union ...] [--device cpu]
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import torch

from latechunk.encoder import Encoder
from latechunk.pipeline import embed
from latechunk.types import Document

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "chroma_chunking_eval" / "corpora"
FIVE = ["fixed:size=256", "recursive:max_tokens=256", "heading:max_tokens=256", "sentence_window:window=1",
        "semantic:percentile=10"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", nargs="+", default=sorted(p.stem for p in DATA.glob("*.md")))
    ap.add_argument("--device", default="auto")
    args = ap.parse_args()
    enc = Encoder(device=args.device)
    docs = [Document(f"{d}.md", (DATA / f"{d}.md").read_text(encoding="utf-8")) for d in args.docs]
    print(f"machine: {platform.machine()}, {torch.get_num_threads()} torch threads, device {enc.device}, "
          f"torch {torch.__version__}; documents: {', '.join(args.docs)}")
    print(f"{'strategies':34s}{'forward s':>10s}{'split s':>9s}{'pool s':>8s}{'tok s':>7s}{'(split+pool)/fwd':>18s}")
    for label, strategies in (("recursive (1 strategy)", FIVE[1:2]), ("all five, one pass", FIVE)):
        t0 = time.perf_counter()
        res = embed(docs, strategies, enc, modes=("late",))
        wall = time.perf_counter() - t0
        s = res.stats["seconds"]
        share = (s["split"] + s["pool"]) / s["late_encode"]
        print(f"{label:34s}{s['late_encode']:10.2f}{s['split']:9.2f}{s['pool']:8.2f}{s['tokenize']:7.2f}"
              f"{share:17.2%}  (wall {wall:.1f} s, {sum(r.n_chunks for r in res.runs.values())} chunks)")
    print("target: (split + pool) / forward < 3%")


if __name__ == "__main__":
    main()
