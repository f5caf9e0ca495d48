"""Tests for kernels/segment_mean.py against the torch reference.

Without CUDA the kernel runs in the Triton interpreter on CPU tensors: ``TRITON_INTERPRET=1`` is set here,
before the kernel module is imported (``triton.jit`` chooses the interpreter at decoration time). With CUDA the
same tests run compiled on the GPU; ``@pytest.mark.gpu`` tests are CUDA-only (``pytest -m gpu``).

Numerics rule (flash-attn ``test_layer_norm.py``): ``|new - ref_fp64| <= 2 * |ref_native - ref_fp64| + atol``,
where ``ref_fp64`` is the mean in float64 of the same inputs and ``ref_native`` is torch's own mean computed
in the input dtype.
"""

from __future__ import annotations

import importlib
import os

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

if not torch.cuda.is_available():  # collection-time check only; no device is touched at import
    os.environ.setdefault("TRITON_INTERPRET", "1")

pytest.importorskip("triton")

import latechunk.kernels.segment_mean as segment_mean_module
from latechunk.kernels.reference import segment_mean_ref

if not torch.cuda.is_available() and not segment_mean_module._INTERPRETED:
    # imported earlier in this process without the interpreter: decorate again now that the variable is set
    segment_mean_module = importlib.reload(segment_mean_module)

segment_mean = segment_mean_module.segment_mean
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

gpu = pytest.mark.gpu
SLOW_IN_INTERPRETER = pytest.mark.slow if not torch.cuda.is_available() else (lambda f: f)
requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

DTYPES = pytest.mark.parametrize(
    "dtype, atol",
    [(torch.float32, 1e-5), (torch.bfloat16, 1e-5), (torch.float16, 1e-5)],
    ids=["fp32", "bf16", "fp16"],
)


@pytest.fixture(autouse=True)
def seed():
    """Seed every RNG this file uses."""
    torch.manual_seed(0)
    np.random.seed(0)


# ------------------------------------------------------------------------------------------------ helpers


def mean_fp64(states: torch.Tensor, spans: torch.Tensor, normalize: bool) -> torch.Tensor:
    """(n_spans, dim) float64: the mean of each packed span of ``states`` in float64, one span at a time."""
    x = states.double()
    out = torch.stack([x[s:e].mean(0) for s, e in spans.tolist()]) if len(spans) else x[:0]
    return torch.nn.functional.normalize(out, dim=1) if normalize else out


def mean_native(states: torch.Tensor, spans: torch.Tensor, normalize: bool) -> torch.Tensor:
    """(n_spans, dim) in ``states.dtype``: torch's own mean (and normalisation) in the input dtype."""
    out = torch.stack([states[s:e].mean(0) for s, e in spans.tolist()])
    return torch.nn.functional.normalize(out, dim=1) if normalize else out


def assert_verbose_allclose(new, ref_fp64, ref_native, atol, max_print=5):
    """Assert ``|new - ref_fp64| <= 2 * |ref_native - ref_fp64| + atol`` elementwise; show the worst misses."""
    assert new.shape == ref_fp64.shape, f"shape {tuple(new.shape)} != reference {tuple(ref_fp64.shape)}"
    assert new.dtype == torch.float32, f"dtype {new.dtype}, expected torch.float32"
    new64, ref64, nat64 = (t.detach().cpu().double() for t in (new, ref_fp64, ref_native))
    err = (new64 - ref64).abs()
    bound = 2 * (nat64 - ref64).abs() + atol
    bad = ~(err <= bound)  # also catches NaN
    if bool(bad.any()):
        idx = torch.nonzero(bad)
        excess = (err - bound)[bad]
        order = torch.argsort(excess, descending=True)[:max_print]
        lines = [
            f"  [{int(idx[o, 0])}, {int(idx[o, 1])}]: new={float(new64[tuple(idx[o])]):.8g} "
            f"ref_fp64={float(ref64[tuple(idx[o])]):.8g} ref_native={float(nat64[tuple(idx[o])]):.8g} "
            f"err={float(err[tuple(idx[o])]):.3g} bound={float(bound[tuple(idx[o])]):.3g}"
            for o in order.tolist()
        ]
        raise AssertionError(
            f"{int(bad.sum())} of {bad.numel()} elements exceed 2*|ref_native - ref_fp64| + {atol} "
            f"(max err {float(err.max()):.3g}); worst:\n" + "\n".join(lines)
        )


