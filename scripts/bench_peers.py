#!/usr/bin/env python3
"""latechunk beside its peers on the same documents and model, in one process (issue 15).

Systems, each run once per round, rounds interleaved (so machine noise hits all of them), medians reported:

- ``raw``: ``model(...)`` over the corpus's tokens cut into non-overlapping inputs of the macro-window size
  (``[CLS] + content + [SEP]``), length-sorted padded batches, the best batch size of ``--batch-sizes`` (picked
  by one pass each before the rounds): the floor any late chunker pays for one forward over the corpus.
- ``latechunk late``: :func:`latechunk.pipeline.embed`, one strategy (``--strategy``), macro window
  ``--window`` with ``--overlap``; ``latechunk late x5``: the five default strategies in one pass;
  ``latechunk naive``: every chunk of ``--strategy`` encoded on its own; ``latechunk late onnx``
  (``--onnx``): the late run on the ONNX Runtime backend (``--backend onnx``), and ``onnx-int8`` likewise.
- ``chonkie LateChunker``: chonkie's late chunker (recursive rules, ``chunk_size`` = the strategy's chunk size)
  over a ``SentenceTransformer`` of the same model with ``max_seq_length`` = ``--window``.
- ``st naive``: ``SentenceTransformer.encode`` over the chunk texts of latechunk's ``--strategy`` spans.

It prints seconds, corpus tokens/s and the ratios vs raw and vs chonkie, the padding fraction of latechunk's
forward batches, the tokens through the model against the corpus's, the attention implementation, and one line
per CPU target of the issue (met or not, by how much); it writes a markdown table (machine, versions, command) to
``--out``. ``--window`` and ``--overlap`` default to latechunk's own defaults (the model's ``max_seq_length``, 256
for all-MiniLM-L6-v2, and 0), which is also chonkie's input length over the same model.

    python3 scripts/bench_peers.py [--fraction 0.25] [--rounds 3] [--window 256 --overlap 0] [--onnx]
    python3 scripts/bench_peers.py --device cuda --rounds 2     # scripts/gpu_check.sh runs this

Needs the extra ``[bench]`` (chonkie, sentence-transformers); ``--onnx`` the extra ``[onnx]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "chroma_chunking_eval" / "corpora"
CORPORA = ("chatlogs", "finance", "pubmed", "state_of_the_union", "wikitexts")
FIVE = ("fixed:size=256", "recursive", "heading", "sentence_window", "semantic")


def _ver(pkg: str) -> str:
    try:
        return version(pkg)
    except PackageNotFoundError:
        return "-"


def load_documents(corpora: Sequence[str], fraction: float, data: Path = DATA):
    """The first ``fraction`` of each corpus's characters (cut at a line end), as latechunk Documents."""
    from latechunk.types import Document

    docs = []
    for c in corpora:
        path = data / f"{c}.md"
        if not path.is_file():
            raise SystemExit(f"corpus {c!r} not found at {path} (give --data)")
        text = path.read_text(encoding="utf-8")
        cut = int(len(text) * fraction)
        nl = text.find("\n", cut)
        docs.append(Document(f"{c}.md", text[: nl if 0 < nl else cut] if fraction < 1 else text))
    return docs


def raw_rows(toks, size: int) -> list[np.ndarray]:
    """The corpus's tokens as non-overlapping model inputs of at most ``size`` tokens, frame included."""
    rows = []
    for t in toks:
        lead, trail = t.input_ids[: t.n_lead], t.input_ids[t.content_end :]
        content = t.input_ids[t.content_start : t.content_end]
        step = size - len(lead) - len(trail)
        for i in range(0, max(len(content), 1), step):
            rows.append(np.concatenate([lead, content[i : i + step], trail]))
    return rows


def raw_forward(enc, rows: list[np.ndarray], batch_size: int) -> None:
    """``enc.model(...)`` over ``rows`` in length-sorted padded batches of ``batch_size``."""
    import torch

    rows = sorted(rows, key=len, reverse=True)
    pad = enc.hf_tokenizer.pad_token_id or 0
    with torch.inference_mode():
        for i in range(0, len(rows), batch_size):
            batch = rows[i : i + batch_size]
            ids = torch.full((len(batch), len(batch[0])), pad, dtype=torch.int64)
            mask = torch.zeros_like(ids)
            for j, r in enumerate(batch):
                ids[j, : len(r)] = torch.from_numpy(r)
                mask[j, : len(r)] = 1
            enc.model(input_ids=ids.to(enc.device), attention_mask=mask.to(enc.device))
    if enc.device.type == "cuda":
        torch.cuda.synchronize()


