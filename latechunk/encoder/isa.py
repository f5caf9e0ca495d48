"""The machine an encoder runs on: the device, the CPU's bf16 instructions and the dtype taken by default.

:func:`default_dtype` picks bf16 on CUDA and on CPUs that multiply bf16 matrices in hardware (:func:`cpu_bf16_isa`:
Intel AMX or AVX-512 BF16), else fp32; ``$LATECHUNK_CPU_DTYPE`` overrides the CPU rule. Tests:
``tests/encoder/test_dtype_default.py``.
"""

from __future__ import annotations

import os

import torch

from latechunk.models import canonical_dtype

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


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


def _pick_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but CUDA is not available (use --device cpu or auto)")
    if device not in ("cpu",) and not device.startswith("cuda") and device != "mps":
        raise ValueError(f"device must be auto, cpu, cuda or cuda:N, got {device!r}")
    return torch.device(device)
