"""Which encoder a run loads and how it runs it: :class:`ModelConfig`. Nothing here imports torch."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass

from latechunk.config._checks import _field_dict, _known_keys, _positive_int, _require
from latechunk.models import DTYPE_NAMES, canonical_dtype

DEVICES = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")
DTYPES = DTYPE_NAMES


@dataclass(frozen=True)
class ModelConfig:
    """Which encoder to load and how to run it.

    Attributes:
        name: Hugging Face model id or local folder; ``None`` = the bundled all-MiniLM-L6-v2 (offline).
        device: ``auto`` (CUDA when present), ``cpu``, ``cuda``, ``cuda:N`` or ``mps``.
        dtype: ``float32``, ``bfloat16`` or ``float16`` (any case; ``fp32``, ``bf16``, ``fp16`` too:
            :func:`latechunk.models.canonical_dtype`); ``None`` = :func:`latechunk.encoder.default_dtype` (bf16 on
            CUDA and on CPUs with AMX or AVX-512 BF16, else fp32); the resolved dtype is recorded in ``run.json``.
        batch_tokens: Token budget of one forward batch (padded tokens: rows x longest row); ``None`` =
            :func:`latechunk.encoder.default_batch_tokens` (4,096 on the CPU, 16,384 on a GPU). It never changes a
            vector: ``run.json`` records the budget the encoder used (:func:`latechunk.ingest.run_settings`), and
            ``--resume`` and ``--append`` take their own without comparing
            (:data:`latechunk.ingest.folder.NOT_COMPARED`).
        trust_remote_code: Run the model repository's own Python code (only for models that need it).
        backend: ``torch`` (any device), ``onnx`` or ``onnx-int8`` (ONNX Runtime on the CPU, float32 only;
            :mod:`latechunk.onnx_backend`).
        compile: Run the torch forward through ``torch.compile`` (:class:`~latechunk.encoder.Encoder`'s
            ``compile``). Not a setting of the output: token states equal the eager ones to float rounding, so it
            is not recorded in ``run.json`` and a run may be resumed with or without it.

    Raises:
        ValueError: on an unknown device, dtype or backend, an ONNX backend on CUDA or with a 16-bit dtype,
            ``compile`` with an ONNX backend, or ``batch_tokens < 1``.
    """

    name: str | None = None
    device: str = "auto"
    dtype: str | None = None
    batch_tokens: int | None = None
    trust_remote_code: bool = False
    backend: str = "torch"
    compile: bool = False

    def __post_init__(self) -> None:
        _require(bool(DEVICES.match(self.device)), f"device must be auto, cpu, cuda or cuda:N, got {self.device!r}")
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype))  # bf16, FP32 ... -> torch's names
        if self.batch_tokens is not None:
            _positive_int("batch_tokens (--batch-tokens)", self.batch_tokens)
        _require(self.backend in ("torch", "onnx", "onnx-int8"),
                 f"backend must be torch, onnx or onnx-int8, got {self.backend!r}")
        _require(self.backend == "torch" or (not self.device.startswith("cuda") and self.dtype in (None, "float32")),
                 f"backend {self.backend!r} runs on the CPU in float32 (got device {self.device!r}, dtype "
                 f"{self.dtype!r}); on a GPU use --backend torch")
        _require(not self.compile or self.backend == "torch",
                 f"--compile applies to the torch backend (torch.compile), not to --backend {self.backend}")

    def to_dict(self) -> dict:
        """Every field, JSON-ready (:meth:`from_dict` reads it back: ``ModelConfig.from_dict(m.to_dict()) == m``).

        Returns:
            ``{"name", "device", "dtype", "batch_tokens", "trust_remote_code", "backend", "compile"}``. (run.json's
            ``model`` block is :meth:`EmbedConfig.to_dict <latechunk.config.EmbedConfig.to_dict>`'s: the settings
            of the output only.)
        """
        return _field_dict(self)

    @classmethod
    def from_dict(cls, d: Mapping) -> ModelConfig:
        """The config of a :meth:`to_dict` mapping, or of part of one (a setting left out has its default).

        Args:
            d: ``{field: value}``.

        Returns:
            The validated :class:`ModelConfig`.

        Raises:
            ValueError: on a key that is not a field (naming it), or as the constructor.
        """
        _known_keys(d, {f.name for f in dataclasses.fields(cls)}, "model settings")
        return cls(**d)
