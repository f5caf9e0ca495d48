"""The encoder: runs a loaded model; token ids in, unpadded token states out (it never sees strategies).

Loading is :mod:`latechunk.models` (name resolution, hub probe, sentence-transformers settings, weight hash);
this module runs what it loads: device and dtype, length-sorted token-budget batches, and documents longer than
a macro window through overlapping macro windows (:class:`~latechunk.macro_window.MacroWindow`): each one is
a proper model input (its own special tokens and instruction prefix), and each token's state is taken from the
macro window where it has the most context on both sides. The plan is a value passed to
:meth:`Encoder.iter_token_states` (one forward batch at a time, so that a caller can pool as it goes and never
hold a long document's states) and :meth:`Encoder.token_states` (whole documents); the encoder gives the default
(:meth:`Encoder.macro_window`) and stores none.

The encoder speaks sentence-transformers (``SentenceTransformer``): :meth:`Encoder.encode` (``prompt_name``,
``prompt``, ``batch_size``, ``show_progress_bar``, ``convert_to_numpy``, ``convert_to_tensor``,
``normalize_embeddings``; no prompt unless asked or the model sets a default), :meth:`Encoder.encode_query`,
:meth:`Encoder.encode_document`, :attr:`Encoder.prompts`, :attr:`Encoder.default_prompt_name`,
:attr:`Encoder.max_seq_length`, so code written for a ``SentenceTransformer`` can take an Encoder.
Tests: ``tests/test_encoder.py``.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch

from latechunk.macro_window import MIN_WINDOW_CONTENT_TOKENS, MacroWindow, PlannedWindow
from latechunk.models import HubProbe, LoadedModel, ModelFacts, canonical_dtype
from latechunk.onnx_backend import BACKENDS
from latechunk.tokenize import DocumentTokenizer
from latechunk.types import Tokenization

if TYPE_CHECKING:
    from latechunk.config import ModelConfig

__all__ = ["ONEDNN_LINEAR_ENV", "ONEDNN_MIN_TOKENS", "PROMPT_NAMES", "Encoder", "OneDNNLinear", "StateBatch",
           "StateBlock", "attention_implementation", "default_batch_tokens", "default_dtype",
           "onednn_linear_available"]

PROMPT_NAMES = ("query", "document")
"""The prompt names every encoder has (:attr:`Encoder.prompts`; sentence-transformers' ``prompt_name``); a model's
sentence-transformers config may define more; ``None`` = no prompt."""

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class StateBlock(NamedTuple):
    """The rows of one document's token states that one model input gives (see :meth:`Encoder.iter_token_states`).

    Attributes:
        doc: Index of the document in the tokenizations given.
        start: Its first token position in the document's tokenization; the block holds positions
            ``[start, start + n)``.
        row: Its first row in :attr:`StateBatch.states`.
        n: Rows (tokens).
    """

    doc: int
    start: int
    row: int
    n: int


class StateBatch(NamedTuple):
    """The token states of one forward batch (see :meth:`Encoder.iter_token_states`).

    Attributes:
        states: (rows, dim) float32 on the encoder's device: the batch's padded outputs, one model input after
            another (padding rows included; only the blocks' rows are token states a document keeps).
        blocks: One :class:`StateBlock` per model input of the batch; ``states[b.row : b.row + b.n]`` are the
            states of document ``b.doc``'s positions ``[b.start, b.start + b.n)``.
    """

    states: torch.Tensor
    blocks: list[StateBlock]


CPU_DTYPE_ENV = "LATECHUNK_CPU_DTYPE"
"""Environment variable: the dtype a CPU run takes when none is asked for (``float32``, ``bfloat16`` or
``float16``, any case, or ``fp32``/``bf16``/``fp16``); unset, empty or ``auto``: :func:`default_dtype`'s rule."""


#: torch's CPU probes for hardware bf16 matrix products, in order: Intel AMX tiles (Sapphire Rapids and later) and
#: AVX-512 BF16 dot products (AMD Zen 4 and later, Intel Cooper Lake), both used by oneDNN's bf16 GEMMs.
BF16_PROBES = (("amx", "_is_amx_tile_supported"), ("avx512_bf16", "_is_avx512_bf16_supported"))


def cpu_bf16_isa() -> str | None:
    """Which instructions this CPU multiplies bfloat16 matrices with: ``"amx"``, ``"avx512_bf16"`` or None.

    Measured (all-MiniLM-L6-v2, latechunk late over the first quarter of the five Chroma corpora, ~80k corpus
    tokens, 2 cores; ``results/bf16.md``): AMX (Intel Xeon, Sapphire Rapids class) 15.3 s fp32 vs 7.1 s bf16
    for the raw forward; AVX-512 BF16 (AMD EPYC, Zen 4 class) 15.35 s fp32 vs 8.01 s bf16 (section "AVX-512
    BF16", ``scripts/bench_peers.py``).
    CPUs with neither emulate bf16 (slower than fp32). A probe torch lacks, or one that raises, counts as no.
    """
    for name, attr in BF16_PROBES:
        probe = getattr(torch.cpu, attr, None)
        try:
            if probe is not None and probe():
                return name
        except Exception:  # noqa: BLE001, S112  (an old or unusual build: take the safe answer, ask the next probe)
            continue
    return None


def cpu_has_bf16_matmul() -> bool:
    """Whether this CPU multiplies bfloat16 matrices in hardware (:func:`cpu_bf16_isa` is not None)."""
    return cpu_bf16_isa() is not None


def default_dtype(device: torch.device, backend: str = "torch") -> str:
    """The dtype an encoder runs in when none is asked for.

    ``bfloat16`` on CUDA; on the CPU ``bfloat16`` where the CPU multiplies bf16 matrices in hardware
    (:func:`cpu_has_bf16_matmul`: AMX or AVX-512 BF16, 1.5-2x the fp32 speed, and measured at equal retrieval quality with paired
    intervals: ``results/bf16.md``), else ``float32``; ``$LATECHUNK_CPU_DTYPE`` (``float32`` or
    ``bfloat16``) overrides the CPU rule. The ONNX backends and MPS run ``float32``. Token states are pooled in
    float32 whatever the dtype.

    Args:
        device: Where the encoder runs.
        backend: ``torch``, ``onnx`` or ``onnx-int8``.

    Returns:
        ``"float32"`` or ``"bfloat16"``.

    Raises:
        ValueError: if ``$LATECHUNK_CPU_DTYPE`` holds another value.
    """
    if backend != "torch" or device.type not in ("cpu", "cuda"):
        return "float32"
    if device.type == "cuda":
        return "bfloat16"
    env = os.environ.get(CPU_DTYPE_ENV, "auto").strip().lower() or "auto"
    if env != "auto":
        return canonical_dtype(env, f"${CPU_DTYPE_ENV} (auto, float32, bfloat16 or float16)")
    return "bfloat16" if cpu_has_bf16_matmul() else "float32"


#: what torch raises when a device runs out of memory (``torch.OutOfMemoryError`` from torch 2.5, the CUDA one
#: before)
_OUT_OF_MEMORY = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)

CPU_BATCH_TOKENS = 4096
"""The CPU's default token budget per forward batch (:func:`default_batch_tokens`)."""

GPU_BATCH_TOKENS = 16384
"""The default token budget per forward batch on CUDA and MPS (:func:`default_batch_tokens`)."""


def default_batch_tokens(device: torch.device) -> int:
    """The token budget per forward batch (padded tokens, ``rows * longest``) an encoder takes when none is asked for.

    :data:`CPU_BATCH_TOKENS` (4,096: 16 macro windows of 256 tokens) on the CPU, :data:`GPU_BATCH_TOKENS` (16,384)
    elsewhere. Measured on a 2-core AMD EPYC (all-MiniLM-L6-v2, latechunk late over the first quarter of the five
    Chroma corpora, 80,630 tokens, three interleaved rounds, ``scripts/bench_peers.py --budgets``;
    ``results/peers.md``, "batch budget"): fp32 12.0-12.8 s at 1,024-4,096 tokens against 13.7 s at 16,384;
    bf16 7.05 s at 4,096 (the fastest) against 8.0 s at 16,384 (a batch's activations outgrow the caches). The
    budget never changes a vector (batches are padding-invariant, ``tests/test_encoder.py``).

    Args:
        device: Where the encoder runs.

    Returns:
        The budget in tokens.
    """
    return CPU_BATCH_TOKENS if device.type == "cpu" else GPU_BATCH_TOKENS


#: the fewest tokens in a forward batch for which :class:`OneDNNLinear` is entered: the mode routes every torch call
#: of the forward through Python (``__torch_function__``), about a millisecond per forward of MiniLM, which a batch
#: of one short query does not earn back (a review's probe found a one-query forward slower with the mode)
ONEDNN_MIN_TOKENS = 256


def _autocast_cpu() -> bool:
    """Whether CPU autocast is on (``torch.is_autocast_enabled("cpu")``, torch >= 2.4; older torch's own call)."""
    try:
        return torch.is_autocast_enabled("cpu")
    except TypeError:  # torch < 2.4: no device argument
        return torch.is_autocast_cpu_enabled()


class OneDNNLinear(torch.overrides.TorchFunctionMode):
    """Run ``torch.nn.functional.linear`` (every ``nn.Linear``) through oneDNN on the CPU in float32.

    Stock PyTorch computes an fp32 ``nn.Linear`` on the CPU as BLAS ``addmm`` (MKL in the official wheels): the
    bias broadcast into the output, then SGEMM. oneDNN's matmul primitive (the library PyTorch already uses for
    bf16 on the CPU, and TorchInductor for prepacked linears) fuses the bias and was faster at an encoder's
    shapes: measured on an AMD EPYC (Zen 4), 2 threads, all-MiniLM-L6-v2 in fp32: its FFN GEMMs at 1.3-1.8x the
    GFLOP/s of ``addmm`` (the 384 x 384 projections 0.85x in one run; ``scripts/bench_onnx.py --gemm``, whose
    forward-only timing moves with this VM's noise), the whole late pipeline 1.07-1.19x in three runs
    (``scripts/bench_peers.py --stock-linear``; results/peers.md, onnx.md; a noisy 2-vCPU VM). The result is
    fp32 throughout (no reduced-precision math; oneDNN's default fp32 math mode), equal to the stock result to
    rounding (token states within ~1e-5).

    Rerouted: a call with gradients off, CPU autocast off and ``torch.backends.mkldnn.enabled``, on CPU float32
    tensors with a 2-D weight, an input of at least 2 dimensions whose last matches the weight's columns, and no
    bias or a 1-D bias of one value per output. Everything else (and every other function) runs as it would, with
    PyTorch's own checks and errors. A mode, not a module swap: the model is left as it was loaded, and the reroute
    holds only inside :meth:`Encoder._run_model`, for batches of :data:`ONEDNN_MIN_TOKENS` tokens or more. Torch
    function modes are per thread. A model built on ``nn.TransformerEncoderLayer`` loses that layer's fused fast
    path under any mode, so :class:`Encoder` leaves the mode off for such models by default.
    """

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.nn.functional.linear and not torch.is_grad_enabled() and not _autocast_cpu() \
                and torch.backends.mkldnn.enabled:
            x = args[0] if args else kwargs.get("input")
            weight = args[1] if len(args) > 1 else kwargs.get("weight")
            bias = args[2] if len(args) > 2 else kwargs.get("bias")
            if (isinstance(x, torch.Tensor) and isinstance(weight, torch.Tensor) and x.device.type == "cpu"
                    and x.dtype == torch.float32 and weight.dtype == torch.float32 and weight.dim() == 2
                    and x.dim() >= 2 and x.shape[-1] == weight.shape[1]
                    and (bias is None or (isinstance(bias, torch.Tensor) and bias.dtype == torch.float32
                                          and bias.dim() == 1 and bias.shape[0] == weight.shape[0]))):
                shape = x.shape
                y = torch.ops.mkldnn._linear_pointwise(x.reshape(-1, shape[-1]), weight, bias, "none", [], "")
                return y.view(*shape[:-1], weight.shape[0])
        return func(*args, **kwargs)


@functools.cache
def onednn_linear_available() -> bool:
    """Whether :class:`OneDNNLinear` can run here: oneDNN is built in and enabled (``torch.backends.mkldnn``), the
    operator ``torch.ops.mkldnn._linear_pointwise`` exists (a PyTorch-internal operator: its absence in a future
    release turns the reroute off, nothing fails), and it agrees with ``torch.addmm`` on a probe (float32,
    autocast off; rtol 1e-4). Cached per process."""
    try:
        if not (torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled
                and hasattr(torch.ops.mkldnn, "_linear_pointwise")):
            return False
        g = torch.Generator().manual_seed(0)
        x, w, b = (torch.randn(*s, generator=g, dtype=torch.float32) for s in ((15, 24), (40, 24), (40,)))
        with torch.no_grad(), torch.autocast("cpu", enabled=False):
            want = torch.addmm(b, x, w.t())
            got = torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], "")
        return got.shape == want.shape and bool(torch.allclose(got, want, rtol=1e-4, atol=1e-5))
    except Exception:  # noqa: BLE001 - an operator that changed its signature, a build without it: stock linear
        return False