def random_spans(n_tokens: int, n_spans: int, max_len: int) -> torch.Tensor:
    """(n_spans, 2) int32 random non-empty half-open spans inside ``[0, n_tokens)``."""
    lens = torch.randint(1, max_len + 1, (n_spans,)).clamp(max=n_tokens)
    starts = (torch.rand(n_spans) * (n_tokens - lens + 1).double()).long()
    return torch.stack([starts, starts + lens], 1).to(torch.int32)


def check_against_refs(states, spans, normalize, atol, **offsets):
    """Run the kernel and check it against the float64 rule and against ``segment_mean_ref``."""
    new = segment_mean(states, spans, normalize, **offsets)
    packed = spans.to(torch.int64).cpu()
    if offsets:
        cu, cc = offsets["cu_seqlens"].cpu().long(), offsets["cu_chunks"].cpu().long()
        doc = torch.repeat_interleave(torch.arange(len(cu) - 1), cc[1:] - cc[:-1])
        packed = packed + cu[doc].unsqueeze(1)
    cpu_states = states.cpu()
    assert_verbose_allclose(
        new, mean_fp64(cpu_states, packed, normalize), mean_native(cpu_states, packed, normalize), atol
    )
    ref = segment_mean_ref(states, spans, normalize, **offsets)
    torch.testing.assert_close(new, ref, atol=atol, rtol=1e-5)
    return new


# ------------------------------------------------------------------------------------------------ numerics


@DTYPES
@pytest.mark.parametrize("normalize", [False, True], ids=["mean", "normalized"])
def test_irregular_sizes_match_reference(dtype, atol, normalize):
    """1823 x 781 states (Triton tutorial sizes): the whole document, 1-token spans, the last token."""
    n_tokens, dim = 1823, 781
    states = torch.randn(n_tokens, dim, device=DEVICE).to(dtype)
    fixed = torch.tensor(
        [[0, n_tokens], [0, 1], [n_tokens - 1, n_tokens], [17, 18], [5, 700]], dtype=torch.int32
    )
    spans = torch.cat([fixed, random_spans(n_tokens, 11, 300)]).to(DEVICE)
    check_against_refs(states, spans, normalize, atol)


@SLOW_IN_INTERPRETER
def test_thousands_of_spans():
    """2000 short, overlapping spans of small rows in one launch (row i is span i). The Triton interpreter runs
    the 2000 programs one by one (about half a minute on 2 CPU cores), so on CPU it runs with ``-m slow``; the
    default run covers many spans in one launch with test_random_spans_property and the irregular sizes."""
    n_tokens, dim = 3001, 24
    states = torch.randn(n_tokens, dim, device=DEVICE).to(torch.bfloat16)
    spans = random_spans(n_tokens, 2000, 12).to(DEVICE)
    new = check_against_refs(states, spans, True, 1e-5)
    assert new.shape == (2000, dim)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("normalize", [False, True], ids=["mean", "normalized"])
