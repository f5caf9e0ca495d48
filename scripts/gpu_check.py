#!/usr/bin/env python3
"""One-GPU check for issue 4: GPU tests, kernel bandwidth, encoder and pipeline throughput, GPU FAISS.

Usage::

    python scripts/gpu_check.py            # on one CUDA GPU (H200: well under 8 minutes)
    python scripts/gpu_check.py --dry-run  # every step at tiny sizes on the CPU, Triton interpreted (< 1 min)
    python scripts/gpu_check.py --pytest-junit gpu_tests.xml  # report a `pytest -m gpu` run made already

Steps, each timed and isolated (a failing step is reported as ``FAIL: ...`` and the others still run):

1. ``pytest -m gpu`` (the CUDA-only tests), or the result of a run given with ``--pytest-junit``.
2. ``latechunk.kernels.segment_mean`` bandwidth in GB/s (bytes from ``segment_mean_bytes``: span rows read, means
   written) beside a device-to-device copy of the same states measured in the same run (bytes = read +
   write), and their ratio; packed, normalised and per-document (``cu_seqlens``) launches, fp32 and bf16, a
   small launch-config sweep, and the torch reference ``segment_mean_ref`` for scale. Each kernel result is
   checked against the reference.
3. Encoder tokens/s of raw ``model(input_ids, attention_mask)`` forwards for random-weight models built from
   configs: ModernBERT-base size (``ModernBertConfig`` defaults) and BERT-small size (4 layers, 512 hidden),
   both with ``max_position_embeddings=8192``, bf16.
4. Pipeline tokens/s (``latechunk.pipeline``): late mode with one and with five strategies (one forward pass
   serves all five) and naive mode, on synthetic markdown documents, ModernBERT-base-size random weights.
5. GPU FAISS flat inner-product index: build (add) and search throughput, or ``n/a`` without GPU faiss.

The summary table is printed last; the exit status is 1 when any step failed, else 0.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLE_TITLE = "gpu_check summary"


@dataclass(frozen=True)
class Sizes:
    """Problem sizes of one run (full on the GPU, tiny for ``--dry-run``)."""

    kernel_tokens: int
    kernel_dim: int
    span_len: int
    short_span_len: int
    doc_tokens: int  # per document, for the cu_seqlens launch
    bench_iters: int
    sweep: bool
    fwd_shapes: tuple[tuple[int, int], ...]  # (batch, seq_len) for raw forwards
    fwd_iters: int
    tiny_models: bool
    pipeline_docs: int
    pipeline_doc_words: int
    faiss_n: int
    faiss_nq: int
    faiss_dim: int
    pytest_paths: tuple[str, ...]


FULL = Sizes(
    kernel_tokens=1 << 20,
    kernel_dim=1024,
    span_len=256,
    short_span_len=32,
    doc_tokens=8192,
    bench_iters=20,
    sweep=True,
    fwd_shapes=((64, 512), (4, 8192)),
    fwd_iters=5,
    tiny_models=False,
    pipeline_docs=160,  # ~620k tokens: three pipeline groups, so tokenization overlaps the forward as in a real run
    pipeline_doc_words=3000,
    faiss_n=1_000_000,
    faiss_nq=10_000,
    faiss_dim=768,
    pytest_paths=("tests",),
)
DRY = Sizes(
    kernel_tokens=512,
    kernel_dim=96,
    span_len=64,
    short_span_len=16,
    doc_tokens=128,
    bench_iters=1,
    sweep=False,
    fwd_shapes=((2, 64),),
    fwd_iters=1,
    tiny_models=True,
    pipeline_docs=2,
    pipeline_doc_words=120,
    faiss_n=2000,
    faiss_nq=50,
    faiss_dim=32,
    pytest_paths=("tests/test_kernels.py",),
)


def _gbs(x: float) -> str:
    """GB/s with three significant digits (dry runs move kilobytes)."""
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


class Report:
    """Rows of the summary table: ``(step, result, seconds)``; a result starting with FAIL marks a failure."""

    def __init__(self) -> None:
        """Start with no rows."""
        self.rows: list[tuple[str, str, float]] = []
        #: measured ratios the issue's targets are judged on (see :func:`add_targets`)
        self.ratios: dict[str, float] = {}

    def add(self, step: str, result: str, seconds: float = float("nan")) -> None:
        """Record a row and echo it at once (the table comes at the end)."""
        self.rows.append((step, result, seconds))
        print(f"[gpu_check] {step}: {result}", flush=True)

    @property
    def failed(self) -> bool:
        """True when any row's result starts with FAIL."""
        return any(r.startswith("FAIL") for _, r, _ in self.rows)

    def table(self, header: str) -> str:
        """The summary table: title with ``header``, one row per step, then ``== OK ==`` or ``== FAILED ==``."""
        w = max(len(s) for s, _, _ in self.rows) if self.rows else 10
        lines = [f"== {TABLE_TITLE} ({header}) ==", f"{'step'.ljust(w)} | {'time_s':>7} | result"]
        lines.append(f"{'-' * w}-+-{'-' * 7}-+-{'-' * 40}")
        for step, result, sec in self.rows:
            t = "" if math.isnan(sec) else f"{sec:7.1f}"  # NaN: the step has no time of its own
            lines.append(f"{step.ljust(w)} | {t:>7} | {result}")
        lines.append(f"== {'FAILED' if self.failed else 'OK'} ==")
        return "\n".join(lines)