ONEDNN_LINEAR_ENV = "LATECHUNK_ONEDNN_LINEAR"
"""Environment variable: ``0``/``false``/``off``/``no`` turns the default oneDNN linear off for every encoder of the
process (and of Ray actors and sentence encoders it starts); ``1``/``true``/``on``/``yes`` or unset: the default."""

_ENV_BOOL = {"": True, "1": True, "true": True, "on": True, "yes": True, "0": False, "false": False, "off": False,
             "no": False}


def _want_onednn_linear(choice: bool | None, backend: str, device: torch.device, dtype: torch.dtype,
                        compile: bool, model: torch.nn.Module | None = None) -> bool:
    """The rule of ``Encoder(onednn_linear=...)``: True/False as given (True where it cannot run is an error);
    None: on for the torch backend on an x86-64 CPU in float32 without ``compile`` (inductor packs its own
    linears; on other CPUs, Arm among them, it is unmeasured and stays off unless asked for), for a model with no
    ``nn.TransformerEncoderLayer`` (whose fused fast path a mode turns off), unless ``$LATECHUNK_ONEDNN_LINEAR``
    is ``0``."""
    import platform

    fits = backend == "torch" and device.type == "cpu" and dtype == torch.float32 and not compile
    if choice is None:
        env = os.environ.get(ONEDNN_LINEAR_ENV, "").strip().lower()
        if env not in _ENV_BOOL:
            raise ValueError(f"${ONEDNN_LINEAR_ENV} must be 1, 0, true, false, on, off, yes or no (or unset), got "
                             f"{os.environ[ONEDNN_LINEAR_ENV]!r}")
        native = model is not None and any(isinstance(m, torch.nn.TransformerEncoderLayer) for m in model.modules())
        return (fits and not native and platform.machine().lower() in ("x86_64", "amd64")
                and _ENV_BOOL[env] and onednn_linear_available())
    if choice and not fits:
        raise ValueError(f"onednn_linear applies to the torch backend on the CPU in float32 without compile (this "
                         f"encoder: backend {backend}, device {device}, dtype {str(dtype).removeprefix('torch.')}"
                         f"{', compile' if compile else ''})")
    if choice and not onednn_linear_available():
        raise ValueError("onednn_linear: this PyTorch has no working oneDNN linear (torch.ops.mkldnn._linear_pointwise)")
    return bool(choice)