def test_cu_seqlens_mode(dtype, normalize):
    """Per-document spans, relative to each document; one document has no tokens and no spans."""
    doc_lens = [70, 0, 130, 45]
    dim = 300
    states = torch.randn(sum(doc_lens), dim, device=DEVICE).to(dtype)
    cu_seqlens = torch.tensor(np.cumsum([0, *doc_lens]), dtype=torch.int32, device=DEVICE)
    per_doc = [
        torch.tensor([[0, 70], [0, 1], [69, 70], [10, 40]]),
        torch.zeros((0, 2), dtype=torch.int64),
        torch.tensor([[0, 130], [129, 130], [3, 90]]),
        torch.tensor([[0, 45], [44, 45]]),
    ]
    spans = torch.cat(per_doc).to(torch.int32).to(DEVICE)
    cu_chunks = torch.tensor(np.cumsum([0, *[len(s) for s in per_doc]]), dtype=torch.int32, device=DEVICE)
    new = check_against_refs(states, spans, normalize, 1e-5, cu_seqlens=cu_seqlens, cu_chunks=cu_chunks)
    # same vectors as the packed call with the offsets added by hand
    offset = torch.repeat_interleave(cu_seqlens[:-1], cu_chunks[1:] - cu_chunks[:-1]).unsqueeze(1)
    torch.testing.assert_close(new, segment_mean(states, spans + offset, normalize), atol=0, rtol=0)


@pytest.mark.parametrize("normalize", [False, True], ids=["mean", "normalized"])
@pytest.mark.parametrize(
    "config",
    [
        {"BLOCK_T": 2, "BLOCK_D": 32, "num_warps": 1},
        {"BLOCK_T": 4, "BLOCK_D": 64, "num_warps": 2},
        {"BLOCK_T": 32, "BLOCK_D": 128, "num_warps": 4},
    ],
    ids=["T2xD32", "T4xD64", "T32xD128"],
)
def test_launch_configs_agree(config, normalize):
    """Any tile shape gives the same vectors; normalised rows wider than BLOCK_D take the re-read path."""
    states = torch.randn(60, 300, device=DEVICE).to(torch.bfloat16)
    spans = torch.tensor([[0, 60], [7, 8], [10, 50], [59, 60]], dtype=torch.int32, device=DEVICE)
    new = segment_mean(states, spans, normalize, config=config)
    torch.testing.assert_close(new, segment_mean_ref(states, spans, normalize), atol=1e-5, rtol=1e-5)


def test_normalize_zero_row_gives_zeros():
    """A zero mean stays zero under normalisation (eps 1e-12, as torch.nn.functional.normalize), no NaN."""
    states = torch.zeros(10, 40, device=DEVICE)
    states[5:] = 1.0
    new = segment_mean(states, torch.tensor([[0, 5], [5, 10]], dtype=torch.int32, device=DEVICE), True)
    assert torch.equal(new[0].cpu(), torch.zeros(40))
    torch.testing.assert_close(new[1].cpu(), torch.full((40,), 40**-0.5))


def test_strided_states_and_other_span_types():
    """Row stride > dim (a column slice), column-strided states, int64 / numpy / list spans all work."""
    base = torch.randn(200, 512, device=DEVICE)
    sliced = base[:, 3:403]  # row stride 512, dim 400
    spans = torch.tensor([[0, 200], [10, 11], [50, 150]], device=DEVICE)
    ref = segment_mean_ref(sliced, spans)
    for states in (sliced, sliced.t().contiguous().t()):
        for token_spans in (spans, spans.cpu().numpy().astype(np.int32), spans.tolist()):
            torch.testing.assert_close(segment_mean(states, token_spans), ref, atol=1e-5, rtol=1e-5)


def test_inputs_not_mutated():
    """Pure function: states and spans are left as they were."""
    states = torch.randn(64, 100, device=DEVICE)
    spans = torch.tensor([[0, 64], [3, 9]], dtype=torch.int32, device=DEVICE)
    states_before, spans_before = states.clone(), spans.clone()
    segment_mean(states, spans, True)
    assert torch.equal(states, states_before) and torch.equal(spans, spans_before)