def _step(report: Report, name: str):
    """Decorator-free context: run ``fn`` and record a FAIL row (with the error) if it raises."""

    class _Ctx:
        def __enter__(self):
            self.t0 = time.perf_counter()
            return self

        def __exit__(self, exc_type, exc, tb):
            if isinstance(exc, Exception):
                msg = f"{type(exc).__name__}: {exc}".replace("\n", " ")[:300]
                report.add(name, f"FAIL: {msg}", time.perf_counter() - self.t0)
                import traceback

                traceback.print_exception(exc_type, exc, tb)
                return True  # keep going with the next step
            return False

    return _Ctx()


# ------------------------------------------------------------------------------------------------ timing


def _sync(device) -> None:
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def bench(fn, device, iters: int, warmup: int = 2) -> float:
    """Median seconds per call of ``fn`` (CUDA events on the GPU, wall clock on the CPU)."""
    import torch

    for _ in range(warmup):
        fn()
    _sync(device)
    times = []
    for _ in range(max(iters, 1)):
        if torch.device(device).type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


# ------------------------------------------------------------------------------------------------ 1. tests


def _junit_summary(path: Path) -> tuple[str, bool]:
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    tot = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    passed = tot["tests"] - tot["failures"] - tot["errors"] - tot["skipped"]
    ok = tot["failures"] == 0 and tot["errors"] == 0
    return f"{passed} passed, {tot['failures']} failed, {tot['errors']} errors, {tot['skipped']} skipped", ok


def step_gpu_tests(report: Report, sizes: Sizes, junit: str | None) -> None:
    """Report ``pytest -m gpu``: from a given junit XML, else by running it here."""
    name = "gpu tests (pytest -m gpu)"
    with _step(report, name):
        t0 = time.perf_counter()
        if junit:
            summary, ok = _junit_summary(Path(junit))
        else:
            with tempfile.TemporaryDirectory() as tmp:
                xml = Path(tmp) / "gpu_tests.xml"
                cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider",
                       f"--junitxml={xml}", *sizes.pytest_paths]  # fmt: skip
                proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False, timeout=300)
                print(proc.stdout[-3000:], proc.stderr[-2000:], sep="\n", flush=True)
                if proc.returncode not in (0, 1, 5) or not xml.exists():  # 1: failures (in the XML), 5: none
                    raise RuntimeError(
                        f"pytest exit {proc.returncode}: {proc.stdout.strip().splitlines()[-1:]}"
                    )
                summary, ok = _junit_summary(xml)
        report.add(name, summary if ok else f"FAIL: {summary}", time.perf_counter() - t0)


