#!/usr/bin/env python3
"""Pooling and chunking time as a share of the forward time, on the Chroma corpus (CPU or GPU).

Each stage is timed on its own, one after the other, on the same documents: the forward pass (token states of
every document, macro windows included), the split (chunking) and the pooling (segment mean over the late token
states). The split is timed as the pipeline runs it: the sentence segmentation the strategies need is done
first, once for all of them (``SentenceSegmenter.presegment``, in worker processes or in this one), then each
strategy cuts from the cached sentences. Every split row starts from an empty sentence cache (cold), so a row
pays for all the segmentation it needs. Rows are given for ``--workers 0`` (segmentation in this process) and
``--workers N`` side by side; the worker processes are started (and timed) before the rows.
Target (issue 4): pooling plus chunking under 3% of forward time.

    python3 scripts/bench_pool.py [--docs chatlogs state_of_the_union ...] [--device cpu] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import torch

from latechunk.encoder import Encoder
from latechunk.pipeline import _late_sentence_vectors, late_vectors, presegment_for
from latechunk.sentences import SentenceSegmenter
from latechunk.strategies import get_strategy
from latechunk.types import Document

# the Chroma corpora: under $LATECHUNK_DATA (as the tests and `latechunk compare` read it), else ../shared/data
DATA = Path(os.environ.get("LATECHUNK_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data") \
    / "chroma_chunking_eval" / "corpora"
FIVE = ["fixed:size=256", "recursive:max_tokens=256", "heading:max_tokens=256", "sentence_window:window=1",
        "semantic:percentile=10"]


def split_stage(strats, docs, toks, states, sentences: SentenceSegmenter) -> float:
    """Seconds to split every document with every strategy of ``strats``, as the pipeline does, from cold
    (``sentences``' cache emptied first; its worker processes, if any, already started)."""
    sentences.clear_cache()
    t0 = time.perf_counter()
    presegment_for(strats, list(zip(docs, toks)), sentences)
    for s in strats:
        for d, t, st in zip(docs, toks, states):
            s.split(d, t, _late_sentence_vectors(st) if s.needs_sentence_vectors else None, sentences=sentences)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", nargs="+", default=sorted(p.stem for p in DATA.glob("*.md")))
    ap.add_argument("--device", default="auto")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="sentence-segmentation worker processes for the second column (default: CPU count)")
    ap.add_argument("--repeats", type=int, default=3, help="split timings are the best of this many runs")
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
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads, "
          f"device {enc.device}, torch {torch.__version__}; documents: {', '.join(args.docs)} "
          f"({sum(len(d.text) for d in docs)} chars)")
    print(f"forward: {t_fwd:.2f} s for {sum(len(t) for t in toks)} document tokens "
          f"({enc.stats['tokens']} through the model); tokenize: {t_tok:.2f} s ({t_tok / t_fwd:.2%})")
    t0 = time.perf_counter()
    packed = torch.cat(states, dim=0)  # the pipeline packs each group once for all strategies
    t_pack = time.perf_counter() - t0
    print(f"pack the states once: {t_pack:.2f} s ({t_pack / t_fwd:.2%})")
    in_process, with_workers = SentenceSegmenter(0), SentenceSegmenter(args.workers)
    t0 = time.perf_counter()
    with_workers.start()
    print(f"start {args.workers} sentence worker processes (once per run, not in the rows): "
          f"{time.perf_counter() - t0:.2f} s")

    strats = [get_strategy(s) for s in FIVE]
    pool_s = {}  # pooling alone: the boundaries are made first, outside the timer
    for s in strats:
        bounds = [s.split(d, t, _late_sentence_vectors(st) if s.needs_sentence_vectors else None, sentences=in_process)
                  for d, t, st in zip(docs, toks, states)]
        t0 = time.perf_counter()
        v = late_vectors(states, toks, bounds, normalize=True, packed=packed)
        pool_s[s.spec] = (time.perf_counter() - t0, v.shape[0])

    def best(group, sentences):
        return min(split_stage(group, docs, toks, states, sentences) for _ in range(args.repeats))

    w = args.workers
    print(f"{'strategy':18s}{'chunks':>7s}{'pool s':>8s}  {'split s, 0 workers':>19s}{'share':>8s}  "
          f"{f'split s, {w} workers':>19s}{'share':>8s}")
    for s in strats:
        p, n = pool_s[s.spec]
        s0, sw = best([s], in_process), best([s], with_workers)
        print(f"{s.name:18s}{n:7d}{p:8.3f}  {s0:19.2f}{(s0 + p) / t_fwd:8.2%}  {sw:19.2f}{(sw + p) / t_fwd:8.2%}")
    p_all = sum(p for p, _ in pool_s.values()) + t_pack
    s0, sw = best(strats, in_process), best(strats, with_workers)
    print(f"{'all five, one pass (packing included)':44s}{(s0 + p_all) / t_fwd:8.2%}  {'':19s}{(sw + p_all) / t_fwd:8.2%}")
    print("share = (split + pool) / forward; target < 3%")
    with_workers.close()


if __name__ == "__main__":
    main()
