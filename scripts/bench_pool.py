#!/usr/bin/env python3
"""Pooling and chunking time as a share of the forward time, on the Chroma corpus (CPU).

Each stage is timed on its own, one after the other, on the same documents: the forward pass (token states of
every document, macro windows included), each strategy's split, and each strategy's pooling (segment mean over
the late token states). The sentence segmentation is shared by all strategies of a run (one pysbd pass per
paragraph per document), so the first sentence-based strategy pays for it; the cache is cleared first.
In the pipeline the splits of model-free strategies run in the prefetch thread, overlapping the forward pass.
Target: pooling plus chunking under 3% of forward time.

    python3 scripts/bench_pool.py [--docs chatlogs state_of_the_union ...] [--device cpu]
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import torch

from latechunk import segment
from latechunk.encoder import Encoder
from latechunk.pipeline import _late_embedder, late_vectors
from latechunk.strategies import get_strategy
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
    t0 = time.perf_counter()
    toks = [enc.tokenizer(d) for d in docs]
    t_tok = time.perf_counter() - t0
    t0 = time.perf_counter()
    states = enc.token_states(toks)
    if enc.device.type == "cuda":
        torch.cuda.synchronize()
    t_fwd = time.perf_counter() - t0
    print(f"machine: {platform.machine()}, {torch.get_num_threads()} torch threads, device {enc.device}, "
          f"torch {torch.__version__}; documents: {', '.join(args.docs)}")
    print(f"forward: {t_fwd:.2f} s for {sum(len(t) for t in toks)} document tokens "
          f"({enc.stats['tokens']} through the model); tokenize: {t_tok:.2f} s ({t_tok / t_fwd:.2%})")
    t0 = time.perf_counter()
    packed = torch.cat(states, dim=0)  # the pipeline packs each group once for all strategies
    t_pack = time.perf_counter() - t0
    print(f"pack the states once: {t_pack:.2f} s ({t_pack / t_fwd:.2%})")
    segment._document_sentences.cache_clear()
    print(f"{'strategy':28s}{'chunks':>8s}{'split s':>9s}{'pool s':>8s}{'(split+pool)/fwd':>18s}")
    totals = {}
    for spec in FIVE:
        strat = get_strategy(spec)
        t0 = time.perf_counter()
        bounds = [strat.split(d, t, _late_embedder(s) if strat.needs_embedder else None)
                  for d, t, s in zip(docs, toks, states)]
        t_split = time.perf_counter() - t0
        t0 = time.perf_counter()
        v = late_vectors(states, toks, bounds, normalize=True, packed=packed)
        t_pool = time.perf_counter() - t0
        totals[spec] = (t_split, t_pool)
        print(f"{strat.name:28s}{v.shape[0]:8d}{t_split:9.2f}{t_pool:8.2f}{(t_split + t_pool) / t_fwd:17.2%}")
    rec = totals[FIVE[1]]
    both = [sum(x) for x in zip(*totals.values())]
    print(f"{'one strategy (recursive), segmentation + packing included':58s}"
          f"{(rec[0] + rec[1] + t_pack) / t_fwd:10.2%}")
    print(f"{'all five on one pass, packing included':58s}{(both[0] + both[1] + t_pack) / t_fwd:10.2%}")
    print("target: (split + pool) / forward < 3%")


if __name__ == "__main__":
    main()
