"""The settings of a training run (:class:`TrainConfig`), what it did (:class:`TrainResult`) and their defaults.

Tests: ``tests/train/test_train.py``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from latechunk.config import ModelConfig
from latechunk.config.names import renamed

DEFAULT_TRAIN_STRATEGY = "fixed:size=64"
"""The chunks ``latechunk train`` trains on by default: small ones, where late chunking gains most over naive
(issue 14's map). Not :data:`latechunk.config.DEFAULT_STRATEGY` (``embed``'s, what an index is cut into): a
setting of its own. (Old name ``DEFAULT_STRATEGY``, importable until the next release.)"""
DEFAULT_TEMPERATURE = 0.05
"""InfoNCE temperature: cosine similarities are divided by it (sentence-transformers' ``scale=20``)."""
DEFAULT_WARMUP = 0.1
"""Share of the optimiser steps with a linearly rising learning rate."""
DEFAULT_ICT_QUERIES = 1000
"""Inverse-cloze examples drawn from ``--ict CORPUS`` by default."""
ICT_KEEP_PROB = 0.1
"""Inverse cloze: share of examples whose query sentence is left in the passage (Lee et al. 2019 keep 10%, so
the model also learns word overlap); the rest have it removed."""
DTYPES = ("auto", "float32", "bfloat16")
"""Values of :attr:`TrainConfig.dtype` (``--dtype``), the dtype the forward and backward are autocast to:
``auto`` (bf16 autocast on CUDA and AMX CPUs, else fp32), ``float32``, ``bfloat16`` (autocast; the weights stay
float32). See :func:`~latechunk.train.forward.autocast_dtype`. (Old name ``PRECISIONS``, importable until the next
release: ``precision`` is the index's storage, :data:`latechunk.config.PRECISIONS`.)"""
DEFAULT_DTYPE = "auto"
"""The default of :attr:`TrainConfig.dtype`."""
TRAIN_FILE = "latechunk_train.json"
"""The record of a training run, written into the model folder beside sentence-transformers' files."""

_RENAMED_CONSTANTS = {"DEFAULT_STRATEGY": "DEFAULT_TRAIN_STRATEGY", "PRECISIONS": "DTYPES"}
_MODEL_OPTIONS = {"model": "name", "device": "device", "trust_remote_code": "trust_remote_code"}
"""The flat settings of :class:`TrainConfig` that are :class:`~latechunk.config.ModelConfig` fields."""
_RECORD = ("out", "dataset", "ict", "model", "strategy", "macro_window", "window_overlap", "epochs", "lr",
           "batch_size", "naive_weight", "fused_weight", "temperature", "warmup", "weight_decay", "ict_queries",
           "max_queries", "seed", "device", "precision", "trust_remote_code")
"""The keys of ``latechunk_train.json``'s ``config`` (:meth:`TrainConfig.to_dict`), in order: the file keeps the
names it had (``window_overlap``, ``precision``), which a checkpoint's ``--resume`` compares."""


def __getattr__(name: str, _stacklevel: int = 3):
    """The old names of :data:`DEFAULT_TRAIN_STRATEGY` and :data:`DTYPES`, with a DeprecationWarning."""
    if name in _RENAMED_CONSTANTS:
        new = _RENAMED_CONSTANTS[name]
        renamed(f"latechunk.train.{name}", f"latechunk.train.{new}", stacklevel=_stacklevel)
        return globals()[new]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True, init=False)
