#!/usr/bin/env python3
"""Late pipeline throughput beside the raw ``model(...)`` forward, on the same documents, in one run.

The raw forward runs exactly the model inputs the pipeline would send (the documents' macro windows) at several
batch sizes; the best is the baseline. The pipeline then runs end to end (tokenize, encode, split, pool) with its
token budget set to that best batch size. Both are measured as tokens through the model per second of wall time;
the pipeline's throughput in document tokens (without macro-window overlap) is printed too.

    python3 scripts/bench_embed.py [--docs state_of_the_union wikitexts] [--strategy recursive] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch

from latechunk.config import PipelineConfig
from latechunk.encoder import Encoder
from latechunk.pipeline import embed
from latechunk.types import Document

# the Chroma corpora: under $LATECHUNK_DATA (as the tests and `latechunk compare` read it), else ../shared/data
DATA = Path(os.environ.get("LATECHUNK_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data") \
    / "chroma_chunking_eval" / "corpora"


def raw_forward(enc: Encoder, rows: list[np.ndarray], batch_size: int) -> float:
    """Seconds to run ``rows`` through ``enc.model`` in padded batches of ``batch_size`` (length-sorted)."""
    rows = sorted(rows, key=len, reverse=True)
    t0 = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(rows), batch_size):
            batch = rows[i : i + batch_size]
            longest = len(batch[0])
            ids = torch.zeros((len(batch), longest), dtype=torch.int64)
            mask = torch.zeros_like(ids)
            for j, r in enumerate(batch):
                ids[j, : len(r)] = torch.from_numpy(r)
                mask[j, : len(r)] = 1
            out = enc.model(input_ids=ids.to(enc.device), attention_mask=mask.to(enc.device)).last_hidden_state
            if enc.device.type == "cuda":
                torch.cuda.synchronize()
            del out
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", nargs="+", default=["state_of_the_union", "wikitexts"], help="Chroma corpus ids")
    ap.add_argument("--strategy", default="recursive:max_tokens=256")
    ap.add_argument("--batch-sizes", default="1,4,8,16,32")
    ap.add_argument("--repeats", type=int, default=3, help="alternating raw/pipeline repeats at the best batch size; the best time of each is kept")
    ap.add_argument("--device", default="auto")
    args = ap.parse_args()

    enc = Encoder(device=args.device)
    plan = enc.macro_window()  # the default plan, as embed uses it
    docs = [Document(f"{d}.md", (DATA / f"{d}.md").read_text(encoding="utf-8")) for d in args.docs]
    toks = [enc.tokenizer(d) for d in docs]
    rows = [r for t in toks for r in enc.model_inputs(t, plan)[0]]
    model_tokens = sum(len(r) for r in rows)
    doc_tokens = sum(len(t) for t in toks)
    raw_forward(enc, rows[:2], 2)  # warm-up

    sizes = [int(x) for x in args.batch_sizes.split(",")]
    best_raw = {b: float("inf") for b in sizes}
    for b in sizes:
        best_raw[b] = raw_forward(enc, rows, b)
    best_bs = min(best_raw, key=best_raw.get)
    pipe_best = raw_best = float("inf")
    for _ in range(args.repeats):  # alternate raw and pipeline so machine noise hits both; same sample count
        raw_best = min(raw_best, raw_forward(enc, rows, best_bs))
        enc.batch_tokens = best_bs * plan.size
        t0 = time.perf_counter()
        res = embed(docs, enc, PipelineConfig((args.strategy,), modes=("late",)))
        pipe_best = min(pipe_best, time.perf_counter() - t0)
        assert res.stats.tokens["late"] == model_tokens
    raw_tps = model_tokens / raw_best
    pipe_tps = model_tokens / pipe_best
    print(f"machine: {platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads, "
          f"device {enc.device}, torch {torch.__version__}")
    print(f"documents: {', '.join(args.docs)}; {doc_tokens} document tokens, {model_tokens} tokens through the "
          f"model ({len(rows)} inputs, window {plan.size}, overlap {plan.overlap})")
    print("raw forward by batch size (one pass each, picks the batch size): " + ", ".join(f"bs={b}: {model_tokens / t:,.0f} tok/s" for b, t in best_raw.items()))
    print(f"{'':28s}{'tokens/s':>12s}{'seconds':>10s}")
    print(f"{'raw model(...) bs=' + str(best_bs):28s}{raw_tps:12,.0f}{raw_best:10.2f}")
    print(f"{'late pipeline (' + args.strategy.split(':')[0] + ')':28s}{pipe_tps:12,.0f}{pipe_best:10.2f}")
    print(f"{'  in document tokens':28s}{doc_tokens / pipe_best:12,.0f}")
    print(f"ratio late pipeline / raw forward: {pipe_tps / raw_tps:.3f}  (target >= 0.95)")


if __name__ == "__main__":
    main()