# ------------------------------------------------------------------------------------------------ 2. kernel


def _tiled_spans(n_tokens: int, span_len: int):
    import torch

    starts = torch.arange(0, n_tokens, span_len)
    return torch.stack([starts, (starts + span_len).clamp(max=n_tokens)], 1).to(torch.int32)


def step_kernel(report: Report, sizes: Sizes, device: str) -> None:
    """Kernel GB/s beside a device-to-device copy GB/s of the same states, same run."""
    import torch

    from latechunk.kernels import segment_mean as km
    from latechunk.pooling import segment_mean_ref

    n, dim = sizes.kernel_tokens, sizes.kernel_dim
    t_step = time.perf_counter()
    copy_gbs = None
    with _step(report, "d2d copy (same states, bf16)"):
        states = torch.randn(n, dim, device=device, dtype=torch.bfloat16)
        dst = torch.empty_like(states)
        sec = bench(lambda: dst.copy_(states), device, sizes.bench_iters)
        copy_gbs = 2 * states.numel() * states.element_size() / sec / 1e9
        report.add(
            f"d2d copy {n}x{dim} bf16",
            f"{_gbs(copy_gbs)} GB/s (read+write {2 * states.nbytes / 1e9:.3g} GB)",
            sec,
        )
    if copy_gbs is None:
        return

    def one(label, x, spans, normalize=False, cu_seqlens=None, cu_chunks=None, config=None):
        with _step(report, f"kernel {label}"):

            def fn():
                return km.segment_mean(x, spans, normalize, cu_seqlens, cu_chunks, config=config)

            out = fn()
            ref = segment_mean_ref(x, spans, normalize, cu_seqlens, cu_chunks)
            err = float((out - ref).abs().max()) if out.numel() else 0.0
            if not err <= 1e-3:
                raise AssertionError(f"kernel differs from segment_mean_ref by {err:.3g}")
            sec = bench(fn, device, sizes.bench_iters)
            gbs = km.segment_mean_bytes(x, spans, cu_seqlens) / sec / 1e9
            report.add(
                f"kernel {label}",
                f"{_gbs(gbs)} GB/s = {gbs / copy_gbs:.2f} x copy ({len(spans)} spans, max|err| {err:.1e})",
                sec,
            )
            return gbs

    spans = _tiled_spans(n, sizes.span_len).to(device)
    short = _tiled_spans(n, sizes.short_span_len).to(device)
    gbs = one(f"bf16 {n}x{dim} spans={sizes.span_len}", states, spans)
    if gbs is not None:
        report.ratios["kernel"] = gbs / copy_gbs
    one(f"bf16 {n}x{dim} spans={sizes.span_len} normalize", states, spans, normalize=True)
    one(f"bf16 {n}x{dim} spans={sizes.short_span_len}", states, short)
    # per-document: documents of doc_tokens, spans relative to each document
    n_docs = n // sizes.doc_tokens
    doc_spans = _tiled_spans(sizes.doc_tokens, sizes.span_len).to(device)
    per_doc = doc_spans.repeat(n_docs, 1)
    cu_seqlens = torch.arange(0, n_docs + 1, device=device, dtype=torch.int32) * sizes.doc_tokens
    cu_chunks = torch.arange(0, n_docs + 1, device=device, dtype=torch.int32) * len(doc_spans)
    x_docs = states[: n_docs * sizes.doc_tokens]
    one(f"bf16 cu_seqlens {n_docs} docs", x_docs, per_doc, True, cu_seqlens, cu_chunks)
    states32 = states.float()
    one(f"fp32 {n}x{dim} spans={sizes.span_len}", states32, spans)
    with _step(report, "torch reference"):
        sec = bench(lambda: segment_mean_ref(states, spans), device, max(1, sizes.bench_iters // 4))
        gbs = km.segment_mean_bytes(states, spans) / sec / 1e9
        report.add(
            f"torch ref bf16 spans={sizes.span_len}",
            f"{_gbs(gbs)} GB/s-equivalent = {gbs / copy_gbs:.2f} x copy",
            sec,
        )
    if sizes.sweep:
        with _step(report, "kernel config sweep"):
            best = None
            for block_d in (128, 256, 512):
                for block_t in (8, 16, 32):
                    for warps in (4, 8):
                        cfg = {"BLOCK_T": block_t, "BLOCK_D": block_d, "num_warps": warps}

                        def fn(cfg=cfg):
                            return km.segment_mean(states, spans, config=cfg)

                        sec = bench(fn, device, max(3, sizes.bench_iters // 4))
                        gbs = km.segment_mean_bytes(states, spans) / sec / 1e9
                        print(f"[gpu_check] sweep {cfg}: {gbs:.0f} GB/s", flush=True)
                        if best is None or gbs > best[0]:
                            best = (gbs, cfg)
            default = km.launch_config(dim, False, 2)
            report.ratios["kernel sweep best"] = best[0] / copy_gbs
            report.add(
                "kernel sweep best (bf16 spans=256)",
                f"{_gbs(best[0])} GB/s = {best[0] / copy_gbs:.2f} x copy with {best[1]} (default {default})",
            )
    report.rows.append(("kernel step total", "", time.perf_counter() - t_step))


# ------------------------------------------------------------------------------------------------ 3. encoder


def _model_configs(tiny: bool) -> dict:
    from transformers import BertConfig, ModernBertConfig

    special = {
        "pad_token_id": 0,
        "cls_token_id": 101,
        "sep_token_id": 102,
        "bos_token_id": 101,
        "eos_token_id": 102,
    }
    if tiny:
        mb = ModernBertConfig(
            vocab_size=30522, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=8192, local_attention=64, global_attn_every_n_layers=2, **special,
        )  # fmt: skip
        bert = BertConfig(
            vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            max_position_embeddings=8192,
        )  # fmt: skip
    else:
        # ModernBERT-base: the config defaults (22 layers, 768 hidden, 1152 intermediate, 12 heads)
        mb = ModernBertConfig(vocab_size=30522, max_position_embeddings=8192, **special)
        # BERT-small (Turc et al. 2019: L=4, H=512)
        bert = BertConfig(
            vocab_size=30522, hidden_size=512, num_hidden_layers=4, num_attention_heads=8, intermediate_size=2048,
            max_position_embeddings=8192,
        )  # fmt: skip
    return {"modernbert-base": mb, "bert-small": bert}


def build_model(cfg, device: str, dtype):
    """A random-weight model from ``cfg``, built on ``device`` in ``dtype``, sdpa attention where possible."""
    import torch
    from transformers import AutoModel

    torch.manual_seed(0)
    with torch.device(device):
        try:
            model = AutoModel.from_config(cfg, attn_implementation="sdpa", dtype=dtype)
        except (ValueError, ImportError, TypeError):
            model = AutoModel.from_config(cfg).to(dtype)
    return model.eval()


def step_encoder(report: Report, sizes: Sizes, device: str) -> None:
    """Raw ``model(...)`` forward tokens/s, random weights, every (batch, seq_len) of ``sizes.fwd_shapes``."""
    import torch

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    for name, cfg in _model_configs(sizes.tiny_models).items():
        with _step(report, f"encoder {name}"):
            model = build_model(cfg, device, dtype)
            attn = getattr(model.config, "_attn_implementation", "?")
            for batch, seq in sizes.fwd_shapes:
                ids = torch.randint(1000, 30000, (batch, seq), device=device)
                mask = torch.ones_like(ids)

                def fwd(model=model, ids=ids, mask=mask):
                    with torch.inference_mode():
                        return model(input_ids=ids, attention_mask=mask).last_hidden_state

                sec = bench(fwd, device, sizes.fwd_iters, warmup=1)
                report.add(
                    f"encoder {name} fwd {batch}x{seq}",
                    f"{batch * seq / sec:,.0f} tokens/s ({str(dtype).replace('torch.', '')}, {attn})",
                    sec,
                )


# ------------------------------------------------------------------------------------------------ 4. pipeline

_TEXT = (
    "the model reads a document once and every chunk vector is the mean of token states inside its span "
    "boundaries change only the pooling never the encoding naive chunking encodes each chunk on its own and "
    "loses the context of the rest late chunking keeps it retrieval quality depends on where facts end "
    "paragraphs sections sentences tables lists code examples results methods data evaluation recall precision "
    "index query answer score river mountain city history science music energy market protein galaxy"
)
_WORDS = tuple(_TEXT.split())


def synthetic_documents(n_docs: int, n_words: int, seed: int = 0):
    """Markdown documents with headings, paragraphs and sentences (deterministic)."""
    import random

    from latechunk.types import Document

    rng = random.Random(seed)
    docs = []
    for d in range(n_docs):
        parts, words = [], 0
        section = 0
        while words < n_words:
            section += 1
            parts.append(f"{'#' * rng.randint(1, 3)} Section {section}\n")
            for _ in range(rng.randint(2, 5)):
                sentences = []
                for _ in range(rng.randint(3, 8)):
                    k = rng.randint(6, 20)
                    sentences.append(" ".join(rng.choice(_WORDS) for _ in range(k)).capitalize() + ".")
                    words += k
                parts.append(" ".join(sentences) + "\n")
        docs.append(Document(f"doc{d}", "\n".join(parts)))
    return docs


def step_pipeline(report: Report, sizes: Sizes, device: str) -> None:
    """Late (one and five strategies) and naive pipeline tokens/s, ModernBERT-base-size random weights."""
    import copy

    import torch

    from latechunk.config import PipelineConfig
    from latechunk.encoder import Encoder
    from latechunk.models import LoadedModel, ModelSettings, resolve_model_path
    from latechunk.pipeline import embed
    from latechunk.sentences import SentenceSegmenter, default_workers

    def run(docs, strategies, encoder, mode, sentences=None):
        return embed(docs, encoder, PipelineConfig(strategies, modes=(mode,)), segmenter=sentences)

    workers = default_workers()  # as the CLI does: one sentence worker per core less one
    segmenters = {n: SentenceSegmenter(n) for n in {workers, 0}}  # one per worker count, for every row
    names = ("pipeline late x1 (fixed)", f"pipeline late x5 strategies (sentence workers: {workers})",
             "pipeline naive x1 (fixed)", "pipeline late x5 strategies (sentence workers off)")

    docs = None
    with _step(report, "pipeline setup"):
        from transformers import AutoTokenizer

        # the bundled model's uncased BERT vocabulary; $LATECHUNK_TOKENIZER_DIR holds its tokenizer files where
        # the model package is not installed (scripts/gpu_carry.sh)
        tok_dir = os.environ.get("LATECHUNK_TOKENIZER_DIR") or resolve_model_path(None)
        tok = copy.deepcopy(AutoTokenizer.from_pretrained(tok_dir))
        tok.model_max_length = 8192
        cfg = _model_configs(sizes.tiny_models)["modernbert-base"]
        dtype = torch.bfloat16 if device == "cuda" else torch.float32
        model = build_model(cfg, device, dtype)
        loaded = LoadedModel("modernbert-base-random", model, tok, ModelSettings(pooling="mean", normalize=True))
        encoder = Encoder(loaded, device=device, dtype=str(dtype).replace("torch.", ""), batch_tokens=1 << 16)
        docs = synthetic_documents(sizes.pipeline_docs, sizes.pipeline_doc_words)
        # warm up: kernel compile, cuDNN/cuBLAS heuristics, and the five strategies' one-time set-up (pysbd's rule
        # tables, the markdown parser), so that neither five-strategy row pays it
        run(docs[:1], ["fixed", "recursive", "heading", "sentence_window", "semantic"], encoder, "late")
        run(docs[:1], ["fixed"], encoder, "naive")
        if workers > 1:
            segmenters[workers].start()  # start the sentence workers (once per run)
    if docs is None:
        return
    five = ["fixed", "recursive", "heading", "sentence_window", "semantic"]
    seconds: dict[str, float] = {}
    late_encoded = 0
    for name, strategies, mode, n_workers in zip(
        names, (["fixed"], five, ["fixed"], five), ("late", "late", "naive", "late"), (workers, workers, workers, 0),
        strict=True,
    ):
        sentences = segmenters[n_workers]
        sentences.clear_cache()
        with _step(report, name):
            _sync(device)
            t0 = time.perf_counter()
            res = run(docs, strategies, encoder, mode, sentences)
            _sync(device)
            sec = time.perf_counter() - t0
            tokens = res.stats.content_tokens
            encoded = res.stats.tokens[mode]
            chunks = sum(r.n_chunks for r in res.runs.values())
            report.add(
                name,
                f"{tokens / sec:,.0f} doc tokens/s ({len(docs)} docs, {tokens} tokens, {encoded} encoded, "
                f"{chunks} chunks; embed(modes=...))",
                sec,
            )
            seconds[name] = sec
            if mode == "late" and name == names[0]:
                late_encoded = encoded
    for sentences in segmenters.values():
        sentences.close()
    with _step(report, "raw model(...) on the same inputs"):
        rows = [r for d in docs for r in encoder.model_inputs(encoder.tokenizer(d))[0]]
        assert sum(len(r) for r in rows) == late_encoded, "raw inputs differ from what the pipeline encoded"
        sec = raw_forward(encoder, rows, device)
        report.add("raw model(...) on the same inputs",
                   f"{late_encoded / sec:,.0f} tokens/s ({len(rows)} inputs, length-sorted, "
                   f"{encoder.batch_tokens} padded tokens per batch)", sec)
        if names[0] in seconds:
            report.ratios["late/raw"] = sec / seconds[names[0]]
    if names[0] in seconds and names[1] in seconds:
        report.ratios["x5/x1"] = seconds[names[1]] / seconds[names[0]]


def raw_forward(encoder, rows, device: str) -> float:
    """Seconds for ``encoder.model(...)`` alone over ``rows`` (int token id arrays), length-sorted, in padded
    batches of at most ``encoder.batch_tokens`` tokens: the baseline the late pipeline is judged against."""
    import torch

    rows = sorted(rows, key=len, reverse=True)
    batches, i = [], 0
    while i < len(rows):
        n = max(1, encoder.batch_tokens // len(rows[i]))
        batches.append(rows[i : i + n])
        i += n
    _sync(device)
    t0 = time.perf_counter()
    with torch.inference_mode():
        for batch in batches:
            ids = torch.zeros((len(batch), len(batch[0])), dtype=torch.int64)
            mask = torch.zeros_like(ids)
            for j, r in enumerate(batch):
                ids[j, : len(r)] = torch.tensor(r)
                mask[j, : len(r)] = 1
            out = encoder.model(input_ids=ids.to(device), attention_mask=mask.to(device)).last_hidden_state
            del out
    _sync(device)
    return time.perf_counter() - t0


def add_targets(report: Report, dry_run: bool, skipped: list[str]) -> None:
    """One row per issue-4 target of the steps that ran, judged on this run's ratios (not in a dry run)."""
    targets = (
        ("kernel", "kernel", "kernel bf16 GB/s / d2d copy GB/s", 0.80, ">="),
        ("pipeline", "late/raw", "late pipeline x1 / raw model(...) tokens/s", 0.95, ">="),
        ("pipeline", "x5/x1", "five strategies / one strategy, seconds", 1.20, "<="),
    )
    for step, key, what, bound, op in targets:
        if step in skipped:
            continue
        value = report.ratios.get(key)
        if value is None:
            verdict = "n/a (step did not run)"
        else:
            met = value >= bound if op == ">=" else value <= bound
            verdict = f"{value:.3f} ({'not judged: dry run' if dry_run else 'met' if met else 'NOT met'})"
        report.add(f"target {what} {op} {bound:.2f}", verdict)


# ------------------------------------------------------------------------------------------------ 5. faiss


def step_faiss(report: Report, sizes: Sizes, dry_run: bool) -> None:
    """GPU flat inner-product index: add and search throughput (n/a without GPU faiss)."""
    name = "faiss gpu flat IP"
    with _step(report, name):
        import numpy as np

        try:
            import faiss
        except ImportError:
            report.add(name, "n/a (faiss not installed)")
            return
        has_gpu = hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0
        if not has_gpu and not dry_run:
            report.add(name, f"n/a (faiss {faiss.__version__} has no GPU support or sees no GPU)")
            return
        rng = np.random.default_rng(0)
        xb = rng.standard_normal((sizes.faiss_n, sizes.faiss_dim), dtype=np.float32)
        xq = rng.standard_normal((sizes.faiss_nq, sizes.faiss_dim), dtype=np.float32)
        faiss.normalize_L2(xb)
        faiss.normalize_L2(xq)
        t0 = time.perf_counter()
        index = faiss.IndexFlatIP(sizes.faiss_dim)
        if has_gpu:
            res = faiss.StandardGpuResources()
            index = faiss.index_cpu_to_gpu(res, 0, index)
        index.add(xb)
        t_build = time.perf_counter() - t0
        t0 = time.perf_counter()
        _, ids = index.search(xq, 10)
        t_search = time.perf_counter() - t0
        if not (ids[:, 0] >= 0).all():
            raise AssertionError("search returned missing neighbours")
        result = (
            f"build {sizes.faiss_n / t_build:,.0f} vec/s, search {sizes.faiss_nq / t_search:,.0f} q/s "
            f"(n={sizes.faiss_n}, d={sizes.faiss_dim}, k=10)"
        )
        if not has_gpu:
            result = f"n/a (faiss {faiss.__version__} without GPU support); cpu dry-run {result}"
        report.add(name, result, t_build + t_search)


# ------------------------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    """Run every step and print the summary table last; return 1 if any step failed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes on the CPU, Triton interpreted")
    parser.add_argument(
        "--pytest-junit", help="junit XML of a `pytest -m gpu` run made already (gpu_check.sh)"
    )
    parser.add_argument(
        "--skip", nargs="*", default=[], choices=["tests", "kernel", "encoder", "pipeline", "faiss"]
    )
    args = parser.parse_args(argv)

    if args.dry_run:
        # before torch/triton are imported: no CUDA, kernel in the Triton interpreter
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
        os.environ["TRITON_INTERPRET"] = "1"
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    sys.path.insert(0, str(ROOT))
    import torch

    sizes = DRY if args.dry_run else FULL
    if not args.dry_run and not torch.cuda.is_available():
        print("gpu_check: no CUDA device; run with --dry-run on a CPU machine", file=sys.stderr)
        return 2
    device = "cpu" if args.dry_run else "cuda"
    name = "CPU (dry run)" if args.dry_run else torch.cuda.get_device_name(0)
    t_all = time.perf_counter()
    report = Report()
    steps = {
        "tests": lambda: step_gpu_tests(report, sizes, args.pytest_junit),
        "kernel": lambda: step_kernel(report, sizes, device),
        "encoder": lambda: step_encoder(report, sizes, device),
        "pipeline": lambda: step_pipeline(report, sizes, device),
        "faiss": lambda: step_faiss(report, sizes, args.dry_run),
    }
    for step, run in steps.items():
        if step in args.skip:
            continue
        run()  # a step's tensors are its locals: freed when it returns
        if device == "cuda":
            torch.cuda.empty_cache()
    add_targets(report, args.dry_run, args.skip)
    import importlib.metadata

    import transformers

    try:  # the header names triton's version; a CPU dry run with steps skipped may run without it
        triton_version = importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        triton_version = "absent"
    header = (
        f"{name}; torch {torch.__version__}, triton {triton_version}, transformers {transformers.__version__}; "
        f"dry-run: {'yes' if args.dry_run else 'no'}; total {time.perf_counter() - t_all:.0f} s"
    )
    print("\n" + report.table(header), flush=True)
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
