"""The ONNX Runtime CPU backend of the encoder: a Hugging Face encoder exported once to ONNX, run by ONNX Runtime.

:class:`~latechunk.encoder.Encoder` with ``backend="onnx"`` (``--backend onnx``) runs its forward passes here
instead of in torch; ``backend="onnx-int8"`` runs a dynamically int8-quantized copy (weights int8, activations
quantized per batch; ONNX Runtime's ``quantize_dynamic``). The GPU stays torch: this backend is for the CPU.

The export (:func:`export_onnx`):

1. ``torch.onnx.export`` (TorchScript exporter, opset 17) of ``(input_ids, attention_mask) -> last_hidden_state``
   with dynamic batch and sequence axes, traced with eager attention (the graph pattern ONNX Runtime's fusion
   recognises; SDPA traces into one it does not). optimum's exporter is not used: optimum-onnx 0.1 needs
   transformers < 5 and latechunk runs transformers 5.
2. ONNX Runtime's transformer optimizer (``onnxruntime.transformers.optimizer.optimize_model``, model type
   ``bert``) fuses attention, LayerNorm and GELU where it recognises the model (BERT-like); any other model keeps
   the plain export.
3. For ``onnx-int8``: ``onnxruntime.quantization.quantize_dynamic`` (QInt8 weights, one scale per output channel;
   activations quantized per batch) of the optimized graph. Per-channel weight scales keep MiniLM's lowest chunk
   cosine to torch's at 0.986 where one scale per tensor fell to 0.897 (``scripts/bench_onnx.py``,
   ``results/onnx.md``).

Exports are cached by key (:func:`cache_key`: the model's weight hash, the variant and the versions of torch,
transformers and onnxruntime) under :func:`onnx_cache_dir` (``$LATECHUNK_CACHE/onnx``, default
``~/.cache/latechunk/onnx``), written to a temporary folder and moved into place, so concurrent runs never read a
half-written file. The fp32 export matches torch's token states within 1e-4 (max abs difference,
``tests/test_onnx.py``).

Needs the extra ``[onnx]`` (``onnx``, ``onnxruntime``). Tests: ``tests/test_onnx.py``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

__all__ = ["BACKENDS", "OnnxRunner", "cache_key", "export_onnx", "graph_ops", "onnx_cache_dir", "state_hash"]

log = logging.getLogger("latechunk")

BACKENDS = ("torch", "onnx", "onnx-int8")
"""Encoder backends: torch (any device), ONNX Runtime fp32 and dynamic int8 (CPU only)."""

CACHE_ENV_VAR = "LATECHUNK_CACHE"
"""Environment variable naming latechunk's cache folder (default ``~/.cache/latechunk``)."""

OPSET = 17
_FORMAT = "2"  # 2: per-channel int8 weights; bumped when the export recipe changes (part of the cache key)


def _need_onnx():
    try:
        import onnx  # noqa: F401
        import onnxruntime
    except ImportError as err:
        raise ImportError(
            f"the onnx backend needs onnx and onnxruntime ({err.name} is missing): pip install 'latechunk[onnx]'"
        ) from err
    return onnxruntime


def onnx_cache_dir() -> Path:
    """The folder of cached ONNX exports.

    Returns:
        ``$LATECHUNK_CACHE/onnx``, else ``~/.cache/latechunk/onnx`` (not created here).
    """
    base = os.environ.get(CACHE_ENV_VAR)
    return (Path(base) if base else Path.home() / ".cache" / "latechunk") / "onnx"