def test_zero_spans_give_empty_output():
    """No spans -> (0, dim) float32, in packed and per-document mode."""
    states = torch.randn(30, 781, device=DEVICE)
    out = segment_mean(states, torch.zeros((0, 2), dtype=torch.int32, device=DEVICE))
    assert out.shape == (0, 781) and out.dtype == torch.float32 and out.device == states.device
    cu = torch.tensor([0, 30], dtype=torch.int32)
    out = segment_mean(states, torch.zeros((0, 2), dtype=torch.int32), True, cu, torch.tensor([0, 0]))
    assert out.shape == (0, 781)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n_tokens=st.integers(1, 200),
    dim=st.integers(1, 300),
    n_spans=st.integers(0, 12),
    normalize=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.bfloat16, torch.float16]),
    data=st.data(),
)
def test_random_spans_property(n_tokens, dim, n_spans, normalize, dtype, data):
    """Any set of valid spans over any row width: kernel == reference (float64 rule), row i is span i."""
    starts = data.draw(st.lists(st.integers(0, n_tokens - 1), min_size=n_spans, max_size=n_spans))
    spans = [[s, data.draw(st.integers(s + 1, n_tokens))] for s in starts]
    states = torch.randn(n_tokens, dim, device=DEVICE).to(dtype)
    spans_t = torch.tensor(spans, dtype=torch.int32).reshape(-1, 2).to(DEVICE)
    if n_spans == 0:
        assert segment_mean(states, spans_t, normalize).shape == (0, dim)
    else:
        check_against_refs(states, spans_t, normalize, 1e-5)


def test_allclose_helper_reports_misses():
    """The rule's helper fails, naming the element, when the kernel is off by more than the bound."""
    ref = torch.zeros(3, 4, dtype=torch.float64)
    new = torch.zeros(3, 4)
    new[1, 2] = 1e-3
    with pytest.raises(AssertionError, match=r"(?s)1 of 12 elements.*\[1, 2\]"):
        assert_verbose_allclose(new, ref, ref.float(), atol=1e-5)
    new[1, 2] = float("nan")
    with pytest.raises(AssertionError, match="1 of 12"):
        assert_verbose_allclose(new, ref, ref.float(), atol=1e-5)


# ------------------------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "spans, match",
    [
        ([[3, 3]], "empty or outside"),
        ([[5, 2]], "empty or outside"),
        ([[-1, 2]], "empty or outside"),
        ([[0, 2], [10, 21]], "span 1"),
        ([[0, 1, 2]], r"shape \(n_spans, 2\)"),
    ],
    ids=["empty", "reversed", "negative", "past-end", "bad-shape"],
)
def test_invalid_packed_spans_raise(spans, match):
    """Every bad span is rejected up front with ValueError naming it."""
    states = torch.randn(20, 8, device=DEVICE)
    with pytest.raises(ValueError, match=match):
        segment_mean(states, torch.tensor(spans, dtype=torch.int32))


@pytest.mark.parametrize(
    "cu_seqlens, cu_chunks, spans, match",
    [
        ([0, 8, 20], [0, 1, 2], [[0, 8], [0, 13]], "document 1"),  # fits in states, not in its document
        ([0, 8, 20], [0, 1, 2], [[0, 9], [0, 2]], "document 0"),
        ([0, 8, 19], [0, 1, 2], [[0, 2], [0, 2]], "cu_seqlens must be non-decreasing"),
        ([0, 12, 8, 20], [0, 1, 1, 2], [[0, 2], [0, 2]], "cu_seqlens must be non-decreasing"),
        ([0, 8, 20], [0, 1, 3], [[0, 2], [0, 2]], "cu_chunks must be non-decreasing"),
        ([0, 8, 20], [0, 2], [[0, 2], [0, 2]], r"must both be \(n_docs \+ 1,\)"),
        ([0, 8, 20], None, [[0, 2], [0, 2]], "go together"),
    ],
    ids=[
        "outside-doc-1",
        "outside-doc-0",
        "seqlens-end",
        "seqlens-order",
        "chunks-end",
        "lengths",
        "missing",
    ],
)
def test_invalid_cu_seqlens_raise(cu_seqlens, cu_chunks, spans, match):
    """Per-document spans are checked against their own document; malformed offsets raise ValueError."""
    states = torch.randn(20, 8, device=DEVICE)
    with pytest.raises(ValueError, match=match):
        segment_mean(states, torch.tensor(spans), False, torch.tensor(cu_seqlens), cu_chunks)