class TrainConfig:
    """The settings of one training run (see ``latechunk train --help``).

    Attributes:
        out: The model folder to write.
        dataset: A dataset ``compare`` reads that has answer spans (``chroma``, ``xquad`` or a path); or None.
        ict: Files/folders of a corpus for label-free inverse-cloze training (:func:`ict_examples`); or None.
            Exactly one of ``dataset`` and ``ict``.
        model_config: The base model (:class:`~latechunk.config.ModelConfig`, the config ``embed`` loads a model
            with): its ``name`` (alias, hub id or folder; None = the bundled all-MiniLM-L6-v2), ``device``
            (``auto``, ``cpu``, ``cuda``, ``cuda:N``) and ``trust_remote_code`` (run the base model repository's
            own Python code, only for models that need it), given as ``model=``, ``device=``,
            ``trust_remote_code=`` and read back as :attr:`model`, :attr:`device`, :attr:`trust_remote_code`.
            Its other fields are not used: training loads the weights in float32 (``dtype`` below) on torch.
        strategy: Chunking SPEC whose chunks are trained on (not ``semantic``).
        macro_window: Macro-window size in tokens, frame included; None = the model's sentence-transformers
            ``max_seq_length`` (256 for MiniLM), else its input limit.
        macro_window_overlap: Content tokens shared by consecutive macro windows; None = the encoder's default.
            (Old name ``window_overlap``, accepted with a DeprecationWarning.)
        epochs: Passes over the examples.
        lr: Peak learning rate of AdamW.
        batch_size: Queries per optimiser step.
        naive_weight: Weight of the naive InfoNCE term (0: late term only).
        fused_weight: Weight of the fused InfoNCE term (the target chunks' late + naive vectors, each
            unit-normalised, summed; 0: none).
        temperature: InfoNCE temperature (cosine / temperature).
        warmup: Share of the steps with a linearly rising learning rate.
        weight_decay: AdamW weight decay.
        ict_queries: Inverse-cloze examples to draw.
        max_queries: Train on at most this many examples (the first ones after the seeded shuffle); None = all.
        seed: Seed of the shuffle, dropout and the inverse-cloze draw.
        dtype: One of :data:`DTYPES` (``--dtype``): the dtype the model's forward and backward are autocast to
            (:func:`autocast_dtype`); weights, optimiser state and loss stay float32. (Old name ``precision``,
            accepted with a DeprecationWarning: ``precision`` is the index's storage in ``embed``.)

    Raises:
        ValueError: on a setting out of range, neither or both of ``dataset`` and ``ict``, a strategy that needs
            sentence vectors, or a model setting :class:`~latechunk.config.ModelConfig` refuses (an unknown
            device).
        TypeError: on an old and a new name given together.
    """

    out: str
    dataset: str | None
    ict: tuple[str, ...] | None
    model_config: ModelConfig
    strategy: str
    macro_window: int | None
    macro_window_overlap: int | None
    epochs: int
    lr: float
    batch_size: int
    naive_weight: float
    fused_weight: float
    temperature: float
    warmup: float
    weight_decay: float
    ict_queries: int
    max_queries: int | None
    seed: int
    dtype: str

    def __init__(self, out: str, dataset: str | None = None, ict: tuple[str, ...] | None = None,
                 model: str | None = None, strategy: str = DEFAULT_TRAIN_STRATEGY, macro_window: int | None = None,
                 macro_window_overlap: int | None = None, epochs: int = 1, lr: float = 2e-5, batch_size: int = 32,
                 naive_weight: float = 0.5, fused_weight: float = 0.0, temperature: float = DEFAULT_TEMPERATURE,
                 warmup: float = DEFAULT_WARMUP, weight_decay: float = 0.01, ict_queries: int = DEFAULT_ICT_QUERIES,
                 max_queries: int | None = None, seed: int = 0, device: str | None = None,
                 dtype: str | None = None, trust_remote_code: bool | None = None, *,
                 model_config: ModelConfig | None = None, precision: str | None = None,
                 window_overlap: int | None = None) -> None:
        """``model``, ``device`` and ``trust_remote_code`` replace the fields of ``model_config`` (default
        :class:`~latechunk.config.ModelConfig`'s) when given; ``precision`` and ``window_overlap`` are the old
        names of ``dtype`` and ``macro_window_overlap``."""
        if precision is not None:
            renamed("TrainConfig(precision=)", "TrainConfig(dtype=)")
            if dtype is not None:
                raise TypeError("TrainConfig() got both precision= and dtype= (its new name)")
            dtype = precision
        if window_overlap is not None:
            renamed("TrainConfig(window_overlap=)", "TrainConfig(macro_window_overlap=)")
            if macro_window_overlap is not None:
                raise TypeError("TrainConfig() got both window_overlap= and macro_window_overlap= (its new name)")
            macro_window_overlap = window_overlap
        flat = {"model": model, "device": device, "trust_remote_code": trust_remote_code}
        model_config = dataclasses.replace(model_config or ModelConfig(),
                                           **{a: flat[k] for k, a in _MODEL_OPTIONS.items() if flat[k] is not None})
        values = {"out": out, "dataset": dataset, "ict": ict, "model_config": model_config, "strategy": strategy,
                  "macro_window": macro_window, "macro_window_overlap": macro_window_overlap, "epochs": epochs,
                  "lr": lr, "batch_size": batch_size, "naive_weight": naive_weight, "fused_weight": fused_weight,
                  "temperature": temperature, "warmup": warmup, "weight_decay": weight_decay,
                  "ict_queries": ict_queries, "max_queries": max_queries, "seed": seed,
                  "dtype": DEFAULT_DTYPE if dtype is None else dtype}
        for name, value in values.items():
            object.__setattr__(self, name, value)
        self._check()

    # the flat settings, as TrainConfig had them (and latechunk_train.json records them), read-only
    model = property(lambda self: self.model_config.name, doc="The base model: ``model_config.name``.")
    device = property(lambda self: self.model_config.device, doc="``model_config.device``.")
    trust_remote_code = property(lambda self: self.model_config.trust_remote_code,
                                 doc="``model_config.trust_remote_code``.")
    precision = property(lambda self: self.dtype, doc="The old name of :attr:`dtype`.")
    window_overlap = property(lambda self: self.macro_window_overlap,
                              doc="The old name of :attr:`macro_window_overlap`.")

    def _check(self) -> None:
        if (self.dataset is None) == (self.ict is None):
            raise ValueError("give exactly one of --dataset DATASET (queries with answer spans) and --ict CORPUS")
        checks = [("--epochs", self.epochs, 1), ("--batch-size", self.batch_size, 2), ("--ict-queries", self.ict_queries, 1)]
        for name, value, low in checks:
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"--lr must be a positive number, got {self.lr!r}")
        if not (self.naive_weight >= 0 and math.isfinite(self.naive_weight)):
            raise ValueError(f"--naive-weight must be a finite number >= 0, got {self.naive_weight!r}")
        if not (self.fused_weight >= 0 and math.isfinite(self.fused_weight)):
            raise ValueError(f"--fused-weight must be a finite number >= 0, got {self.fused_weight!r}")
        if not self.temperature > 0:
            raise ValueError(f"--temperature must be > 0, got {self.temperature!r}")
        if not 0 <= self.warmup < 1:
            raise ValueError(f"warmup must lie in [0, 1), got {self.warmup!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"--dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if self.max_queries is not None and self.max_queries < 1:
            raise ValueError(f"--max-queries must be >= 1, got {self.max_queries!r}")
        from latechunk.strategies import get_strategy

        strat = get_strategy(self.strategy)
        if strat.needs_sentence_vectors:
            raise ValueError(f"--strategy {self.strategy!r}: {strat.name} needs sentence vectors, which change as the "
                             "model trains; train on another strategy (e.g. fixed:size=64 or recursive)")
        object.__setattr__(self, "strategy", strat.spec)

    def to_dict(self) -> dict:
        """The settings as a JSON-ready dict (``latechunk_train.json``'s ``config``).

        Returns:
            ``{setting: value}`` under the names the file has always used (``model``, ``device``,
            ``trust_remote_code`` flat; ``window_overlap`` for :attr:`macro_window_overlap`, ``precision`` for
            :attr:`dtype`), ``ict`` as a list.
        """
        d = {k: getattr(self, k) for k in _RECORD}
        d["ict"] = list(self.ict) if self.ict is not None else None
        return d


@dataclass
class TrainResult:
    """What a training run did.

    Attributes:
        out: The model folder written.
        n_examples: Training examples used (per epoch).
        n_skipped: Examples left out, by reason (``{reason: count}``).
        steps: Optimiser steps.
        losses: The loss of every step (late + naive_weight * naive + fused_weight * fused).
        late_losses / naive_losses: The two terms of every step.
        fused_losses: The fused term of every step (empty with ``fused_weight`` 0).
        seconds: Wall time of the training loop.
        config: The :class:`TrainConfig`.
        unpooled: Per optimiser step, the chunks its macro windows held only in part, left out of its late
            candidates (:class:`~latechunk.train.forward.StepChunks`); :attr:`n_unpooled` is their sum.
    """

    out: Path
    n_examples: int
    n_skipped: dict[str, int]
    steps: int
    losses: list[float] = field(default_factory=list)
    late_losses: list[float] = field(default_factory=list)
    naive_losses: list[float] = field(default_factory=list)
    fused_losses: list[float] = field(default_factory=list)
    seconds: float = 0.0
    config: TrainConfig | None = None
    unpooled: list[int] = field(default_factory=list)

    @property
    def n_unpooled(self) -> int:
        """Chunks left out of a step's late candidates as not whole in its macro windows, over all steps."""
        return sum(self.unpooled)

    def epoch_means(self) -> list[float]:
        """Mean loss per epoch.

        Returns:
            One mean per epoch (``config.epochs`` values).
        """
        n = self.config.epochs if self.config else 1
        per = max(1, len(self.losses) // n)
        return [float(np.mean(self.losses[i * per:(i + 1) * per])) for i in range(n) if self.losses[i * per:(i + 1) * per]]