def targets(med: dict[str, float], raw_key: str) -> list[str]:
    """One plain line per CPU target of issue 15: met or not, and by how much (from the median seconds).

    Args:
        med: Median seconds per system name (as :func:`main` measures them).
        raw_key: The name of the raw forward's row.

    Returns:
        Lines for the targets whose systems were run (a target with a system left out is not judged).
    """
    out = []

    def line(name: str, value: float, goal: float, at_most: bool = False) -> str:
        ok = value <= goal if at_most else value >= goal
        return (f"{name}: {value:.2f}x, target {'<=' if at_most else '>='} {goal:g}x: "
                f"{'met' if ok else 'NOT met'} ({value / goal - 1:+.1%} vs the target)")

    one, five, chonkie = med.get("latechunk late"), med.get("latechunk late x5"), med.get("chonkie LateChunker")
    if one and chonkie:
        out.append(line("latechunk late vs chonkie LateChunker (speed)", chonkie / one, 1.2))
    if five and chonkie:
        out.append(line("five strategies in one pass vs chonkie run once per strategy (speed)", 5 * chonkie / five, 5))
    if five and one:
        out.append(line("five strategies in one pass vs latechunk's one strategy (time)", five / one, 1.1, True))
    if one and raw_key in med:
        out.append(line("latechunk late vs the raw forward (speed)", med[raw_key] / one, 0.95))
    return out


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main(argv: Sequence[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpora", nargs="+", default=list(CORPORA), help="Chroma corpus ids (default: all five)")
    ap.add_argument("--data", type=Path, default=DATA, help="folder of the Chroma corpora")
    ap.add_argument("--fraction", type=float, default=0.25, help="first fraction of each corpus (default 0.25)")
    ap.add_argument("--model", default=None, help="model folder or id (default: the bundled all-MiniLM-L6-v2)")
    ap.add_argument("--strategy", default="fixed:size=256", help="the one-strategy runs' SPEC (default fixed:size=256)")
    ap.add_argument("--window", type=int, default=None,
                    help="macro window in tokens, frame included (default: latechunk's, the model's max_seq_length)")
    ap.add_argument("--overlap", type=int, default=None,
                    help="macro-window overlap in content tokens (default: latechunk's, 0)")
    ap.add_argument("--batch-sizes", default="4,8,16", help="raw forward batch sizes to pick the best from")
    ap.add_argument("--batch-tokens", type=int, default=None,
                    help="latechunk's token budget per batch (default: best raw batch size x window)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3; medians reported)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    ap.add_argument("--onnx", action="store_true", help="also run latechunk late on the onnx and onnx-int8 backends")
    ap.add_argument("--skip", nargs="*", default=[], help="system names to leave out (e.g. chonkie 'latechunk late x5')")
    ap.add_argument("--out", type=Path, default=REPO / "eval" / "results" / "peers.md", help="markdown table to write")
    ap.add_argument("--note", default="", help="a line written under the table (e.g. how loaded the machine was)")
    args = ap.parse_args(argv)
    if not 0 < args.fraction <= 1:
        ap.error(f"--fraction must be in (0, 1], got {args.fraction}")

    import torch

    from latechunk.config import PipelineConfig
    from latechunk.encoder import Encoder
    from latechunk.pipeline import embed

    if "chonkie LateChunker" not in args.skip:
        try:
            import chonkie
        except ImportError as err:
            raise SystemExit(f"bench_peers needs the extra [bench] (or --skip 'chonkie LateChunker'): pip install "
                             f"'latechunk[bench]' ({err})") from err
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as err:
        raise SystemExit(f"bench_peers needs the extra [bench]: pip install 'latechunk[bench]' ({err})") from err

    docs = load_documents(args.corpora, args.fraction, args.data)
    enc = Encoder(args.model, device=args.device)
    mw = enc.macro_window(args.window, args.overlap)
    toks = [enc.tokenizer(d) for d in docs]
    corpus_tokens = sum(len(t) for t in toks)
    rows = raw_rows(toks, mw.size)
    sizes = [int(x) for x in args.batch_sizes.split(",")]
    raw_forward(enc, rows[:2], 2)  # warm-up
    pick = {b: _timed(lambda b=b: raw_forward(enc, rows, b)) for b in sizes}
    best_bs = min(pick, key=pick.get)
    enc.batch_tokens = args.batch_tokens or best_bs * mw.size
    encoders = {"torch": enc}
    if args.onnx:
        for backend in ("onnx", "onnx-int8"):
            encoders[backend] = Encoder(args.model, device="cpu", backend=backend, batch_tokens=enc.batch_tokens)

    def late(specs, backend="torch", modes=("late",)):
        e = encoders[backend]
        cfg = PipelineConfig(tuple(specs), modes=modes, macro_window=mw.size, macro_window_overlap=mw.overlap)
        return lambda: embed(docs, e, cfg)

    st = SentenceTransformer(enc.path, device=str(enc.device))
    st.max_seq_length = mw.size
    if enc.device.type == "cuda":  # 16-bit like latechunk's bf16 default; float16, as chonkie hands numpy its states
        st = st.half()
    chunk_size = int(args.strategy.split("size=")[1].split(",")[0]) if "size=" in args.strategy else 256
    chonk = None
    if "chonkie LateChunker" not in args.skip:
        import chonkie
        from chonkie.embeddings.sentence_transformer import SentenceTransformerEmbeddings

        chonk = chonkie.LateChunker(embedding_model=SentenceTransformerEmbeddings(st), chunk_size=chunk_size)
    spans = embed(docs, enc, PipelineConfig((args.strategy,), modes=("late",), macro_window=mw.size,
                                            macro_window_overlap=mw.overlap))
    texts = [d.text[s:e] for d, b in zip(spans.documents, spans.run(args.strategy).boundaries) for s, e in b.char_spans]

    systems: dict[str, Callable[[], object]] = {
        f"raw model(...) bs={best_bs}": lambda: raw_forward(enc, rows, best_bs),
        "latechunk late": late([args.strategy]),
        "latechunk late x5": late(FIVE),
        "latechunk naive": late([args.strategy], modes=("naive",)),
        "chonkie LateChunker": lambda: [chonk.chunk(d.text) for d in docs],
        "st naive (same spans)": lambda: st.encode(texts, batch_size=32),
    }
    if args.onnx:
        systems["latechunk late onnx"] = late([args.strategy], "onnx")
        systems["latechunk late onnx-int8"] = late([args.strategy], "onnx-int8")
    systems = {k: v for k, v in systems.items() if k not in args.skip}
    times: dict[str, list[float]] = {k: [] for k in systems}
    for _ in range(args.rounds):
        for name, fn in systems.items():
            times[name].append(_timed(fn))
    med = {k: statistics.median(v) for k, v in times.items()}

    # padding of latechunk's forward batches (one late pass, counted by the encoder)
    for k in enc.stats:
        enc.stats[k] = 0 if k != "seconds" else 0.0
    late([args.strategy])()
    padding = 1 - enc.stats["tokens"] / max(enc.stats["padded_tokens"], 1)
    through = enc.stats["tokens"]
    raw_tokens = sum(len(r) for r in rows)

    raw_key = f"raw model(...) bs={best_bs}"
    lines = [
        f"| system | seconds (median of {args.rounds}) | corpus tokens/s | vs raw | vs chonkie |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, s in med.items():
        vs_raw = f"{med[raw_key] / s:.2f}" if raw_key in med else "-"
        vs_ch = f"{med['chonkie LateChunker'] / s:.2f}" if "chonkie LateChunker" in med else "-"
        lines.append(f"| {name} | {s:.2f} | {corpus_tokens / s:,.0f} | {vs_raw} | {vs_ch} |")
    table = "\n".join(lines)
    cmd = "python3 scripts/bench_peers.py " + " ".join(sys.argv[1:] if argv is None else argv)
    threads = torch.get_num_threads()
    machine = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {threads} torch threads, "
               f"device {enc.device}" + (f" ({torch.cuda.get_device_name()})" if enc.device.type == "cuda" else ""))
    versions = (f"latechunk {_ver('latechunk')}, torch {torch.__version__}, transformers {_ver('transformers')}, "
                f"sentence-transformers {_ver('sentence-transformers')}, chonkie {_ver('chonkie')}, "
                f"onnxruntime {_ver('onnxruntime')}, Python {platform.python_version()}")
    setup = (f"{len(docs)} documents ({', '.join(args.corpora)}; first {args.fraction:g} of each), {corpus_tokens:,} "
             f"corpus tokens; model {enc.name}; strategy {args.strategy}; macro window {mw.size}, overlap "
             f"{mw.overlap}; latechunk batch_tokens {enc.batch_tokens}; chonkie chunk_size {chunk_size}, "
             f"max_seq_length {st.max_seq_length}; sentence-transformers dtype {next(st.parameters()).dtype}, latechunk "
             f"{enc.dtype}")
    pad_line = (f"padding in latechunk's forward batches (late, one strategy): {padding:.2%} of {enc.stats['padded_tokens']:,} "
                f"padded tokens ({through:,} real)")
    attn = getattr(enc, "attention", "-")
    work_line = (f"tokens through the model (late, one strategy): {through:,} = {through / corpus_tokens:.4f}x the corpus's "
                 f"{corpus_tokens:,} tokens (raw forward: {raw_tokens:,}; frames of extra windows and a last window "
                 f"pushed back to be full); attention implementation {attn}")
    target_lines = targets(med, raw_key)
    report = "\n".join([f"machine: {machine}", f"versions: {versions}", f"setup: {setup}", pad_line, work_line, "",
                        table, "", *target_lines])
    print(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        body = [f"# latechunk beside its peers ({time.strftime('%Y-%m-%d')})", "", f"Command: `{cmd}`", "",
                f"- machine: {machine}", f"- versions: {versions}", f"- setup: {setup}", f"- {pad_line}",
                f"- {work_line}"]
        if args.note:
            body.append(f"- note: {args.note}")
        args.out.write_text("\n".join(body + ["", table, "", "Targets (issue 15, CPU):", "",
                                                *(f"- {t}" for t in target_lines), ""]), encoding="utf-8")
        print(f"written: {args.out}")
    return {"median_s": med, "corpus_tokens": corpus_tokens, "padding": padding, "best_batch_size": best_bs,
            "batch_tokens": enc.batch_tokens, "model_tokens": through, "targets": target_lines}


if __name__ == "__main__":
    main()