def attention_implementation(model: torch.nn.Module, device: torch.device, dtype: torch.dtype,
                             flash_attn: bool | None = None) -> str:
    """The attention implementation the encoder runs a Hugging Face model with (issue 15 part 2: no padding cost).

    On CUDA in 16-bit, with the ``flash_attn`` package importable and a model class that supports it,
    ``"flash_attention_2"``: transformers then unpads every padded batch and runs variable-length (varlen)
    attention over the real tokens only (Dao, "FlashAttention-2", arXiv:2307.08691; transformers'
    ``modeling_flash_attention_utils``). Else ``"sdpa"`` (PyTorch's ``scaled_dot_product_attention``; a batch
    without padding skips the mask and can use its fused kernels) where the model supports it, else ``"eager"``.

    Args:
        model: The loaded Hugging Face model (its class attributes ``_supports_flash_attn`` /
            ``_supports_flash_attn_2`` and ``_supports_sdpa`` are read).
        device: Where it runs.
        dtype: Its weight dtype (flash-attention needs float16 or bfloat16).
        flash_attn: Whether ``flash_attn`` is importable; ``None``: look it up (no import).

    Returns:
        ``"flash_attention_2"``, ``"sdpa"`` or ``"eager"``.
    """
    if flash_attn is None:
        import importlib.util

        flash_attn = importlib.util.find_spec("flash_attn") is not None
    supports_fa = bool(getattr(model, "_supports_flash_attn", False) or getattr(model, "_supports_flash_attn_2", False))
    if device.type == "cuda" and dtype in (torch.float16, torch.bfloat16) and flash_attn and supports_fa:
        return "flash_attention_2"
    return "sdpa" if getattr(model, "_supports_sdpa", False) else "eager"


def _set_attention(model: torch.nn.Module, impl: str) -> str:
    """Switch ``model`` to attention ``impl`` where it runs another one; return the one it runs afterwards (its
    own, where transformers refuses the switch)."""
    config = getattr(model, "config", None)
    current = getattr(config, "_attn_implementation", None)
    if current is None or current == impl or not hasattr(model, "set_attn_implementation"):
        return current or "eager"
    try:
        model.set_attn_implementation(impl)
    except (ValueError, ImportError, RuntimeError, TypeError, AttributeError):
        return current
    return getattr(config, "_attn_implementation", current)


def _caller_stacklevel() -> int:
    """The ``stacklevel`` for a ``warnings.warn`` called by this module's caller's caller chain that points at the
    first frame outside the latechunk package (the user's line, not an internal one)."""
    import sys

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # latechunk/, not latechunk/encoder/
    frame, level = sys._getframe(1), 1  # the frame that calls warnings.warn is level 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def _pick_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but CUDA is not available (use --device cpu or auto)")
    if device not in ("cpu",) and not device.startswith("cuda") and device != "mps":
        raise ValueError(f"device must be auto, cpu, cuda or cuda:N, got {device!r}")
    return torch.device(device)


