"""A run is one value: frozen, validated configs built once (from the command line or Python) and passed down.

- :class:`ModelConfig`: which encoder and how to run it (device, dtype, token budget, remote code).
- :class:`PipelineConfig`: strategies, modes and the late-pooling settings of :mod:`latechunk.pipeline`.
- :class:`IndexConfig`: the FAISS index, as a faiss ``index_factory`` string (``flat``/``hnsw`` aliases), and its
  compact vectors (``precision``, ``truncate_dim``).
- :class:`EmbedConfig`: one ``latechunk embed`` run: inputs, output folder and policy, and the three above.
  Its :meth:`EmbedConfig.to_dict` is the ``settings`` block of ``run.json`` and of the manifest; a resumed run
  must have the same. :meth:`EmbedConfig.from_dict` reads such settings back (a run.json's, or a file's), and
  :meth:`EmbedConfig.with_overrides` replaces the options given (:data:`EMBED_OPTIONS`, ``latechunk embed``'s
  names); :meth:`EmbedConfig.option_defaults` are their defaults.

Every default is defined once, in the config that holds it (a field default or a named constant here:
:data:`DEFAULT_STRATEGY`, :data:`DEFAULT_MODE`, :data:`DEFAULT_GROUP_TOKENS`, :data:`DEFAULT_INDEX`,
:data:`DEFAULT_HNSW_M`, :data:`DEFAULT_EF_CONSTRUCTION`, :data:`DEFAULT_EF_SEARCH`, :data:`DEFAULT_PRECISION`);
``compare`` and ``train`` read them from here. Settings renamed so that one name has one meaning:
:mod:`latechunk.config.names`.

Every check of a setting lives in the ``__post_init__`` of the config that holds it, so an object that exists is
valid; layers below take the config (or the part they need), never loose options. Settings that need the model
(the macro window beside the model's input limit and frame, late pooling beside the model's own pooling) are
checked in one place, :meth:`PipelineConfig.check_model`, against :class:`~latechunk.models.ModelFacts`: the
command line calls it with the facts read from the model's files before torch is imported or a weight is
loaded (:meth:`ModelFacts.read <latechunk.models.ModelFacts.read>`), and :func:`latechunk.pipeline.iter_embed`
calls it with the loaded encoder's facts, so the Python API gets the same checks. Nothing in this module imports
torch.
"""

# one module per config (model, pipeline, index, embed) and the environment's settings (env); every name the
# module latechunk/config.py had stays importable from here (the private ones too: tests import _nested_input)
from latechunk.config._checks import _positive_int, _require  # noqa: F401
from latechunk.config.embed import (  # noqa: F401
    EMBED_OPTIONS,
    RECORDED_MODEL_FACTS,
    EmbedConfig,
    _nested_input,
    _require_utf8_path,
)
from latechunk.config.env import dist_env
from latechunk.config.index import (  # noqa: F401
    _INDEX_ALIASES,
    _SQ_CODES,
    DEFAULT_EF_CONSTRUCTION,
    DEFAULT_EF_SEARCH,
    DEFAULT_HNSW_M,
    DEFAULT_INDEX,
    DEFAULT_PRECISION,
    INDEX_RECORD_KEYS,
    PRECISIONS,
    RESCORE_MULTIPLIER,
    IndexConfig,
)
from latechunk.config.model import DEVICES, DTYPES, ModelConfig  # noqa: F401
from latechunk.config.pipeline import (  # noqa: F401
    DEFAULT_GROUP_TOKENS,
    DEFAULT_MODE,
    DEFAULT_STRATEGY,
    LATE_POOLINGS,
    MODES,
    Mode,
    PipelineConfig,
    split_specs,
)
from latechunk.types import RecordFields  # noqa: F401  (read by the CLI from here)

__all__ = [
    "DEFAULT_EF_CONSTRUCTION",
    "DEFAULT_EF_SEARCH",
    "DEFAULT_GROUP_TOKENS",
    "DEFAULT_HNSW_M",
    "DEFAULT_INDEX",
    "DEFAULT_MODE",
    "DEFAULT_PRECISION",
    "DEFAULT_STRATEGY",
    "EMBED_OPTIONS",
    "INDEX_RECORD_KEYS",
    "LATE_POOLINGS",
    "MODES",
    "PRECISIONS",
    "RECORDED_MODEL_FACTS",
    "RESCORE_MULTIPLIER",
    "EmbedConfig",
    "IndexConfig",
    "ModelConfig",
    "PipelineConfig",
    "dist_env",
    "split_specs",
]