def state_hash(model: torch.nn.Module) -> str:
    """sha256 over a model's parameters and buffers (names, shapes, dtypes, bytes): the cache key of a model that
    has no weight files (one built in memory).

    Args:
        model: The torch module.

    Returns:
        64 hex digits.
    """
    import torch

    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        t = t.detach().cpu().contiguous()
        h.update(f"{name}:{tuple(t.shape)}:{t.dtype}\n".encode())
        if t.numel():
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def cache_key(weights_sha256: str, variant: str) -> str:
    """The cache key of one export.

    Args:
        weights_sha256: The model's weight hash (:attr:`LoadedModel.sha256 <latechunk.models.LoadedModel.sha256>`,
            or :func:`state_hash`).
        variant: ``"fp32"`` or ``"int8"``.

    Returns:
        24 hex digits: sha256 of the weight hash, the variant, the export recipe and the versions of torch,
        transformers and onnxruntime.
    """
    import onnxruntime
    import torch
    import transformers

    text = "|".join([weights_sha256, variant, _FORMAT, str(OPSET), torch.__version__, transformers.__version__,
                     onnxruntime.__version__])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class _LastHidden:
    """Wraps a Hugging Face model as ``(input_ids, attention_mask) -> last_hidden_state`` for the exporter."""

    def __new__(cls, model):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, input_ids, attention_mask):
                out = self.m(input_ids=input_ids, attention_mask=attention_mask)
                return out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]

        return Wrapped(model).eval()


def _set_attn(model, impl: str | None) -> str | None:
    """Switch a transformers model's attention implementation; return the previous one (None where unknown)."""
    cfg = getattr(model, "config", None)
    before = getattr(cfg, "_attn_implementation", None)
    if impl is None or before is None or before == impl:
        return before
    try:
        model.set_attn_implementation(impl)
    except Exception:  # noqa: BLE001  (older transformers or a model without the switch: keep what it has)
        return before
    return before


def _export_fp32(model, path: Path) -> None:
    import torch

    before = _set_attn(model, "eager")
    try:
        ids = torch.full((2, 16), 1000, dtype=torch.int64)
        mask = torch.ones_like(ids)
        mask[1, 9:] = 0
        axes = {"batch": 0, "sequence": 1}
        dyn = {n: {v: k for k, v in axes.items()} for n in ("input_ids", "attention_mask", "last_hidden_state")}
        import warnings

        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(_LastHidden(model), (ids, mask), str(path), input_names=["input_ids", "attention_mask"],
                              output_names=["last_hidden_state"], dynamic_axes=dyn, opset_version=OPSET, dynamo=False)
    finally:
        if before is not None:
            _set_attn(model, before)


def _optimize(model, src: Path, dst: Path) -> bool:
    """ONNX Runtime's transformer fusions for a BERT-like model; False (``src`` kept) where they do not apply."""
    cfg = getattr(model, "config", None)
    heads, hidden = getattr(cfg, "num_attention_heads", 0), getattr(cfg, "hidden_size", 0)
    if getattr(cfg, "model_type", "") not in ("bert", "roberta", "xlm-roberta", "distilbert", "mpnet", "electra"):
        return False
    try:
        from onnxruntime.transformers.optimizer import optimize_model

        opt = optimize_model(str(src), model_type="bert", num_heads=int(heads), hidden_size=int(hidden), opt_level=1)
        opt.save_model_to_file(str(dst))
        return True
    except Exception as err:  # noqa: BLE001  (an unfamiliar graph: the plain export still runs)
        log.warning("onnx: transformer fusions failed (%s); using the plain export", err)
        return False