class Encoder:
    """Runs a Hugging Face encoder: unpadded token states per document, and the model's own pooling.

    Args:
        model: Model id or local folder, loaded through :meth:`LoadedModel.load
            <latechunk.models.LoadedModel.load>` (``None`` = bundled all-MiniLM-L6-v2, offline); or a
            :class:`~latechunk.models.LoadedModel` already in memory (tests, custom models), run as it is.
        device: ``"auto"`` (CUDA when present), ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"``.
        dtype: ``"float32"``, ``"bfloat16"``, ``"float16"``; default :func:`default_dtype` (bf16 on CUDA and on
            CPUs with AMX or AVX-512 BF16, else fp32; ``$LATECHUNK_CPU_DTYPE`` overrides the CPU rule).
        max_length: Model input limit in tokens, frame included; default the model's limit
            (:attr:`LoadedModel.input_limit <latechunk.models.LoadedModel.input_limit>`). It must hold the longer
            of the document and query frames plus :data:`~latechunk.macro_window.MIN_WINDOW_CONTENT_TOKENS` (16)
            content tokens.
        batch_tokens: Token budget per forward batch (padded tokens: ``batch_size * longest``); default
            :func:`default_batch_tokens` (4,096 on the CPU, 16,384 on a GPU).
        trust_remote_code: Allow the model repository's own Python code when loading by name (off unless asked;
            a warning is given).
        document_prompt / query_prompt: Override the model's prompts (``None`` = the model's own).
        hub_probe: The hub probe for a hub id (:class:`~latechunk.models.HubProbe`; default a new one).
        backend: What runs the forward passes: ``"torch"`` (default, any device), ``"onnx"`` (ONNX Runtime on
            the CPU, fp32; the model exported once and cached by its weight hash,
            :mod:`latechunk.onnx_backend`) or ``"onnx-int8"`` (the export dynamically quantized to int8). The
            ONNX backends need ``device`` cpu (or auto without CUDA), dtype float32 and the extra ``[onnx]``.
        compile: Run the forward passes through ``torch.compile`` (TorchInductor; the torch backend only). Each
            new batch shape is compiled on its first forward (seconds to tens of seconds; the full macro windows
            of late mode share one shape, shorter inputs take a shape-generic graph after the first recompile:
            ``dynamic=None``, torch's automatic dynamic shapes); token states equal the eager ones to float
            rounding. Measured (``results/peers.md``, "--compile"): 0.99-1.15x the eager pipeline on an fp32
            CPU in four runs, 0.97-1.01x in bf16 on an AVX-512 BF16 CPU, so it pays on large fp32 corpora at best
            (not yet measured on a GPU). Where the compile fails (no C++ compiler, an operator the compiler
            refuses) the encoder warns once and runs eager (:attr:`compiled` is then False). See
            https://pytorch.org/docs/stable/generated/torch.compile.html.
        onednn_linear: Run the model's linear layers through oneDNN (:class:`OneDNNLinear`; fp32, bias fused)
            instead of BLAS ``addmm``. ``None`` (default): on for the torch backend on the CPU in float32
            without ``compile`` on an x86-64 CPU, where the operator exists and passes a probe
            (:func:`onednn_linear_available`), unless ``$LATECHUNK_ONEDNN_LINEAR=0``; measured 1.07-1.19x the
            stock fp32 pipeline on an AMD EPYC (results/peers.md). Token states equal the stock ones to fp32
            rounding. The keyword sets this encoder only; the environment variable reaches every encoder a run
            makes (the sentence encoders of ``sentence_source``, Ray actors).

    Raises:
        ValueError: on a bad ``backend`` (or an ONNX backend on a GPU or with a 16-bit dtype, or with
            ``compile``), on a model that does not resolve or load, a bad device/dtype/``batch_tokens``,
            ``max_length`` out of range, ``trust_remote_code`` with a model already loaded, or
            ``onednn_linear=True`` where it cannot run (another backend, device or dtype, ``compile``, or no working
            operator).
        TypeError: if the tokenizer is not a fast tokenizer (character offsets are needed), or ``compile`` is not
            a bool, or ``onednn_linear`` not a bool or None.
    """

    def __init__(
        self,
        model: str | os.PathLike | LoadedModel | None = None,
        device: str = "auto",
        dtype: str | None = None,
        max_length: int | None = None,
        batch_tokens: int | None = None,
        trust_remote_code: bool = False,
        document_prompt: str | None = None,
        query_prompt: str | None = None,
        hub_probe: HubProbe | None = None,
        backend: str = "torch",
        compile: bool = False,
        onednn_linear: bool | None = None,
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        if not isinstance(compile, bool):
            raise TypeError(f"compile must be True or False, got {compile!r}")
        if compile and backend != "torch":
            raise ValueError(f"compile applies to the torch backend (torch.compile), not to {backend!r}")
        self.backend = backend
        if backend != "torch" and device == "auto":
            device = "cpu"
        self.device = _pick_device(device)
        dtype = canonical_dtype(dtype)  # bf16, FP32 ... -> torch's names; ValueError on anything else
        if backend != "torch" and (self.device.type != "cpu" or dtype not in (None, "float32")):
            raise ValueError(f"backend {backend!r} runs on the CPU in float32 (got device {str(self.device)!r}, dtype "
                             f"{dtype!r}); on a GPU use --backend torch")
        if dtype is None:
            dtype = default_dtype(self.device, backend)
        self.dtype = _DTYPES[dtype]
        if batch_tokens is None:
            batch_tokens = default_batch_tokens(self.device)
        if batch_tokens < 1:
            raise ValueError(f"batch_tokens must be >= 1, got {batch_tokens}")
        self.batch_tokens = int(batch_tokens)
        if isinstance(model, LoadedModel):
            if trust_remote_code:
                raise ValueError("trust_remote_code applies when a model is loaded by name; this one is already loaded")
            self.loaded = model
        else:
            self.loaded = LoadedModel.load(model, dtype=self.dtype, trust_remote_code=trust_remote_code, probe=hub_probe)
        self.loaded.model.eval()
        self.loaded.model.to(device=self.device, dtype=self.dtype)
        #: the attention implementation the model runs (:func:`attention_implementation`; varlen
        #: flash-attention on CUDA where available, else SDPA)
        model = self.loaded.model
        self.attention = (
            _set_attention(model, attention_implementation(model, self.device, self.dtype)) if backend == "torch"
            else str(getattr(getattr(model, "config", None), "_attn_implementation", None) or "eager"))

        hf_tok = self.loaded.tokenizer
        settings = self.loaded.settings
        self.tokenizer = DocumentTokenizer(hf_tok, prefix=settings.document_prompt if document_prompt is None else document_prompt)
        self.query_tokenizer = DocumentTokenizer(hf_tok, prefix=settings.query_prompt if query_prompt is None else query_prompt)
        self.plain_tokenizer = DocumentTokenizer(hf_tok, prefix="")

        model_limit = self.loaded.input_limit
        self.max_length = int(max_length) if max_length is not None else model_limit
        if self.max_length > model_limit:
            raise ValueError(f"max_length={self.max_length} exceeds the model's limit of {model_limit} tokens")
        # max_length is the input limit (and the default macro-window size): it must hold every prompt's frame
        # plus content
        frames = {"document": self.tokenizer.n_frame, "query": self.query_tokenizer.n_frame}
        prompt_name, frame = max(frames.items(), key=lambda kv: kv[1])
        if self.max_length < frame + MIN_WINDOW_CONTENT_TOKENS:
            raise ValueError(
                f"max_length={self.max_length} is too small: the minimum is {frame + MIN_WINDOW_CONTENT_TOKENS} tokens "
                f"({frame} frame tokens of the {prompt_name} input + {MIN_WINDOW_CONTENT_TOKENS} content tokens)"
            )
        self.dim = int(getattr(self.model.config, "hidden_size", 0) or 0)
        #: counters for accounting and instrumentation
        self.stats = {"forward_calls": 0, "rows": 0, "tokens": 0, "padded_tokens": 0, "seconds": 0.0}
        self._onnx = None
        if backend != "torch":
            from latechunk.onnx_backend import OnnxRunner, export_onnx

            variant = "int8" if backend == "onnx-int8" else "fp32"
            self._onnx = OnnxRunner(export_onnx(self.model, self.model_hash, variant))
        #: what runs the forward passes: the model, or ``torch.compile(model)`` with ``compile`` (the eager model
        #: again once a compile has failed); :attr:`model` stays the eager module
        self._forward_model: torch.nn.Module = self.model
        #: whether the forward passes run through ``torch.compile`` (False without ``compile``, or once it failed)
        self.compiled = bool(compile)
        if self.compiled:
            self._forward_model = torch.compile(self.model, dynamic=None)
        if onednn_linear is not None and not isinstance(onednn_linear, bool):
            raise TypeError(f"onednn_linear must be True, False or None, got {onednn_linear!r}")
        #: whether the eager forward passes run every ``nn.Linear`` through oneDNN (:class:`OneDNNLinear`)
        self.onednn_linear = _want_onednn_linear(onednn_linear, backend, self.device, self.dtype, self.compiled,
                                                 self.model)

    @classmethod
    def from_config(cls, config: ModelConfig, **overrides) -> Encoder:
        """The encoder of a :class:`~latechunk.config.ModelConfig` (name, device, dtype, batch_tokens,
        trust_remote_code, backend, compile).

        Args:
            config: The model config.
            **overrides: Constructor arguments that replace the config's (e.g. ``device="cuda:1"`` for a rank).

        Returns:
            The :class:`Encoder`.

        Raises:
            ValueError / TypeError: as the constructor.
        """
        kwargs = {"device": config.device, "dtype": config.dtype, "batch_tokens": config.batch_tokens,
                  "trust_remote_code": config.trust_remote_code, "backend": getattr(config, "backend", "torch"),
                  "compile": getattr(config, "compile", False)}
        return cls(config.name, **(kwargs | overrides))

    # ------------------------------------------------------------------ the loaded model
    @property
    def name(self) -> str:
        """The model as asked (``"all-MiniLM-L6-v2"`` for the default)."""
        return self.loaded.name

    @property
    def path(self) -> str:
        """Where the model was loaded from (folder or hub id; the name for a model built in memory)."""
        return self.loaded.path

    @property
    def model(self) -> torch.nn.Module:
        """The Hugging Face model, on :attr:`device` in :attr:`dtype`, in eval mode."""
        return self.loaded.model

    @property
    def settings(self):
        """The model's embedding settings (:class:`~latechunk.models.ModelSettings`)."""
        return self.loaded.settings

    @property
    def facts(self) -> ModelFacts:
        """The facts a run's checks need (:class:`~latechunk.models.ModelFacts`), of the model as loaded and run
        here: its settings, :attr:`max_length` as the input limit and the document tokenizer's frame."""
        return ModelFacts(name=self.name, path=self.path, settings=self.settings, input_limit=self.max_length,
                          document_frame=self.tokenizer.n_frame)

    @property
    def hf_tokenizer(self):
        """The underlying Hugging Face fast tokenizer."""
        return self.loaded.tokenizer

    @property
    def model_hash(self) -> str:
        """sha256 of the model's weight files (:attr:`LoadedModel.sha256 <latechunk.models.LoadedModel.sha256>`;
        computed once, lazily; ``""`` where there are none locally)."""
        return self.loaded.sha256

    @property
    def max_seq_length(self) -> int:
        """The sentence-transformers ``max_seq_length`` where the model has one (``sentence_bert_config.json``),
        capped at :attr:`max_length`; else :attr:`max_length`. In tokens, frame included.

        Recorded for callers that want sentence-transformers' input length (e.g. a default macro window); the
        encoder itself never truncates to it: naive chunks and queries longer than :attr:`max_length` go
        through macro windows.
        """
        st = self.settings.max_seq_length
        return min(int(st), self.max_length) if isinstance(st, int) and st > 0 else self.max_length

    # ------------------------------------------------------------------ the macro-window plan
    def macro_window(self, size: int | None = None, overlap: int | None = None) -> MacroWindow:
        """This model's macro-window plan, with defaults resolved and checked (:meth:`MacroWindow.check
        <latechunk.macro_window.MacroWindow.check>`) against the document frame and :attr:`max_length`.

        Args:
            size: Tokens per macro window, frame included; ``None`` = :attr:`max_seq_length` (the model's
                sentence-transformers ``max_seq_length`` where it has one, 256 for all-MiniLM-L6-v2; else
                :attr:`max_length`).
            overlap: Content tokens shared by consecutive macro windows; ``None`` =
                :data:`~latechunk.macro_window.DEFAULT_WINDOW_OVERLAP` (0).

        Returns:
            The :class:`~latechunk.macro_window.MacroWindow`.

        Raises:
            ValueError: if ``size > max_length``, ``size`` is under the frame plus 16 content tokens, or the
                overlap is outside ``[0, size - n_frame)``.
        """
        return MacroWindow.default(self.max_length, self.tokenizer.n_frame, size, overlap,
                                   default_size=self.max_seq_length)

    def describe(self, macro_window: MacroWindow | None = None) -> dict:
        """The manifest's model block.

        Args:
            macro_window: The run's plan, recorded as ``window`` and ``window_overlap`` (the manifest's keys
                for the macro window's size and overlap); default :meth:`macro_window`.

        Returns:
            ``name``, ``path``, ``sha256``, ``dim``, ``dtype``, ``device``, ``max_length`` (tokens), ``window``,
            ``window_overlap`` (tokens), ``pooling``, ``normalize``, ``document_prompt``, ``query_prompt``,
            and ``backend`` (``onnx`` or ``onnx-int8``) only where the model runs on ONNX Runtime (a torch run keeps
            the manifest keys it always had).
        """
        mw = macro_window or self.macro_window()
        return {
            "name": self.name,
            # absolute, so the folder's model is found from any working directory (a trial: `--model models/r`
            # recorded as typed could not be searched from elsewhere)
            "path": str(Path(self.path).absolute()) if Path(self.path).exists() else self.path,
            "sha256": self.model_hash,
            "dim": self.dim,
            "dtype": str(self.dtype).replace("torch.", ""),
            "device": str(self.device),
            "max_length": self.max_length,
            "window": mw.size,
            "window_overlap": mw.overlap,
            "pooling": self.settings.pooling,
            "normalize": self.settings.normalize,
            "document_prompt": self.tokenizer.prefix,
            "query_prompt": self.query_tokenizer.prefix,
            **({"backend": self.backend} if self.backend != "torch" else {}),
        }

    # ------------------------------------------------------------------ forward
    def _forward_packed(self, rows: list[np.ndarray]) -> tuple[torch.Tensor, int]:
        """Run one padded batch; return its states as (n * longest, dim) float32 on the device (row i's token p
        at ``i * longest + p``; padding rows included) and ``longest``."""
        n = len(rows)
        longest = max(len(r) for r in rows)
        ids = np.zeros((n, longest), dtype=np.int64)
        mask = np.zeros((n, longest), dtype=np.int64)
        pad_id = self.hf_tokenizer.pad_token_id if self.hf_tokenizer.pad_token_id is not None else 0
        ids.fill(pad_id)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = r
            mask[i, : len(r)] = 1
        if self._onnx is not None:
            t0 = time.perf_counter()
            hidden = torch.from_numpy(self._onnx(ids, mask))
            return self._account(n, longest, int(mask.sum()), hidden, t0)
        ids_t = torch.from_numpy(ids)
        mask_t = torch.from_numpy(mask)
        if self.device.type == "cuda":
            ids_t = ids_t.pin_memory().to(self.device, non_blocking=True)
            mask_t = mask_t.pin_memory().to(self.device, non_blocking=True)
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = self._run_model(ids_t, mask_t)
        hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
        del out
        return self._account(n, longest, int(mask.sum()), hidden, t0)

    def _run_model(self, ids: torch.Tensor, mask: torch.Tensor):
        """One forward of :attr:`_forward_model`. Where the compiled model raises and the eager one runs the same
        batch, the compile failed: warn once and run eager from then on (the same states, at the eager speed).
        An error the eager model raises too (the input's or the model's) propagates; so does running out of
        memory (the batch's, not the compiler's)."""
        if self._forward_model is self.model:
            if self.onednn_linear and ids.numel() >= ONEDNN_MIN_TOKENS:
                with OneDNNLinear():
                    return self.model(input_ids=ids, attention_mask=mask)
            return self.model(input_ids=ids, attention_mask=mask)
        try:
            return self._forward_model(input_ids=ids, attention_mask=mask)
        except Exception as err:  # dynamo and inductor raise many kinds (BackendCompilerFailed, ...)
            if isinstance(err, _OUT_OF_MEMORY):
                raise
            out = self.model(input_ids=ids, attention_mask=mask)  # raises where the batch, not the compile, is wrong
            import warnings

            root, seen = err, {id(err)}  # BackendCompilerFailed wraps the compiler's own error: name that one
            while (inner := getattr(root, "inner_exception", None) or root.__cause__) is not None and id(inner) not in seen:
                root = inner
                seen.add(id(inner))
            lines = str(root).strip().splitlines()
            warnings.warn(f"torch.compile failed ({type(root).__name__}: {lines[0][:300] if lines else ''}); the "
                          "encoder runs the model eager (the same token states, without the compiled speed-up)",
                          RuntimeWarning, stacklevel=_caller_stacklevel())
            self._forward_model = self.model
            self.compiled = False
            return out

    def _account(self, n: int, longest: int, tokens: int, hidden: torch.Tensor, t0: float) -> tuple[torch.Tensor, int]:
        """Count one forward batch in :attr:`stats`; its states as (n * longest, dim) float32 and ``longest``."""
        self.stats["forward_calls"] += 1
        self.stats["rows"] += n
        self.stats["tokens"] += tokens
        self.stats["padded_tokens"] += n * longest
        states = hidden.float().reshape(n * longest, hidden.shape[-1])
        self.stats["seconds"] += time.perf_counter() - t0
        return states, longest

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Greedy token-budget batches of row indices, longest first (so padding stays small)."""
        order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
        batches: list[list[int]] = []
        cur: list[int] = []
        for i in order:
            longest = lengths[cur[0]] if cur else lengths[i]
            if cur and longest * (len(cur) + 1) > self.batch_tokens:
                batches.append(cur)
                cur = []
            cur.append(i)
        if cur:
            batches.append(cur)
        return batches

    def model_inputs(
        self, tok: Tokenization, macro_window: MacroWindow | None = None
    ) -> tuple[list[np.ndarray], list[PlannedWindow]]:
        """The model inputs of one document: one row when it fits one macro window, else one per macro window.

        Args:
            tok: The document's tokenization.
            macro_window: The plan; default :meth:`macro_window`.

        Returns:
            ``(rows, plan)``: rows are (len_i,) int64 token-id arrays, each ``lead + content[a:b] + trail``;
            plan is :meth:`MacroWindow.plan <latechunk.macro_window.MacroWindow.plan>`'s list (content-token
            units).

        Raises:
            ValueError: if the plan does not fit this tokenization's frame or :attr:`max_length`
                (:meth:`MacroWindow.check <latechunk.macro_window.MacroWindow.check>`).
        """
        mw = macro_window or self.macro_window()
        n_frame = tok.n_lead + tok.n_trail
        mw.check(n_frame, self.max_length)
        plan = mw.plan(tok.n_content, n_frame)
        if len(plan) == 1:
            return [tok.input_ids], plan
        lead = tok.input_ids[: tok.n_lead]
        trail = tok.input_ids[tok.content_end :]
        content = tok.input_ids[tok.content_start : tok.content_end]
        return [np.concatenate([lead, content[w.start : w.end], trail]) for w in plan], plan

    def iter_token_states(
        self,
        toks: Sequence[Tokenization],
        macro_window: MacroWindow | None = None,
        allow_windows: bool = True,
        progress: bool = False,
    ) -> Iterator[StateBatch]:
        """Token states of many documents, one forward batch at a time (memory bounded by one batch).

        Every model input (a whole document, or one macro window of a longer one) gives one
        :class:`StateBlock`: the rows of the document's token states that this input keeps (a macro window keeps
        ``[keep_start, keep_end)`` of its content, the first one also the lead frame, the last one the trail
        frame). Over the whole iteration the blocks of document ``d`` tile ``[0, len(toks[d]))`` exactly once,
        so a caller that pools as it goes never holds a whole long document's states.

        Args:
            toks: Tokenizations (from ``self.tokenizer`` or another of this encoder's tokenizers).
            macro_window: The macro-window plan; default :meth:`macro_window`.
            allow_windows: If False, a document longer than the macro window raises instead of being
                encoded in several macro windows.
            progress: Show a progress bar (tokens).

        Yields:
            One :class:`StateBatch` per forward batch (length-sorted token-budget batches, longest first, so
            not in document order): ``states`` (rows, dim) float32 on ``self.device``, valid until the next
            batch is asked for, and its blocks.

        Raises:
            ValueError: with ``allow_windows=False``, for a document longer than the macro window (names
                token count and limit; never truncates silently); for a plan that does not fit a tokenization or
                the model (before any forward pass).
        """
        mw = macro_window or self.macro_window()
        all_rows: list[np.ndarray] = []
        # per model input: (doc, first kept document position, rows kept, document position - row position)
        keeps: list[tuple[int, int, int, int]] = []
        for d, tok in enumerate(toks):
            if not allow_windows and len(tok) > mw.size:
                raise ValueError(
                    f"document {d} has {len(tok)} tokens, more than max_length={mw.size}; "
                    "turn macro windows on or shorten it (latechunk never truncates silently)"
                )
            rows, plan = self.model_inputs(tok, mw)
            if len(plan) == 1:
                all_rows.append(rows[0])
                keeps.append((d, 0, len(tok), 0))
                continue
            nl, covered = tok.n_lead, 0
            for w, (a, _b, ks, ke) in enumerate(plan):
                # row = lead + content[a:b] + trail: content token p sits at row nl + p - a, document nl + p;
                # the first window also keeps the lead frame (rows 0..nl), the last one the trail frame
                lo = 0 if w == 0 else nl + ks
                hi = len(tok) if w == len(plan) - 1 else nl + ke
                all_rows.append(rows[w])
                keeps.append((d, lo, hi - lo, a))
                covered += hi - lo
            if covered != len(tok):
                raise RuntimeError(f"macro-window stitching gave {covered} rows for {len(tok)} tokens")
        lengths = [len(r) for r in all_rows]
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=sum(lengths), unit="tok", desc="encode", leave=False)
        try:
            for batch in self._batches(lengths):
                states, longest = self._forward_packed([all_rows[i] for i in batch])
                blocks = []
                for j, i in enumerate(batch):
                    d, lo, n, shift = keeps[i]
                    blocks.append(StateBlock(d, lo, j * longest + lo - shift, n))
                yield StateBatch(states, blocks)
                del states
                if bar is not None:
                    bar.update(sum(lengths[i] for i in batch))
        finally:
            if bar is not None:
                bar.close()

    def token_states(
        self,
        toks: Sequence[Tokenization],
        macro_window: MacroWindow | None = None,
        allow_windows: bool = True,
        progress: bool = False,
    ) -> list[torch.Tensor]:
        """Token states of many documents, one unpadded tensor per document, in input order.

        Holds every document's states at once (one tensor of ``len(tok)`` rows each); the pipeline pools with
        :meth:`iter_token_states` instead, so a long document's states are never held whole.

        Args:
            toks: Tokenizations (from ``self.tokenizer`` or another of this encoder's tokenizers).
            macro_window: The macro-window plan; default :meth:`macro_window` (:attr:`max_seq_length`, no
                overlap).
            allow_windows: If False, a document longer than the macro window raises instead of being
                encoded in several macro windows.
            progress: Show a progress bar (tokens).

        Returns:
            list of (n_tokens_i, dim) float32 tensors on ``self.device``; row p is the state of token p of the
            document's tokenization (frame rows from the first/last macro window).

        Raises:
            ValueError: with ``allow_windows=False``, for a document longer than the macro window (names
                token count and limit; never truncates silently); for a plan that does not fit a tokenization or the model.
        """
        result: list[torch.Tensor | None] = [None] * len(toks)
        for batch in self.iter_token_states(toks, macro_window, allow_windows, progress):
            for blk in batch.blocks:
                rows = batch.states[blk.row : blk.row + blk.n]
                n_tok = len(toks[blk.doc])
                if blk.n == n_tok:  # the whole document in one input: a view of the batch output, as before
                    result[blk.doc] = rows
                    continue
                if result[blk.doc] is None:
                    result[blk.doc] = torch.empty((n_tok, self.dim), dtype=torch.float32, device=self.device)
                result[blk.doc][blk.start : blk.start + blk.n] = rows  # type: ignore[index]
        return result  # type: ignore[return-value]

    # ------------------------------------------------------------------ the model's own pooling
    def pool_model(self, states: torch.Tensor, tok: Tokenization) -> torch.Tensor:
        """The model's own pooling of one input's token states (naive chunks and queries).

        Args:
            states: (n_tokens, dim), float32. Token states of one model input, frame included.
            tok: Its tokenization (for the prompt tokens, ``tok.n_lead``).

        Returns:
            (dim,), dtype of ``states``: the mean over all tokens, special tokens included (prompt tokens
            dropped when ``settings.include_prompt`` is False), the first token (``cls``) or the last token
            (``lasttoken``), or the elementwise maximum over the tokens the mean would take (``max``), as
            sentence-transformers' ``Pooling`` does. Other modes (``weightedmean``, several concatenated) are
            taken as the mean. Not normalised (see :meth:`encode`).
        """
        mode = self.settings.pooling
        if mode == "cls":
            return states[0]
        if mode == "lasttoken":
            return states[-1]
        start = 0 if self.settings.include_prompt else tok.n_lead
        if mode == "max":
            return states[start:].amax(dim=0)
        return states[start:].mean(dim=0)

    # ------------------------------------------------------------------ prompts (sentence-transformers names)
    @functools.cached_property
    def prompts(self) -> dict[str, str]:
        """The model's prompts by name, as sentence-transformers' ``SentenceTransformer.prompts``: every prompt of
        its ``config_sentence_transformers.json`` (a local folder's; ``{}`` where there is none), with ``query``
        and ``document`` always present and set to the prompts this encoder uses (the model's own, or the
        constructor's overrides; ``""`` where none).

        Returns:
            ``{prompt name: prompt text}``.
        """
        own = _st_config(self.path).get("prompts")
        found = {str(k): v for k, v in own.items() if isinstance(v, str)} if isinstance(own, dict) else {}
        return {**found, "query": self.query_tokenizer.prefix, "document": self.tokenizer.prefix}

    @property
    def default_prompt_name(self) -> str | None:
        """The prompt :meth:`encode` uses when given none (sentence-transformers' ``default_prompt_name``, from
        the model's ``config_sentence_transformers.json``); ``None`` where the model sets none."""
        name = _st_config(self.path).get("default_prompt_name")
        return name if isinstance(name, str) and name in self.prompts else None

    def _prompt_tokenizer(self, prompt_name: str | None, prompt: str | None) -> DocumentTokenizer:
        """The tokenizer that puts a prompt in the lead frame: ``prompt`` itself when given, else the prompt
        named ``prompt_name`` (else :attr:`default_prompt_name`, else none)."""
        if prompt is not None:
            if not isinstance(prompt, str):
                raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
            text = prompt
        else:
            name = prompt_name if prompt_name is not None else self.default_prompt_name
            if name is None:
                return self.plain_tokenizer
            if name == "query":
                return self.query_tokenizer
            if name == "document":
                return self.tokenizer
            if name not in self.prompts:
                others = "".join(f", {n!r}" for n in sorted(self.prompts) if n not in PROMPT_NAMES)
                raise ValueError(f"prompt_name must be None, 'query' or 'document'{others}, got {name!r} (the "
                                 "prompts of the model's sentence-transformers config)")
            text = self.prompts[name]
        cache = self.__dict__.setdefault("_prompt_tokenizers", {})
        if text not in cache:
            cache[text] = DocumentTokenizer(self.hf_tokenizer, prefix=text)
        return cache[text]

    # ------------------------------------------------------------------ naive / query encoding
    def encode(
        self,
        texts: str | Sequence[str],
        prompt_name: str | None = None,
        prompt: str | None = None,
        batch_size: int | None = None,
        show_progress_bar: bool | None = None,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        normalize_embeddings: bool | None = None,
        *,
        normalize: bool | None = None,
        progress: bool = False,
        macro_window: MacroWindow | None = None,
    ):
        """Encode texts each on its own with the model's pooling: sentence-transformers' ``encode``.

        Each text is one input ``[lead frame with the prompt] + text + [trail frame]``, pooled as the model's
        sentence-transformers Pooling does (:meth:`pool_model`). Unlike sentence-transformers, a text longer than
        :attr:`max_length` is never truncated: it goes through macro windows (its token states stitched, then
        pooled), so a text within ``max_seq_length`` gives sentence-transformers' vector and a longer one the
        pooling of all its tokens.

        Args:
            texts: One text (then one vector comes back) or a sequence of texts.
            prompt_name: A prompt name of :attr:`prompts` (``"query"``, ``"document"``, or another the model's
                sentence-transformers config defines); ``None``: :attr:`default_prompt_name` (none for most
                models: no prompt).
            prompt: A prompt text, used instead of ``prompt_name`` (as in sentence-transformers).
            batch_size: Accepted for sentence-transformers compatibility; forward batches are formed by the token
                budget ``batch_tokens`` instead (length-sorted), which never changes a vector.
            show_progress_bar: Show a progress bar (tokens); alias of ``progress``.
            convert_to_numpy: Return a numpy array (default); False (and not ``convert_to_tensor``): a list of
                (dim,) float32 CPU tensors, as sentence-transformers does.
            convert_to_tensor: Return one (n, dim) float32 CPU ``torch.Tensor``.
            normalize_embeddings: sentence-transformers' flag: True L2-normalises every vector; False gives the
                model's output as sentence-transformers gives it (L2-normalised only where the model has a
                ``Normalize`` module); ``None`` (default): latechunk's default, L2-normalised (chunk vectors are
                normalised too, so queries and chunks compare by cosine).
            normalize: latechunk's own keyword (kept for its callers): True L2-normalises, False returns the raw
                pooled vectors (no ``Normalize`` module applied). Give at most one of ``normalize`` and
                ``normalize_embeddings``.
            progress: Show a progress bar (tokens).
            macro_window: Plan for texts longer than one macro window; default ``macro_window(size=max_length,
                overlap=0)``: one forward per text up to :attr:`max_length` tokens (frame included), longer texts
                in windows of :attr:`max_length`, never truncated.

        Returns:
            (len(texts), dim) float32 numpy array on the host, in input order ((dim,) for one str); or a tensor /
            list of tensors as ``convert_to_tensor`` / ``convert_to_numpy`` say.

        Raises:
            ValueError: on an unknown ``prompt_name``, or ``normalize`` and ``normalize_embeddings`` both given
                and different.
            TypeError: if a text is not a str.
        """
        single = isinstance(texts, str)
        items = [texts] if single else list(texts)
        for i, t in enumerate(items):
            if not isinstance(t, str):
                raise TypeError(f"encode: texts[{i}] must be a str, got {type(t).__name__}")
        if normalize is not None and normalize_embeddings is not None and bool(normalize) != bool(normalize_embeddings):
            raise ValueError(f"give one of normalize={normalize!r} and normalize_embeddings={normalize_embeddings!r}")
        if normalize is not None:
            unit = bool(normalize)
        elif normalize_embeddings is not None:
            unit = bool(normalize_embeddings) or self.settings.normalize
        else:
            unit = True
        tokenizer = self._prompt_tokenizer(prompt_name, prompt)
        toks = [tokenizer(t) for t in items]
        if macro_window is None:
            # a text encoded on its own uses the model's whole input (max_length), not the late default
            # (max_seq_length): a 256-token chunk of MiniLM is one 258-token forward, not two 256-token windows
            # (the second pushed back to be full: twice the tokens; issue 15's peer benchmark)
            macro_window = self.macro_window(size=self.max_length, overlap=0)
        if toks:
            states = self.token_states(toks, macro_window, progress=progress or bool(show_progress_bar))
            vecs = torch.stack([self.pool_model(s, t) for s, t in zip(states, toks)])
            if unit:
                vecs = torch.nn.functional.normalize(vecs, p=2.0, dim=1)
            out = vecs.cpu().float()
        else:
            out = torch.zeros((0, self.dim), dtype=torch.float32)
        if convert_to_tensor:
            return out[0] if single else out
        if not convert_to_numpy:
            rows = list(out)
            return rows[0] if single else rows
        arr = out.numpy().astype(np.float32, copy=False)
        return arr[0] if single else arr

    def encode_query(self, texts: str | Sequence[str], normalize: bool | None = None, progress: bool = False,
                     **kwargs) -> np.ndarray:
        """:meth:`encode` with the query prompt (sentence-transformers' ``encode_query``).

        Args:
            texts: The queries (one str: one vector).
            normalize: L2-normalise the output rows (default True; see :meth:`encode`).
            progress: Show a progress bar (tokens).
            **kwargs: Other :meth:`encode` arguments (``normalize_embeddings``, ``convert_to_tensor``, ...;
                ``prompt_name``/``prompt`` replace the query prompt).

        Returns:
            (len(texts), dim) float32 on the host, in input order (as :meth:`encode`).
        """
        kwargs.setdefault("prompt_name", "query")
        return self.encode(texts, normalize=normalize, progress=progress, **kwargs)

    def encode_document(
        self,
        texts: str | Sequence[str],
        normalize: bool | None = None,
        progress: bool = False,
        macro_window: MacroWindow | None = None,
        **kwargs,
    ) -> np.ndarray:
        """:meth:`encode` with the document prompt (sentence-transformers' ``encode_document``): naive chunks.

        Args:
            texts: The texts (e.g. chunk texts; one str: one vector).
            normalize: L2-normalise the output rows (default True; see :meth:`encode`).
            progress: Show a progress bar (tokens).
            macro_window: Plan for texts longer than one macro window; default as :meth:`encode`.
            **kwargs: Other :meth:`encode` arguments (``normalize_embeddings``, ``convert_to_tensor``, ...).

        Returns:
            (len(texts), dim) float32 on the host, in input order (as :meth:`encode`).
        """
        kwargs.setdefault("prompt_name", "document")
        return self.encode(texts, normalize=normalize, progress=progress, macro_window=macro_window, **kwargs)


def _st_config(path: str) -> dict:
    """A local model folder's ``config_sentence_transformers.json`` (``{}`` where there is none or it is not an
    object: a hub id, a model built in memory, a plain Hugging Face folder)."""
    f = Path(path) / "config_sentence_transformers.json"
    try:
        obj = json.loads(f.read_text(encoding="utf-8")) if f.is_file() else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return obj if isinstance(obj, dict) else {}