@pytest.mark.parametrize("dtype", [torch.float64, torch.int32], ids=["fp64", "int32"])
def test_unsupported_dtype_raises(dtype):
    """Only float32, bfloat16 and float16 states are accepted by the kernel."""
    states = torch.ones(4, 8, dtype=dtype, device=DEVICE)
    with pytest.raises(TypeError, match="float32, bfloat16"):
        segment_mean(states, torch.tensor([[0, 4]], dtype=torch.int32))


def test_float_spans_raise():
    """Spans are token indices: a float tensor is a TypeError, not silently truncated."""
    with pytest.raises(TypeError, match="integer"):
        segment_mean(torch.ones(4, 8, device=DEVICE), torch.tensor([[0.0, 4.0]]))


# ------------------------------------------------------------------------------------------------ misc


def test_bytes_formula():
    """segment_mean_bytes = sum(len) * dim * elem + n_spans * 8 (+ 8 per document span) + n * dim * 4."""
    states = torch.empty(100, 64, dtype=torch.bfloat16)
    spans = torch.tensor([[0, 10], [5, 6]], dtype=torch.int32)
    assert segment_mean_module.segment_mean_bytes(states, spans) == 11 * 64 * 2 + 2 * 8 + 2 * 64 * 4
    cu = torch.tensor([0, 100])
    assert segment_mean_module.segment_mean_bytes(states, spans, cu) == 11 * 64 * 2 + 2 * 16 + 2 * 64 * 4


_AOT_COMPILE = """
import itertools, sys
import triton
try:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
except ImportError as err:
    print("SKIP: triton has no AOT compile API:", err)
    sys.exit(0)
import latechunk.kernels.segment_mean as m

for ptr_type, has_cu_seqlens, normalize in itertools.product(("*bf16", "*fp16", "*fp32"), (0, 1), (0, 1)):
    has_cu_seqlens, normalize = bool(has_cu_seqlens), bool(normalize)
    signature = {
        "states_ptr": ptr_type, "out_ptr": "*fp32", "span_starts_ptr": "*i32", "span_ends_ptr": "*i32",
        "span_doc_ptr": "*i32", "cu_seqlens_ptr": "*i32", "states_row_stride": "i32", "out_row_stride": "i32",
        "span_stride": "i32", "n_spans": "i32", "dim": "i32", "eps": "fp32", "BLOCK_T": "constexpr",
        "BLOCK_D": "constexpr", "HAS_CU_SEQLENS": "constexpr", "NORMALIZE": "constexpr",
    }
    cfg = m.launch_config(781, normalize, 4 if ptr_type == "*fp32" else 2)
    constexprs = {"BLOCK_T": cfg["BLOCK_T"], "BLOCK_D": cfg["BLOCK_D"], "HAS_CU_SEQLENS": has_cu_seqlens,
                  "NORMALIZE": normalize}
    compiled = triton.compile(ASTSource(m._segment_mean_fwd_kernel, signature, constexprs=constexprs),
                              target=GPUTarget("cuda", 90, 32), options={"num_warps": cfg["num_warps"]})
    assert len(compiled.asm["cubin"]) > 0
    print("compiled", ptr_type, has_cu_seqlens, normalize, flush=True)
"""


