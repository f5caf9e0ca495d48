"""Every ``nn.Linear`` of an fp32 CPU forward through oneDNN (:class:`OneDNNLinear`), and when an encoder does so.

Tests: ``tests/encoder/test_encoder.py`` (``OneDNNLinear``, ``_want_onednn_linear``).
"""

from __future__ import annotations

import functools
import os

import torch

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

