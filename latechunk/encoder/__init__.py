"""The encoder: runs a loaded model; token ids in, unpadded token states out (it never sees strategies).

Loading is :mod:`latechunk.models`; this package runs what it loads, one module per concern:

- :mod:`~latechunk.encoder.core`: :class:`Encoder`: device and dtype, length-sorted token-budget batches, and
  documents longer than a macro window through overlapping macro windows (:meth:`Encoder.iter_token_states`,
  one forward batch at a time; :meth:`Encoder.token_states`, whole documents), the model's own pooling.
- :mod:`~latechunk.encoder.st_encode`: the sentence-transformers face (``encode``, ``encode_query``,
  ``encode_document``, ``prompts``), a base class of :class:`Encoder`.
- :mod:`~latechunk.encoder.batching`: :class:`StateBatch`/:class:`StateBlock` and the token budget per batch.
- :mod:`~latechunk.encoder.isa`: the device, the CPU's bf16 instructions and the default dtype.
- :mod:`~latechunk.encoder.linears`: :class:`OneDNNLinear` (fp32 CPU linears through oneDNN).
- :mod:`~latechunk.encoder.attention`: :func:`attention_implementation` (varlen flash-attention-2 or SDPA).

Every name is importable from ``latechunk.encoder`` as it was from the one module before. Patch a function where
it is used (e.g. ``latechunk.encoder.isa.cpu_has_bf16_matmul``, which :func:`default_dtype` calls).

Tests: ``tests/encoder/test_encoder.py``.
"""

from latechunk.encoder.attention import _set_attention as _set_attention
from latechunk.encoder.attention import attention_implementation
from latechunk.encoder.batching import CPU_BATCH_TOKENS as CPU_BATCH_TOKENS
from latechunk.encoder.batching import GPU_BATCH_TOKENS as GPU_BATCH_TOKENS
from latechunk.encoder.batching import StateBatch, StateBlock, default_batch_tokens
from latechunk.encoder.batching import budget_batches as budget_batches
from latechunk.encoder.core import _OUT_OF_MEMORY as _OUT_OF_MEMORY
from latechunk.encoder.core import Encoder
from latechunk.encoder.core import LoadedModel as LoadedModel
from latechunk.encoder.core import _caller_stacklevel as _caller_stacklevel
from latechunk.encoder.isa import _DTYPES as _DTYPES
from latechunk.encoder.isa import BF16_PROBES as BF16_PROBES
from latechunk.encoder.isa import CPU_DTYPE_ENV as CPU_DTYPE_ENV
from latechunk.encoder.isa import _pick_device as _pick_device
from latechunk.encoder.isa import cpu_bf16_isa as cpu_bf16_isa
from latechunk.encoder.isa import cpu_has_bf16_matmul as cpu_has_bf16_matmul
from latechunk.encoder.isa import default_dtype
from latechunk.encoder.linears import _ENV_BOOL as _ENV_BOOL
from latechunk.encoder.linears import (
    ONEDNN_LINEAR_ENV,
    ONEDNN_MIN_TOKENS,
    OneDNNLinear,
    onednn_linear_available,
)
from latechunk.encoder.linears import _autocast_cpu as _autocast_cpu
from latechunk.encoder.linears import _want_onednn_linear as _want_onednn_linear
from latechunk.encoder.st_encode import PROMPT_NAMES
from latechunk.encoder.st_encode import SentenceTransformerEncode as SentenceTransformerEncode
from latechunk.encoder.st_encode import _st_config as _st_config

__all__ = ["ONEDNN_LINEAR_ENV", "ONEDNN_MIN_TOKENS", "PROMPT_NAMES", "Encoder", "OneDNNLinear", "StateBatch",
           "StateBlock", "attention_implementation", "default_batch_tokens", "default_dtype",
           "onednn_linear_available"]
# names outside __all__ (``name as name``: a re-export) are imported from here by callers and tests as they were
# from the one module before (latechunk.encoder.CPU_DTYPE_ENV, latechunk.encoder._set_attention, ...)
