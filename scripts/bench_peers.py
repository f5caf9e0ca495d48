#!/usr/bin/env python3
"""latechunk beside its peers on the same documents and model, in one process (issue 15).

Systems, each run once per round, rounds interleaved (so machine noise hits all of them), medians reported:

- ``raw``: ``model(...)`` over the corpus's tokens cut into non-overlapping inputs of the macro-window size
  (``[CLS] + content + [SEP]``), length-sorted padded batches, the best batch size of ``--batch-sizes`` (picked
  by one pass each before the rounds): the floor any late chunker pays for one forward over the corpus.
- ``latechunk late``: :func:`latechunk.pipeline.embed`, one strategy (``--strategy``), macro window
  ``--window`` with ``--overlap``; ``latechunk late x5``: the five default strategies in one pass;
  ``latechunk naive``: every chunk of ``--strategy`` encoded on its own; ``latechunk late onnx``
  (``--onnx``): the late run on the ONNX Runtime backend (``--backend onnx``), and ``onnx-int8`` likewise;
  ``latechunk late compiled`` (``--compile``): with ``embed --compile``; ``latechunk late bt=N`` (``--budgets``):
  the late run at another token budget per batch. latechunk runs at its default budget
  (:func:`latechunk.encoder.default_batch_tokens`) unless ``--batch-tokens`` is given.
- ``chonkie LateChunker``: chonkie's late chunker (recursive rules, ``chunk_size`` = the strategy's chunk size)
  over a ``SentenceTransformer`` of the same model with ``max_seq_length`` = ``--window``.
- ``st naive``: ``SentenceTransformer.encode`` over the chunk texts of latechunk's ``--strategy`` spans.

Dtypes (a column of the table): latechunk runs at its default (:func:`latechunk.encoder.default_dtype`: bf16 on
CUDA and on CPUs with AMX, else fp32; ``$LATECHUNK_CPU_DTYPE`` overrides), chonkie and sentence-transformers at
theirs (fp32 on the CPU; on CUDA this script halves their model, as before). Where latechunk's CPU default is 16-bit,
fairness rows run the peers in that dtype too, so a reader sees how much of a speed-up is the dtype:

- ``raw model(...) fp32``: the raw forward of an fp32 copy of the model (the floor the peers pay at their default);
  ``raw model(...) bf16``: the model cast to bf16, as latechunk runs it (the floor latechunk pays: the "vs raw"
  column and the raw-forward target are against this one); ``raw model(...) bf16 autocast``: the fp32 model
  under ``torch.autocast(bfloat16)`` (how chonkie can be run in bf16, below).
- ``chonkie LateChunker bf16 (autocast)``: chonkie cannot take a bf16 model: it hands the token states to numpy,
  which has no bfloat16 (``TypeError: Got unsupported ScalarType BFloat16`` in
  ``SentenceTransformerEmbeddings.embed_as_tokens``, chonkie 1.7.0). It runs its fp32 model under
  ``torch.autocast("cpu", torch.bfloat16)`` instead: matmuls in bf16, states out of the last LayerNorm in fp32.
- ``st naive (same spans) bf16``: sentence-transformers loads the model in bf16
  (``model_kwargs={"torch_dtype": torch.bfloat16}``; it returns float32 numpy vectors).

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
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
# the Chroma corpora: under $LATECHUNK_DATA (as the tests and `latechunk compare` read it), else ../shared/data
DATA = Path(os.environ.get("LATECHUNK_DATA") or REPO.parent / "shared" / "data") / "chroma_chunking_eval" / "corpora"
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


def raw_forward(enc, rows: list[np.ndarray], batch_size: int, autocast=None) -> None:
    """``enc.model(...)`` over ``rows`` in length-sorted padded batches of ``batch_size``, in the model's dtype, or
    under ``torch.autocast(autocast)`` when given (a torch dtype)."""
    import contextlib

    import torch

    rows = sorted(rows, key=len, reverse=True)
    pad = enc.hf_tokenizer.pad_token_id or 0
    cast = torch.autocast(enc.device.type, dtype=autocast) if autocast is not None else contextlib.nullcontext()
    with torch.inference_mode(), cast:
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


CHONKIE, CHONKIE_16 = "chonkie LateChunker", "chonkie LateChunker bf16 (autocast)"


def short_dtype(dtype) -> str:
    """``torch.bfloat16`` / ``"bfloat16"`` -> ``"bf16"`` (fp32, fp16 likewise): the suffix of a row's name."""
    name = str(dtype).removeprefix("torch.")
    return {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(name, name)


def targets(med: dict[str, float], raw_key: str, dtype: str = "") -> list[str]:
    """One plain line per CPU target of issue 15: met or not, and by how much (from the median seconds).

    The targets are against chonkie at its defaults (fp32 on the CPU), whatever latechunk's dtype; where the
    fairness row ``chonkie LateChunker bf16 (autocast)`` ran, two more lines (no target) give latechunk against
    chonkie in the same 16-bit dtype: the part of the speed-up that is not the dtype.

    Args:
        med: Median seconds per system name (as :func:`main` measures them).
        raw_key: The name of the raw forward's row in latechunk's dtype (the floor latechunk pays).
        dtype: latechunk's dtype as named in the lines (e.g. ``bfloat16``); empty: not named.

    Returns:
        Lines for the targets whose systems were run (a target with a system left out is not judged).
    """
    out = []

    def line(name: str, value: float, goal: float, at_most: bool = False) -> str:
        ok = value <= goal if at_most else value >= goal
        return (f"{name}: {value:.2f}x, target {'<=' if at_most else '>='} {goal:g}x: "
                f"{'met' if ok else 'NOT met'} ({value / goal - 1:+.1%} vs the target)")

    one, five, chonkie = med.get("latechunk late"), med.get("latechunk late x5"), med.get(CHONKIE)
    at = f" ({dtype})" if dtype else ""
    if one and chonkie:
        out.append(line(f"latechunk late{at} vs chonkie LateChunker (speed)", chonkie / one, 1.2))
    if five and chonkie:
        out.append(line("five strategies in one pass vs chonkie run once per strategy (speed)", 5 * chonkie / five, 5))
    if five and one:
        out.append(line("five strategies in one pass vs latechunk's one strategy (time)", five / one, 1.1, True))
    if one and raw_key in med:
        out.append(line(f"latechunk late vs the raw forward{at} (speed)", med[raw_key] / one, 0.95))
    c16 = med.get(CHONKIE_16)
    if one and c16:
        out.append(f"latechunk late vs {CHONKIE_16} (speed, same dtype, no target: the part that is not the "
                   f"dtype): {c16 / one:.2f}x")
    if five and c16:
        out.append(f"five strategies in one pass vs {CHONKIE_16} run once per strategy (speed, no target): "
                   f"{5 * c16 / five:.2f}x")
    return out


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _parser() -> argparse.ArgumentParser:
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
    ap.add_argument("--batch-tokens", default=None,
                    help="latechunk's token budget per batch: N tokens, or 'best' (the best raw batch size x window); "
                         "default: latechunk's own (latechunk.encoder.default_batch_tokens: 4096 on the CPU, 16384 "
                         "on a GPU)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3; medians reported)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    ap.add_argument("--onnx", action="store_true", help="also run latechunk late on the onnx and onnx-int8 backends")
    ap.add_argument("--compile", action="store_true",
                    help="also run latechunk late with --compile (Encoder(compile=True): torch.compile, TorchInductor); its "
                         "compile time, paid once in a warm-up pass, is reported beside the table, not in it")
    ap.add_argument("--budgets", default="",
                    help="comma list of token budgets per batch (e.g. 1024,4096,16384): one more 'latechunk late "
                         "bt=N' row each, the same encoder's model at that budget (how the default was chosen)")
    ap.add_argument("--stock-linear", action="store_true",
                    help="also run latechunk late with onednn_linear=False (nn.Linear as BLAS addmm, PyTorch's stock "
                         "fp32 CPU path) beside its default oneDNN linear (latechunk.encoder.OneDNNLinear)")
    ap.add_argument("--skip", nargs="*", default=[], help="system names to leave out (e.g. chonkie 'latechunk late x5')")
    ap.add_argument("--out", type=Path, default=REPO / "results" / "peers.md", help="markdown table to write")
    ap.add_argument("--note", default="", help="a line written under the table (e.g. how loaded the machine was)")
    return ap


def _parse(argv: Sequence[str] | None) -> tuple[argparse.Namespace, list[int]]:
    """The command line and its ``--budgets`` as integers; ``SystemExit`` (argparse's usage error) on a bad value."""
    ap = _parser()
    args = ap.parse_args(argv)
    if not 0 < args.fraction <= 1:
        ap.error(f"--fraction must be in (0, 1], got {args.fraction}")
    try:
        budgets = [int(b) for b in args.budgets.split(",") if b.strip()]
    except ValueError:
        ap.error(f"--budgets must be a comma list of positive integers, got {args.budgets!r}")
    if any(b < 1 for b in budgets):
        ap.error(f"--budgets must be a comma list of positive integers, got {args.budgets!r}")
    if args.batch_tokens not in (None, "best") and not (args.batch_tokens.isdigit() and int(args.batch_tokens) > 0):
        ap.error(f"--batch-tokens must be a positive integer or 'best', got {args.batch_tokens!r}")
    return args, budgets


def _sentence_transformer_class(skip: Sequence[str]):
    """``SentenceTransformer``, after checking chonkie imports (unless skipped); ``SystemExit`` naming the extra."""
    if CHONKIE not in skip:
        try:
            import chonkie  # noqa: F401
        except ImportError as err:
            raise SystemExit(f"bench_peers needs the extra [bench] (or --skip 'chonkie LateChunker'): pip install "
                             f"'latechunk[bench]' ({err})") from err
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as err:
        raise SystemExit(f"bench_peers needs the extra [bench]: pip install 'latechunk[bench]' ({err})") from err
    return SentenceTransformer


@dataclass
class _Bench:
    """latechunk's side of the bench: documents, encoders (by backend name), macro window, raw forward inputs."""

    args: argparse.Namespace
    budgets: list[int]
    docs: list
    enc: object  # latechunk.encoder.Encoder, latechunk's default dtype
    mw: object  # latechunk.macro_window.MacroWindow
    rows: list[np.ndarray]  # raw_rows of the corpus
    corpus_tokens: int
    fair: bool  # the fairness rows: on the CPU with a 16-bit latechunk default, the peers in that dtype too
    raw_encs: dict = field(default_factory=dict)  # dtype name -> encoder of the raw forward
    best: dict[str, int] = field(default_factory=dict)  # dtype name -> best raw batch size
    encoders: dict = field(default_factory=dict)  # backend name -> encoder of the latechunk rows
    stock_linear: bool = False
    compile_s: float | None = None

    @property
    def lc_dtype(self) -> str:
        return str(self.enc.dtype).removeprefix("torch.")

    @property
    def best_bs(self) -> int:
        return self.best[self.lc_dtype]

    def config(self, specs, modes=("late",)):
        from latechunk.config import PipelineConfig

        return PipelineConfig(tuple(specs), modes=modes, macro_window=self.mw.size,
                              macro_window_overlap=self.mw.overlap)

    def late(self, specs, backend="torch", modes=("late",)) -> Callable[[], object]:
        """One latechunk run (``embed``) over the documents, to be timed."""
        from latechunk.pipeline import embed

        e = self.encoders[backend]
        cfg = self.config(specs, modes)
        return lambda: embed(self.docs, e, cfg)


def _load(args: argparse.Namespace, budgets: list[int]) -> _Bench:
    """The documents, latechunk's encoder, its raw rows, and the best raw batch size per dtype."""
    import torch

    from latechunk.encoder import Encoder

    docs = load_documents(args.corpora, args.fraction, args.data)
    enc = Encoder(args.model, device=args.device)  # latechunk's default dtype (default_dtype)
    fair = enc.device.type == "cpu" and enc.dtype != torch.float32
    mw = enc.macro_window(args.window, args.overlap)
    toks = [enc.tokenizer(d) for d in docs]
    b = _Bench(args, budgets, docs, enc, mw, raw_rows(toks, mw.size), sum(len(t) for t in toks), fair)
    sizes = [int(x) for x in args.batch_sizes.split(",")]
    b.raw_encs = {b.lc_dtype: enc}  # the raw forward in latechunk's dtype, and (fairness) in the peers' fp32
    if fair:
        b.raw_encs["float32"] = Encoder(args.model, device=args.device, dtype="float32")
    for dt, e in b.raw_encs.items():
        raw_forward(e, b.rows[:2], 2)  # warm-up
        pick = {bs: _timed(lambda bs=bs, e=e: raw_forward(e, b.rows, bs)) for bs in sizes}
        b.best[dt] = min(pick, key=pick.get)
    if args.batch_tokens == "best":
        enc.batch_tokens = b.best_bs * mw.size
    elif args.batch_tokens is not None:
        enc.batch_tokens = int(args.batch_tokens)
    return b


def _add_encoders(b: _Bench) -> None:
    """latechunk's further encoders (``--onnx``, ``--budgets``, ``--stock-linear``, ``--compile``) into
    ``b.encoders``; the compile's warm-up pass timed into ``b.compile_s``."""
    from latechunk.encoder import Encoder
    from latechunk.pipeline import embed

    args, enc, lc_dtype = b.args, b.enc, b.lc_dtype
    b.encoders = {"torch": enc}
    if args.onnx:
        for backend in ("onnx", "onnx-int8"):
            b.encoders[backend] = Encoder(args.model, device="cpu", backend=backend, batch_tokens=enc.batch_tokens)

    for bt in b.budgets:  # the same loaded model (shared weights) at another token budget per batch
        b.encoders[f"bt={bt}"] = Encoder(enc.loaded, device=args.device, dtype=lc_dtype, batch_tokens=bt)
    b.stock_linear = args.stock_linear and enc.onednn_linear  # elsewhere latechunk already runs the stock linear
    if args.stock_linear and not b.stock_linear:
        print(f"--stock-linear: latechunk's oneDNN linear is off here ({lc_dtype} on {enc.device}): no extra row")
    if b.stock_linear:  # the same loaded model, nn.Linear as PyTorch runs it (BLAS addmm)
        b.encoders["stock"] = Encoder(enc.loaded, device=args.device, dtype=lc_dtype, batch_tokens=enc.batch_tokens,
                                      onednn_linear=False)

    if args.compile:  # the one forward faster than torch's eager one left to try on the CPU (issue 15)
        ec = Encoder(args.model, device=args.device, batch_tokens=enc.batch_tokens, compile=True)  # embed --compile
        b.encoders["compiled"] = ec
        t_c = time.perf_counter()
        embed(b.docs, ec, b.config((args.strategy,)))  # compiles every batch shape once
        b.compile_s = time.perf_counter() - t_c


@dataclass
class _Peers:
    """The peers over the same model: sentence-transformers (its default dtype, and ``st16`` in latechunk's 16-bit
    dtype for the fairness rows), chonkie's late chunker over ``st``, and latechunk's chunk texts for ``st naive``."""

    st: object
    dtype: str  # st's
    st16: object | None
    chonk: object | None
    chunk_size: int
    texts: list[str]


def _peers(b: _Bench, sentence_transformer) -> _Peers:
    from latechunk.pipeline import embed

    args, enc = b.args, b.enc
    st = sentence_transformer(enc.path, device=str(enc.device))
    st.max_seq_length = b.mw.size
    if enc.device.type == "cuda":  # 16-bit like latechunk's bf16 default; float16, as chonkie hands numpy its states
        st = st.half()
    peer_dtype = str(next(st.parameters()).dtype).removeprefix("torch.")
    st16 = None
    if b.fair and "st naive (same spans) " + short_dtype(enc.dtype) not in args.skip:
        st16 = sentence_transformer(enc.path, device=str(enc.device), model_kwargs={"torch_dtype": enc.dtype})
        st16.max_seq_length = b.mw.size
    chunk_size = int(args.strategy.split("size=")[1].split(",")[0]) if "size=" in args.strategy else 256
    chonk = None
    if CHONKIE not in args.skip or (b.fair and CHONKIE_16 not in args.skip):
        import chonkie
        from chonkie.embeddings.sentence_transformer import SentenceTransformerEmbeddings

        chonk = chonkie.LateChunker(embedding_model=SentenceTransformerEmbeddings(st), chunk_size=chunk_size)
    spans = embed(b.docs, enc, b.config((args.strategy,)))
    texts = [d.text[s:e] for d, bd in zip(spans.documents, spans.run(args.strategy).boundaries)
             for s, e in bd.char_spans]
    return _Peers(st, peer_dtype, st16, chonk, chunk_size, texts)


def _raw_name(b: _Bench, dt: str) -> str:
    """``"raw model(...) bs=4"`` when it is the only raw row and fp32 (as before), else with the dtype."""
    tag = "" if dt == "float32" and not b.fair else f" {short_dtype(dt)}"
    return f"raw model(...){tag} bs={b.best[dt]}"


def _systems(b: _Bench, p: _Peers) -> tuple[dict[str, Callable[[], object]], dict[str, str]]:
    """The systems to time (name -> call) and their dtypes (name -> column text), ``--skip`` left out."""
    import torch

    args, enc, lc_dtype, sd, docs, strategy = b.args, b.enc, b.lc_dtype, short_dtype(b.enc.dtype), b.docs, b.args.strategy
    raw_key, chonk, st, st16, texts = _raw_name(b, lc_dtype), p.chonk, p.st, p.st16, p.texts

    def chonkie_autocast():
        with torch.autocast(enc.device.type, dtype=enc.dtype):
            return [chonk.chunk(d.text) for d in docs]

    systems: dict[str, Callable[[], object]] = {raw_key: lambda: raw_forward(enc, b.rows, b.best_bs)}
    dtypes: dict[str, str] = {raw_key: lc_dtype}
    if b.fair:
        e32 = b.raw_encs["float32"]
        systems[_raw_name(b, "float32")] = lambda: raw_forward(e32, b.rows, b.best["float32"])
        dtypes[_raw_name(b, "float32")] = "float32"
        ac_key = f"raw model(...) {sd} autocast bs={b.best_bs}"
        systems[ac_key] = lambda: raw_forward(e32, b.rows, b.best_bs, autocast=enc.dtype)
        dtypes[ac_key] = f"{lc_dtype} (autocast)"
    systems |= {
        "latechunk late": b.late([strategy]),
        "latechunk late x5": b.late(FIVE),
        "latechunk naive": b.late([strategy], modes=("naive",)),
        CHONKIE: lambda: [chonk.chunk(d.text) for d in docs],
        "st naive (same spans)": lambda: st.encode(texts, batch_size=32),
    }
    dtypes |= {"latechunk late": lc_dtype, "latechunk late x5": lc_dtype, "latechunk naive": lc_dtype,
               CHONKIE: p.dtype, "st naive (same spans)": p.dtype}
    if b.fair:
        systems[CHONKIE_16] = chonkie_autocast
        dtypes[CHONKIE_16] = f"{lc_dtype} (autocast)"
        if st16 is not None:
            systems[f"st naive (same spans) {sd}"] = lambda: st16.encode(texts, batch_size=32)
            dtypes[f"st naive (same spans) {sd}"] = lc_dtype
    if args.onnx:
        systems["latechunk late onnx"] = b.late([strategy], "onnx")
        systems["latechunk late onnx-int8"] = b.late([strategy], "onnx-int8")
        dtypes |= {"latechunk late onnx": "float32 (ORT)", "latechunk late onnx-int8": "int8 (ORT dynamic)"}
    for bt in b.budgets:
        systems[f"latechunk late bt={bt}"] = b.late([strategy], f"bt={bt}")
        dtypes[f"latechunk late bt={bt}"] = lc_dtype
    if b.stock_linear:
        systems["latechunk late stock linear"] = b.late([strategy], "stock")
        dtypes["latechunk late stock linear"] = f"{lc_dtype} (BLAS addmm)"
    if args.compile:
        systems["latechunk late compiled"] = b.late([strategy], "compiled")
        dtypes["latechunk late compiled"] = f"{lc_dtype} (torch.compile)"
    systems = {k: v for k, v in systems.items() if k not in args.skip}
    dtypes = {k: v for k, v in dtypes.items() if k in systems}
    return systems, dtypes


def _medians(systems: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median seconds per system over ``rounds`` interleaved rounds."""
    times: dict[str, list[float]] = {k: [] for k in systems}
    for _ in range(rounds):
        for name, fn in systems.items():
            times[name].append(_timed(fn))
    return {k: statistics.median(v) for k, v in times.items()}


def _forward_counts(b: _Bench) -> tuple[float, int]:
    """Padding fraction of latechunk's forward batches and the real tokens through the model (one late pass,
    counted by the encoder)."""
    enc = b.enc
    for k in enc.stats:
        enc.stats[k] = 0 if k != "seconds" else 0.0
    b.late([b.args.strategy])()
    return 1 - enc.stats["tokens"] / max(enc.stats["padded_tokens"], 1), enc.stats["tokens"]


def _table(med: dict[str, float], dtypes: dict[str, str], raw_key: str, corpus_tokens: int, rounds: int) -> str:
    lines = [
        f"| system | dtype | seconds (median of {rounds}) | corpus tokens/s | vs raw | vs chonkie |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for name, s in med.items():
        vs_raw = f"{med[raw_key] / s:.2f}" if raw_key in med else "-"
        vs_ch = f"{med[CHONKIE] / s:.2f}" if CHONKIE in med else "-"
        lines.append(f"| {name} | {dtypes[name]} | {s:.2f} | {corpus_tokens / s:,.0f} | {vs_raw} | {vs_ch} |")
    return "\n".join(lines)


def _facts(b: _Bench, p: _Peers, padding: float, through: int) -> dict[str, str]:
    """The report's lines above the table: machine, versions, setup, dtypes, padding, work (by those keys)."""
    import torch

    from latechunk.encoder import cpu_bf16_isa

    args, enc, mw, lc_dtype, corpus_tokens, peer_dtype = b.args, b.enc, b.mw, b.lc_dtype, b.corpus_tokens, p.dtype
    threads = torch.get_num_threads()
    machine = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {threads} torch threads, "
               f"device {enc.device}" + (f" ({torch.cuda.get_device_name()})" if enc.device.type == "cuda" else ""))
    versions = (f"latechunk {_ver('latechunk')}, torch {torch.__version__}, transformers {_ver('transformers')}, "
                f"sentence-transformers {_ver('sentence-transformers')}, chonkie {_ver('chonkie')}, "
                f"onnxruntime {_ver('onnxruntime')}, Python {platform.python_version()}")
    setup = (f"{len(b.docs)} documents ({', '.join(args.corpora)}; first {args.fraction:g} of each), {corpus_tokens:,} "
             f"corpus tokens; model {enc.name}; strategy {args.strategy}; macro window {mw.size}, overlap "
             f"{mw.overlap}; latechunk batch_tokens {enc.batch_tokens}, oneDNN linear {'on' if enc.onednn_linear else 'off'}; chonkie chunk_size {p.chunk_size}, "
             f"max_seq_length {p.st.max_seq_length}")
    env = os.environ.get("LATECHUNK_CPU_DTYPE")
    dtype_line = (f"dtypes: latechunk {lc_dtype} (its default here: bf16 on CUDA and on CPUs with AMX or "
                  f"AVX-512 BF16, else fp32; cpu_bf16_isa() = {cpu_bf16_isa()}"
                  + (f"; $LATECHUNK_CPU_DTYPE={env}" if env else "") + f"); chonkie and sentence-transformers "
                  f"{peer_dtype} (their defaults" + ("; halved by this script on CUDA" if enc.device.type == "cuda"
                                                     else "") + ")"
                  + (f"; fairness rows in {lc_dtype}: raw forwards, chonkie under torch.autocast (it cannot take a "
                     f"{lc_dtype} model: numpy has no bfloat16), sentence-transformers loaded in {lc_dtype}"
                     if b.fair else ""))
    pad_line = (f"padding in latechunk's forward batches (late, one strategy): {padding:.2%} of {enc.stats['padded_tokens']:,} "
                f"padded tokens ({through:,} real)")
    attn = getattr(enc, "attention", "-")
    raw_tokens = sum(len(r) for r in b.rows)
    work_line = (f"tokens through the model (late, one strategy): {through:,} = {through / corpus_tokens:.4f}x the corpus's "
                 f"{corpus_tokens:,} tokens (raw forward: {raw_tokens:,}; frames of extra windows and a last window "
                 f"pushed back to be full); attention implementation {attn}")
    return {"machine": machine, "versions": versions, "setup": setup, "dtypes": dtype_line, "padding": pad_line,
            "work": work_line}


def _target_lines(b: _Bench, med: dict[str, float], raw_key: str) -> list[str]:
    """:func:`targets`, and the lines of ``--stock-linear`` and ``--compile`` where their rows ran."""
    target_lines = targets(med, raw_key, b.lc_dtype)
    if "latechunk late stock linear" in med and "latechunk late" in med:
        target_lines.append(f"oneDNN linear: latechunk late {med['latechunk late stock linear'] / med['latechunk late']:.2f}x "
                            "itself with PyTorch's stock linear (BLAS addmm)")
    if b.compile_s is not None and "latechunk late compiled" in med:
        target_lines.append(f"torch.compile: warm-up pass (compiling each batch shape) {b.compile_s:.1f} s, then "
                            f"{med['latechunk late'] / med['latechunk late compiled']:.2f}x latechunk late (eager), "
                            + (f"{med[CHONKIE] / med['latechunk late compiled']:.2f}x chonkie" if CHONKIE in med
                               else "chonkie not run")
                            + ("" if b.encoders["compiled"].compiled else
                               " (the compile FAILED, see the warning: the row ran eager)"))
    return target_lines


def _write(args: argparse.Namespace, cmd: str, facts: dict[str, str], table: str, legend: str,
           target_lines: list[str]) -> None:
    """The markdown report at ``args.out`` (folders made)."""
    args.out.parent.mkdir(parents=True, exist_ok=True)
    body = [f"# latechunk beside its peers ({time.strftime('%Y-%m-%d')})", "", f"Command: `{cmd}`", "",
            f"- machine: {facts['machine']}", f"- versions: {facts['versions']}", f"- setup: {facts['setup']}",
            f"- {facts['dtypes']}", f"- {facts['padding']}", f"- {facts['work']}"]
    if args.note:
        body.append(f"- note: {args.note}")
    args.out.write_text("\n".join(body + ["", table, "", legend, "", "Targets (issue 15, CPU):", "",
                                            *(f"- {t}" for t in target_lines), ""]), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the bench (see the module docstring), print the report and write ``--out``.

    Returns:
        ``median_s`` (system -> seconds), ``dtypes`` (system -> dtype column), ``dtype`` (latechunk's),
        ``corpus_tokens``, ``padding`` (fraction), ``best_batch_size``, ``batch_tokens``, ``model_tokens``,
        ``targets`` (lines).
    """
    args, budgets = _parse(argv)
    sentence_transformer = _sentence_transformer_class(args.skip)
    b = _load(args, budgets)
    _add_encoders(b)
    p = _peers(b, sentence_transformer)
    raw_key = _raw_name(b, b.lc_dtype)
    systems, dtypes = _systems(b, p)
    med = _medians(systems, args.rounds)
    padding, through = _forward_counts(b)

    table = _table(med, dtypes, raw_key, b.corpus_tokens, args.rounds)
    legend = (f"vs raw: against `{raw_key}` (the raw forward in latechunk's dtype, {b.lc_dtype}); vs chonkie: against "
              f"`{CHONKIE}` at its default ({p.dtype}); ratios > 1 are faster. The raw rows run `model(...)` as a user "
              f"calls it (PyTorch's stock linear" + (", while latechunk runs its oneDNN linear" if b.enc.onednn_linear
                                                   else "") + ").")
    cmd = "python3 scripts/bench_peers.py " + " ".join(sys.argv[1:] if argv is None else argv)
    facts = _facts(b, p, padding, through)
    target_lines = _target_lines(b, med, raw_key)
    report = "\n".join([*(f"{k}: {facts[k]}" for k in ("machine", "versions", "setup")), facts["dtypes"],
                        facts["padding"], facts["work"], "", table, "", legend, "", *target_lines])
    print(report)
    if args.out:
        _write(args, cmd, facts, table, legend, target_lines)
        print(f"written: {args.out}")
    return {"median_s": med, "dtypes": dtypes, "dtype": b.lc_dtype, "corpus_tokens": b.corpus_tokens,
            "padding": padding, "best_batch_size": b.best_bs, "batch_tokens": b.enc.batch_tokens,
            "model_tokens": through, "targets": target_lines}


if __name__ == "__main__":
    main()
