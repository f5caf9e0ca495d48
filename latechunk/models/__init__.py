"""Loading a model, apart from running it: name resolution, the hub probe, sentence-transformers settings, the
weight hash, and the loaded model as one value (see :mod:`latechunk.models.loading`).

Every name is importable from ``latechunk.models`` as it was from the one module before.

Tests: ``tests/test_models.py``; safety of loading: ``tests/test_safety.py``.
"""

from latechunk.models.loading import _DEFAULT_ALIASES as _DEFAULT_ALIASES
from latechunk.models.loading import _DTYPE_ALIASES as _DTYPE_ALIASES
from latechunk.models.loading import _POOLING_FLAGS as _POOLING_FLAGS
from latechunk.models.loading import (
    DEFAULT_MODEL,
    HUB_PROBE_ENV_VAR,
    HUB_PROBE_TIMEOUT_S,
    HUB_PROBE_TTL_S,
    HubProbe,
    LoadedModel,
    ModelFacts,
    ModelSettings,
    canonical_dtype,
    config_input_limit,
    default_window,
    hub_reachable,
    input_limit,
    resolve_model_path,
    weight_hash,
)
from latechunk.models.loading import DTYPE_NAMES as DTYPE_NAMES
from latechunk.models.loading import _cached_snapshot as _cached_snapshot
from latechunk.models.loading import _FileTokenizer as _FileTokenizer
from latechunk.models.loading import _from_pretrained as _from_pretrained
from latechunk.models.loading import _hub_endpoint as _hub_endpoint
from latechunk.models.loading import _hub_offline as _hub_offline
from latechunk.models.loading import _load_model as _load_model
from latechunk.models.loading import _load_tokenizer as _load_tokenizer
from latechunk.models.loading import _local_file as _local_file
from latechunk.models.loading import _needs_own_code as _needs_own_code
from latechunk.models.loading import _pooling_mode as _pooling_mode
from latechunk.models.loading import _read_json as _read_json
from latechunk.models.loading import _resolve_hub_id as _resolve_hub_id
from latechunk.models.loading import _truthy as _truthy
from latechunk.models.loading import needs_remote_code as needs_remote_code
from latechunk.models.loading import remote_code_message as remote_code_message

__all__ = [
    "DEFAULT_MODEL",
    "HUB_PROBE_ENV_VAR",
    "HUB_PROBE_TIMEOUT_S",
    "HUB_PROBE_TTL_S",
    "HubProbe",
    "LoadedModel",
    "ModelFacts",
    "ModelSettings",
    "canonical_dtype",
    "config_input_limit",
    "default_window",
    "hub_reachable",
    "input_limit",
    "resolve_model_path",
    "weight_hash",
]
