"""``latechunk train``: contrastive fine-tuning of an encoder for late chunking (see :mod:`latechunk.train.loop`).

Every name is importable from ``latechunk.train`` as it was from the one module before.

Tests: ``tests/test_train.py``, ``tests/test_train_precision.py``, ``tests/test_trained_on.py``.
"""

from latechunk.train.loop import _OPTION_NAMES as _OPTION_NAMES
from latechunk.train.loop import (
    CHECKPOINT_DIR,
    DEFAULT_CHECKPOINT_EVERY,
    DEFAULT_ICT_QUERIES,
    DEFAULT_STRATEGY,
    DEFAULT_TEMPERATURE,
    DEFAULT_WARMUP,
    ICT_KEEP_PROB,
    PRECISIONS,
    TRAIN_FILE,
    TrainConfig,
    TrainExample,
    TrainResult,
    autocast_dtype,
    ict_examples,
    supervised_examples,
    train,
)
from latechunk.train.loop import CHECKPOINT_FILE as CHECKPOINT_FILE
from latechunk.train.loop import _after_step as _after_step
from latechunk.train.loop import _check_out as _check_out
from latechunk.train.loop import _cpu_has_amx as _cpu_has_amx
from latechunk.train.loop import _dataset_path as _dataset_path
from latechunk.train.loop import _DocPlan as _DocPlan
from latechunk.train.loop import _examples as _examples
from latechunk.train.loop import _forward as _forward
from latechunk.train.loop import _fused_targets as _fused_targets
from latechunk.train.loop import _info_nce as _info_nce
from latechunk.train.loop import _keep_base_limits as _keep_base_limits
from latechunk.train.loop import _late_step_vectors as _late_step_vectors
from latechunk.train.loop import _load as _load
from latechunk.train.loop import _overlapping as _overlapping
from latechunk.train.loop import _passage as _passage
from latechunk.train.loop import _plan_documents as _plan_documents
from latechunk.train.loop import _pooled_texts as _pooled_texts
from latechunk.train.loop import _query_tok as _query_tok
from latechunk.train.loop import _random_state as _random_state
from latechunk.train.loop import _read_checkpoint as _read_checkpoint
from latechunk.train.loop import _restore as _restore
from latechunk.train.loop import _save_checkpoint as _save_checkpoint
from latechunk.train.loop import _usual_file_modes as _usual_file_modes
from latechunk.train.loop import same_dataset as same_dataset
from latechunk.train.loop import trained_on as trained_on

__all__ = [
    "DEFAULT_ICT_QUERIES",
    "PRECISIONS",
    "DEFAULT_STRATEGY",
    "DEFAULT_TEMPERATURE",
    "DEFAULT_WARMUP",
    "ICT_KEEP_PROB",
    "TRAIN_FILE",
    "CHECKPOINT_DIR",
    "DEFAULT_CHECKPOINT_EVERY",
    "TrainConfig",
    "TrainExample",
    "TrainResult",
    "autocast_dtype",
    "ict_examples",
    "supervised_examples",
    "train",
]