def test_compiles_for_h100_h200():
    """The kernel compiles ahead of time to sm_90 cubins (H100/H200) for every dtype and mode, with no GPU.

    Catches what the interpreter does not check (Triton typing, loop-carried types, codegen). Runs in a fresh
    interpreter without ``TRITON_INTERPRET`` (an interpreted launch patches ``triton.language`` in this
    process).
    Skipped when Triton's AOT API or its NVIDIA backend (ptxas) is missing.
    """
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    proc = subprocess.run(
        [sys.executable, "-c", _AOT_COMPILE],
        cwd=root,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.stdout.startswith("SKIP") or (proc.returncode != 0 and "ptxas" in proc.stderr.lower()):
        pytest.skip(f"no Triton AOT compile for sm_90 here: {(proc.stdout + proc.stderr).strip()[-300:]}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.count("compiled") == 12, proc.stdout


# ------------------------------------------------------------------------------------------------ GPU only


@gpu
@requires_cuda
@DTYPES
@pytest.mark.parametrize("normalize", [False, True], ids=["mean", "normalized"])
def test_gpu_large_matches_reference(dtype, atol, normalize):
    """Compiled on CUDA: 65537 x 1031 states, 3000 spans of up to 4096 tokens, against float64."""
    n_tokens, dim = 65537, 1031
    states = torch.randn(n_tokens, dim, device="cuda").to(dtype)
    spans = torch.cat(
        [torch.tensor([[0, n_tokens], [0, 1], [n_tokens - 1, n_tokens]]), random_spans(n_tokens, 3000, 4096)]
    ).to(torch.int32)
    new = segment_mean(states, spans.cuda(), normalize)
    x64 = states.cpu().double()
    csum = torch.cat([torch.zeros(1, dim, dtype=torch.float64), x64.cumsum(0)])
    s, e = spans[:, 0].long(), spans[:, 1].long()
    ref64 = (csum[e] - csum[s]) / (e - s).double().unsqueeze(1)
    native = torch.stack([states[a:b].mean(0) for a, b in spans.tolist()]).cpu()
    if normalize:
        ref64 = torch.nn.functional.normalize(ref64, dim=1)
        native = torch.nn.functional.normalize(native, dim=1)
    assert_verbose_allclose(new, ref64, native, atol)


@gpu
@requires_cuda
def test_gpu_cu_seqlens_and_dispatch():
    """On CUDA, latechunk.pooling.segment_mean dispatches to the kernel, also in per-document mode."""
    from latechunk import pooling

    doc_lens = [4096, 1, 777, 8192]
    states = torch.randn(sum(doc_lens), 768, device="cuda", dtype=torch.bfloat16)
    cu_seqlens = torch.tensor(np.cumsum([0, *doc_lens]), dtype=torch.int32, device="cuda")
    per_doc = [random_spans(n, 50, 512) for n in doc_lens]
    spans = torch.cat(per_doc).cuda()
    cu_chunks = torch.tensor(np.cumsum([0, *[len(s) for s in per_doc]]), dtype=torch.int32, device="cuda")
    assert pooling._kernel_available(states)
    new = pooling.segment_mean(states, spans, True, cu_seqlens, cu_chunks)
    torch.testing.assert_close(new, segment_mean(states, spans, True, cu_seqlens, cu_chunks), atol=0, rtol=0)
    ref = pooling.segment_mean_ref(states, spans, True, cu_seqlens, cu_chunks)
    torch.testing.assert_close(new, ref, atol=1e-5, rtol=1e-4)


@gpu
@requires_cuda
def test_gpu_offsets_beyond_int32():
    """total_tokens * dim > 2**31: row offsets must be int64 (a 4.3 GB bf16 tensor)."""
    dim = 1024
    n_tokens = 2**31 // dim + 4096
    states = torch.empty(n_tokens, dim, device="cuda", dtype=torch.bfloat16)
    states[-8192:].normal_()
    states[:8].normal_()
    spans = torch.tensor(
        [[n_tokens - 8192, n_tokens], [n_tokens - 1, n_tokens], [0, 8], [n_tokens - 5000, n_tokens - 4000]],
        dtype=torch.int32,
        device="cuda",
    )
    new = segment_mean(states, spans)
    ref = torch.stack([states[a:b].float().mean(0) for a, b in spans.tolist()])
    torch.testing.assert_close(new, ref, atol=1e-5, rtol=1e-4)
    del states
    torch.cuda.empty_cache()