def export_onnx(model: torch.nn.Module, weights_sha256: str, variant: str = "fp32",
                cache_dir: str | os.PathLike | None = None) -> Path:
    """The ONNX file of a model's ``last_hidden_state``, exported on first use and cached by key.

    Args:
        model: A Hugging Face encoder (``AutoModel``) on the CPU in float32, returning ``last_hidden_state``
            (batch, sequence, hidden).
        weights_sha256: Its weight hash (``""``: :func:`state_hash` is computed).
        variant: ``"fp32"`` or ``"int8"`` (dynamic int8 quantization of the fp32 export).
        cache_dir: Where exports are kept; default :func:`onnx_cache_dir`.

    Returns:
        Path of ``model.onnx`` in ``<cache_dir>/<cache_key>/``.

    Raises:
        ImportError: without onnx/onnxruntime (names the extra ``[onnx]``).
        ValueError: on an unknown variant, or a model that does not export (the message names the model type).
    """
    _need_onnx()
    if variant not in ("fp32", "int8"):
        raise ValueError(f"variant must be 'fp32' or 'int8', got {variant!r}")
    sha = weights_sha256 or state_hash(model)
    folder = Path(cache_dir) if cache_dir is not None else onnx_cache_dir()
    target = folder / cache_key(sha, variant) / "model.onnx"
    if target.is_file():
        return target
    if variant == "int8":
        src = export_onnx(model, sha, "fp32", folder)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".export-", dir=folder))
    try:
        if variant == "fp32":
            raw = tmp / "raw.onnx"
            try:
                _export_fp32(model, raw)
            except Exception as err:
                kind = getattr(getattr(model, "config", None), "model_type", type(model).__name__)
                raise ValueError(f"cannot export model type {kind!r} to ONNX: {err} (use --backend torch)") from err
            out = tmp / "model.onnx"
            if not _optimize(model, raw, out):
                raw.rename(out)
        else:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            out = tmp / "model.onnx"
            import onnx

            # the fused graph has com.microsoft ops shape inference cannot type: their outputs are float32
            quantize_dynamic(str(src), str(out), weight_type=QuantType.QInt8, per_channel=True,
                             extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        for extra in tmp.glob("*.onnx.data"):  # external data would break the move; MiniLM-sized graphs have none
            raise ValueError(f"ONNX export wrote external data ({extra.name}); models over 2 GB are not supported")
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(out, target)
        log.info("onnx: exported %s (%s) to %s", getattr(model.config, "model_type", "model"), variant, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def graph_ops(path: str | os.PathLike) -> dict[str, int]:
    """How many nodes of each operator an exported graph holds: shows whether ONNX Runtime's transformer fusions
    applied (a fused BERT layer is one ``Attention`` (``QAttention`` in int8), two ``SkipLayerNormalization`` and
    one ``BiasGelu``; the embeddings one ``EmbedLayerNormalization``).

    Args:
        path: An ``.onnx`` file (e.g. from :func:`export_onnx`).

    Returns:
        ``{op_type: count}``, most frequent first.

    Raises:
        ImportError: without onnx (names the extra ``[onnx]``).
    """
    _need_onnx()
    from collections import Counter

    import onnx

    return dict(Counter(n.op_type for n in onnx.load(str(path), load_external_data=False).graph.node).most_common())


class OnnxRunner:
    """Runs an exported encoder with ONNX Runtime on the CPU.

    Args:
        path: The ``model.onnx`` of :func:`export_onnx`.
        threads: Intra-op threads; default torch's thread count (``torch.get_num_threads()``).

    Raises:
        ImportError: without onnxruntime (names the extra ``[onnx]``).
    """

    def __init__(self, path: str | os.PathLike, threads: int | None = None) -> None:
        ort = _need_onnx()
        import torch

        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.threads = int(threads or torch.get_num_threads())
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        self.path = Path(path)
        self.session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        self.input_names = {i.name for i in self.session.get_inputs()}

    def __call__(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """One forward batch.

        Args:
            input_ids: (batch, sequence) int64 token ids (padded).
            attention_mask: (batch, sequence) int64, 1 for tokens, 0 for padding.

        Returns:
            (batch, sequence, hidden) float32 ``last_hidden_state`` (padding positions hold values to ignore).
        """
        feeds: dict[str, Any] = {"input_ids": np.ascontiguousarray(input_ids, dtype=np.int64),
                                 "attention_mask": np.ascontiguousarray(attention_mask, dtype=np.int64)}
        feeds = {k: v for k, v in feeds.items() if k in self.input_names}
        return self.session.run(["last_hidden_state"], feeds)[0]
