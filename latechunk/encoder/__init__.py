"""The encoder: runs a loaded model; token ids in, unpadded token states out (it never sees strategies).

A package by concern; every name is importable from ``latechunk.encoder`` as it was from the one module before:

- :mod:`latechunk.encoder.core`: :class:`Encoder` (device and dtype, token-budget batches, macro windows,
  :meth:`Encoder.iter_token_states` and :meth:`Encoder.token_states`).

Tests: ``tests/test_encoder.py``.
"""

from latechunk.encoder.core import _DTYPES as _DTYPES
from latechunk.encoder.core import _ENV_BOOL as _ENV_BOOL
from latechunk.encoder.core import _OUT_OF_MEMORY as _OUT_OF_MEMORY
from latechunk.encoder.core import BF16_PROBES as BF16_PROBES
from latechunk.encoder.core import CPU_BATCH_TOKENS as CPU_BATCH_TOKENS
from latechunk.encoder.core import CPU_DTYPE_ENV as CPU_DTYPE_ENV
from latechunk.encoder.core import GPU_BATCH_TOKENS as GPU_BATCH_TOKENS
from latechunk.encoder.core import (
    ONEDNN_LINEAR_ENV,
    ONEDNN_MIN_TOKENS,
    PROMPT_NAMES,
    Encoder,
    OneDNNLinear,
    StateBatch,
    StateBlock,
    attention_implementation,
    default_batch_tokens,
    default_dtype,
    onednn_linear_available,
)
from latechunk.encoder.core import LoadedModel as LoadedModel
from latechunk.encoder.core import _autocast_cpu as _autocast_cpu
from latechunk.encoder.core import _caller_stacklevel as _caller_stacklevel
from latechunk.encoder.core import _pick_device as _pick_device
from latechunk.encoder.core import _set_attention as _set_attention
from latechunk.encoder.core import _st_config as _st_config
from latechunk.encoder.core import _want_onednn_linear as _want_onednn_linear
from latechunk.encoder.core import cpu_bf16_isa as cpu_bf16_isa
from latechunk.encoder.core import cpu_has_bf16_matmul as cpu_has_bf16_matmul

__all__ = ["ONEDNN_LINEAR_ENV", "ONEDNN_MIN_TOKENS", "PROMPT_NAMES", "Encoder", "OneDNNLinear", "StateBatch",
           "StateBlock", "attention_implementation", "default_batch_tokens", "default_dtype",
           "onednn_linear_available"]
# names outside __all__ (``name as name``: a re-export) are imported from here by callers and tests as they were
# from the one module before (latechunk.encoder.CPU_DTYPE_ENV, latechunk.encoder._set_attention, ...)
