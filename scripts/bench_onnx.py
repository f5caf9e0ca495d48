#!/usr/bin/env python3
"""The encoder backends side by side: torch vs ONNX Runtime fp32 (``onnx``) vs dynamic int8 (``onnx-int8``) on the
CPU, in one process, interleaved rounds, medians, ratios (issue 15 part 4).

Two workloads, each run by every backend in every round (the order rotates per round so machine noise hits all):

- ``pipeline``: ``latechunk.pipeline.embed`` late mode, one strategy (default ``fixed:size=256``), over the first
  ``--fraction`` of the Chroma corpora, at the pipeline's own shapes: macro window ``--window`` (default 256, the
  model's default), the token budget ``--batch-tokens`` (default 16,384 padded tokens per batch, the runs recorded in
  results/onnx.md; latechunk's CPU default is now 4,096), length-sorted batches. Wall seconds
  of the whole call and the encoder's forward seconds (``Encoder.stats["seconds"]``) are both reported.
- ``(B, S)`` (default ``(8, 512)``): one forward batch of random token ids, the torch backend's forward
  (``Encoder._run_model`` under ``torch.inference_mode``: oneDNN linears where they are on) vs
  :class:`latechunk.onnx_backend.OnnxRunner`.

Every backend runs in fp32. ``--gemm`` adds the linear layers alone (:func:`gemm_lines`): the bound on what a
backend faster only in GEMMs can gain.

Quality in the same run: the max abs difference of the (B, S) token states against torch, and the lowest cosine
between a backend's chunk vectors and torch's (pipeline workload).

    flock /tmp/latechunk_bench.lock python3 scripts/bench_onnx.py [--fraction 0.1] [--rounds 5] [--out FILE.md]

Needs the extra ``[onnx]``. Exports are cached under ``$LATECHUNK_CACHE/onnx`` (made before timing starts).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_peers import CORPORA, DATA, _timed, _ver, load_documents

BACKENDS = ("torch", "onnx", "onnx-int8")


def main(argv: Sequence[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpora", nargs="+", default=list(CORPORA), help="Chroma corpus ids (default: all five)")
    ap.add_argument("--data", type=Path, default=DATA, help="folder of the Chroma corpora")
    ap.add_argument("--fraction", type=float, default=0.1, help="first fraction of each corpus (default 0.1)")
    ap.add_argument("--model", default=None, help="model folder or id (default: the bundled all-MiniLM-L6-v2)")
    ap.add_argument("--strategy", default="fixed:size=256", help="the pipeline's SPEC (default fixed:size=256)")
    ap.add_argument("--window", type=int, default=None, help="macro window in tokens (default: the model's, 256)")
    ap.add_argument("--batch-tokens", type=int, default=16384, help="token budget per forward batch (default 16384, as the recorded runs; latechunk's CPU default is 4096)")
    ap.add_argument("--shape", default="8x512", help="the single-batch workload, BxS (default 8x512)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5; medians reported)")
    ap.add_argument("--backends", default=",".join(BACKENDS), help="comma list (default torch,onnx,onnx-int8)")
    ap.add_argument("--out", type=Path, default=None, help="markdown file to write the report to")
    ap.add_argument("--gemm", action="store_true",
                    help="also time the model's linear layers alone (torch addmm, torch oneDNN, ONNX Runtime MatMul+Add "
                         "at (tokens, hidden) x (hidden, intermediate) and back) and the linear layers' share of the "
                         "torch forward: the most any backend that only speeds up GEMMs could gain")
    ap.add_argument("--note", default="", help="a line written under the report (e.g. how loaded the machine was)")
    args = ap.parse_args(argv)
    if not 0 < args.fraction <= 1:
        ap.error(f"--fraction must be in (0, 1], got {args.fraction}")
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if "torch" not in backends or any(b not in BACKENDS for b in backends):
        ap.error(f"--backends must include torch and be among {', '.join(BACKENDS)}, got {args.backends!r}")
    b_rows, s_len = (int(x) for x in args.shape.lower().split("x"))

    import torch

    from latechunk.config import PipelineConfig
    from latechunk.encoder import Encoder
    from latechunk.onnx_backend import OnnxRunner, export_onnx
    from latechunk.pipeline import embed

    docs = load_documents(args.corpora, args.fraction, args.data)
    # fp32 throughout (the target's terms): torch's own default on an AVX-512 BF16 CPU would be bf16
    encoders = {b: Encoder(args.model, device="cpu", dtype="float32", backend=b, batch_tokens=args.batch_tokens)
                for b in backends}
    ref = encoders["torch"]
    mw = ref.macro_window(args.window)
    cfg = PipelineConfig((args.strategy,), modes=("late",), macro_window=mw.size)
    corpus_tokens = sum(len(ref.tokenizer(d)) for d in docs)

    # the single batch: the torch backend's forward (Encoder._run_model: oneDNN linear where it is on) vs the ONNX runners (the same files the encoders loaded)
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, ref.hf_tokenizer.vocab_size, size=(b_rows, s_len)).astype(np.int64)
    ids[:, 0], ids[:, -1] = ref.hf_tokenizer.cls_token_id or 101, ref.hf_tokenizer.sep_token_id or 102
    mask = np.ones_like(ids)
    runners = {b: OnnxRunner(export_onnx(ref.model, ref.model_hash, "int8" if b == "onnx-int8" else "fp32"))
               for b in backends if b != "torch"}

    def torch_batch():
        with torch.inference_mode():
            return ref._run_model(torch.from_numpy(ids), torch.from_numpy(mask)).last_hidden_state

    batch_fns = {"torch": torch_batch} | {b: (lambda r=r: r(ids, mask)) for b, r in runners.items()}

    def pipeline(b):
        return lambda: embed(docs, encoders[b], cfg)

    # warm-up (and the quality numbers): one pass of each
    states = {b: np.asarray(f()) for b, f in batch_fns.items()}
    vecs = {b: pipeline(b)().run(args.strategy).vectors["late"].vectors for b in backends}
    quality = {}
    for b in backends:
        diff = float(np.abs(states[b] - states["torch"]).max())
        cos = float((vecs[b] * vecs["torch"]).sum(axis=1).min())
        quality[b] = (diff, cos)

    times: dict[tuple[str, str], list[float]] = {}
    fwd: dict[str, list[float]] = {b: [] for b in backends}
    for r in range(args.rounds):
        order = backends[r % len(backends):] + backends[: r % len(backends)]
        for b in order:
            times.setdefault(("batch", b), []).append(_timed(batch_fns[b]))
        for b in order:
            before = encoders[b].stats["seconds"]
            times.setdefault(("pipeline", b), []).append(_timed(pipeline(b)))
            fwd[b].append(encoders[b].stats["seconds"] - before)
    med = {k: statistics.median(v) for k, v in times.items()}
    med_fwd = {b: statistics.median(v) for b, v in fwd.items()}
    st = ref.stats
    padding = 1 - st["tokens"] / max(st["padded_tokens"], 1)

    head = f"| backend | ({b_rows}, {s_len}) s | x torch | pipeline s | x torch | forward s | x torch | " \
           f"max abs diff ({b_rows}, {s_len}) | min chunk cosine |"
    lines = [head, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for b in backends:
        tb, tp = med[("batch", b)], med[("pipeline", b)]
        lines.append(f"| {b} | {tb:.3f} | {med[('batch', 'torch')] / tb:.2f} | {tp:.2f} | "
                     f"{med[('pipeline', 'torch')] / tp:.2f} | {med_fwd[b]:.2f} | {med_fwd['torch'] / med_fwd[b]:.2f} | "
                     f"{quality[b][0]:.2e} | {quality[b][1]:.6f} |")
    table = "\n".join(lines)
    cmd = "python3 scripts/bench_onnx.py " + " ".join(sys.argv[1:] if argv is None else argv)
    ort_threads = {b: r.threads for b, r in runners.items()}
    machine = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {torch.get_num_threads()} torch "
               f"threads, ONNX Runtime intra-op threads {ort_threads}")
    versions = (f"latechunk {_ver('latechunk')}, torch {torch.__version__}, transformers {_ver('transformers')}, "
                f"onnxruntime {_ver('onnxruntime')}, onnx {_ver('onnx')}, Python {platform.python_version()}")
    setup = (f"pipeline: {len(docs)} documents ({', '.join(args.corpora)}; first {args.fraction:g} of each), "
             f"{corpus_tokens:,} corpus tokens, model {ref.name}, strategy {args.strategy}, late, macro window "
             f"{mw.size}, overlap {mw.overlap}, batch_tokens {args.batch_tokens} (length-sorted batches, padding "
             f"{padding:.2%}); single batch ({b_rows}, {s_len}) of random ids, no padding; {args.rounds} interleaved "
             f"rounds, medians; torch fp32 with oneDNN linear {'on' if ref.onednn_linear else 'off'}")
    extra = gemm_lines(ref, min(args.batch_tokens, 4096), args.rounds) if args.gemm else []
    report = "\n".join([f"machine: {machine}", f"versions: {versions}", f"setup: {setup}", "", table, "", *extra])
    print(report, flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        body = [f"Command: `{cmd}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", "",
                f"- machine: {machine}", f"- versions: {versions}", f"- setup: {setup}"]
        if args.note:
            body.append(f"- note: {args.note}")
        args.out.write_text("\n".join(body + ["", table, "", *extra, ""]), encoding="utf-8")
        print(f"written: {args.out}")
    return {"median_s": {f"{w} {b}": v for (w, b), v in med.items()}, "forward_s": med_fwd, "quality": quality,
            "corpus_tokens": corpus_tokens, "padding": padding}


def _ort_linear(k: int, n: int, w, b, threads: int):
    """An ONNX Runtime session of ``x @ w.T + b`` (MatMul + Add), ``x`` of shape (any, k)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "wt"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["y"])], "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, n])],
        [numpy_helper.from_array(w.t().contiguous().numpy(), "wt"), numpy_helper.from_array(b.numpy(), "b")])
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    return ort.InferenceSession(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
                                .SerializeToString(), so, providers=["CPUExecutionProvider"])


