"""The attention implementation an encoder runs a Hugging Face model with (varlen flash-attention-2 or SDPA).

Tests: ``tests/encoder/test_encoder_overlap.py``.
"""

from __future__ import annotations

import torch


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