def _interleaved(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median seconds of each function, the functions interleaved ``repeats`` times (after one warm-up each)."""
    for f in fns.values():
        f()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, f in fns.items():
            times[name].append(_timed(f))
    return {name: statistics.median(v) for name, v in times.items()}


def gemm_lines(ref, tokens: int, rounds: int) -> list[str]:
    """The linear layers alone, and what a backend faster only in GEMMs could gain.

    Every linear shape of one encoder layer at ``tokens`` rows, with bias, fp32: ``hidden -> hidden`` (query, key,
    value, attention output: 4 a layer), ``hidden -> 3 hidden`` (ONNX Runtime fuses query/key/value into one),
    ``hidden -> intermediate`` and ``intermediate -> hidden``; each timed with torch's stock ``F.linear`` (BLAS
    addmm), torch through oneDNN (:class:`latechunk.encoder.OneDNNLinear`) and ONNX Runtime (MatMul + Add, intra-op
    threads = torch's), interleaved. Then the torch backend's forward of a (tokens / 256, 256) batch with oneDNN
    linear on and off (wall seconds). The linears' time per forward (4 hidden GEMMs + the two FFN ones, x layers)
    over the forward's wall time is their share; a backend whose GEMMs ran as ONNX Runtime's (query/key/value
    fused) and everything else for free would take that GEMM time alone: the ceiling printed is the forward's
    wall time over it. An estimate (isolated GEMMs, warm caches), not a proof.
    """
    import torch

    from latechunk.encoder import OneDNNLinear

    cfg = ref.model.config
    hidden, inter = int(cfg.hidden_size), int(getattr(cfg, "intermediate_size", 4 * cfg.hidden_size))
    layers = int(getattr(cfg, "num_hidden_layers", 1))
    threads = torch.get_num_threads()
    g = torch.Generator().manual_seed(0)
    out = [("| linear (fp32, bias) | torch addmm GFLOP/s | torch oneDNN GFLOP/s | ONNX Runtime GFLOP/s | oneDNN x addmm | "
            "ORT x oneDNN |"), "| --- | ---: | ---: | ---: | ---: | ---: |"]
    secs: dict[tuple[int, int], dict[str, float]] = {}
    for k, n in ((hidden, hidden), (hidden, 3 * hidden), (hidden, inter), (inter, hidden)):
        x = torch.randn(tokens, k, generator=g)
        w, b = torch.randn(n, k, generator=g) / k ** 0.5, torch.randn(n, generator=g)
        sess, xn = _ort_linear(k, n, w, b, threads), x.numpy()

        def stock(x=x, w=w, b=b):
            with torch.inference_mode():
                torch.nn.functional.linear(x, w, b)

        def onednn(x=x, w=w, b=b):
            with torch.inference_mode(), OneDNNLinear():
                torch.nn.functional.linear(x, w, b)

        t = _interleaved({"addmm": stock, "onednn": onednn, "ort": lambda s=sess, a=xn: s.run(None, {"x": a})},
                         max(rounds, 3) * 3)
        secs[(k, n)] = t
        gf = {name: 2.0 * tokens * k * n / v / 1e9 for name, v in t.items()}
        out.append(f"| ({tokens}, {k}) x ({k}, {n}) | {gf['addmm']:.0f} | {gf['onednn']:.0f} | {gf['ort']:.0f} | "
                   f"{gf['onednn'] / gf['addmm']:.2f} | {gf['ort'] / gf['onednn']:.2f} |")
    rows = max(tokens // 256, 1)
    ids = torch.randint(1000, 20000, (rows, 256), generator=g)
    on = ref.onednn_linear

    def forward(flag: bool):
        def run():
            ref.onednn_linear = flag
            with torch.inference_mode():
                ref._run_model(ids, torch.ones_like(ids))
        return run

    try:
        fwd = _interleaved({"on": forward(True), "off": forward(False)} if on else {"off": forward(False)},
                           max(rounds, 3) * 2)
    finally:
        ref.onednn_linear = on
    best_torch = "onednn" if on else "addmm"
    per_layer = {name: 4 * secs[(hidden, hidden)][name] + secs[(hidden, inter)][name] + secs[(inter, hidden)][name]
                 for name in ("addmm", "onednn", "ort")}
    ort_fused = secs[(hidden, 3 * hidden)]["ort"] + secs[(hidden, hidden)]["ort"] + secs[(hidden, inter)]["ort"] \
        + secs[(inter, hidden)]["ort"]
    wall = fwd["on" if on else "off"]
    share = layers * per_layer[best_torch] / wall
    ceiling = wall / (layers * min(per_layer["ort"], ort_fused))
    out += ["", f"torch backend forward of a ({rows}, 256) batch: "
                + (f"oneDNN linear on {fwd['on']:.3f} s, off {fwd['off']:.3f} s ({fwd['off'] / fwd['on']:.2f}x)"
                   if on else f"{fwd['off']:.3f} s (oneDNN linear off here)"),
            (f"linear layers' share of that forward's wall time (their isolated GEMM seconds x {layers} layers): "
            f"{share:.1%}; ONNX Runtime's GEMMs for the same layers (query/key/value fused or not, the faster): "
            f"{layers * min(per_layer['ort'], ort_fused):.3f} s, so a backend with ONNX Runtime's GEMMs and every "
            f"other operator free would be at most about {ceiling:.2f}x torch (an estimate from isolated GEMMs)")]
    return out

if __name__ == "__main__":
    main()
