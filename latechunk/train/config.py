"""The settings of a training run (:class:`TrainConfig`), what it did (:class:`TrainResult`) and their defaults.

Tests: ``tests/test_train.py``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

DEFAULT_STRATEGY = "fixed:size=64"
"""The chunks trained on by default: small ones, where late chunking gains most over naive (issue 14's map)."""
DEFAULT_TEMPERATURE = 0.05
"""InfoNCE temperature: cosine similarities are divided by it (sentence-transformers' ``scale=20``)."""
DEFAULT_WARMUP = 0.1
"""Share of the optimiser steps with a linearly rising learning rate."""
DEFAULT_ICT_QUERIES = 1000
"""Inverse-cloze examples drawn from ``--ict CORPUS`` by default."""
ICT_KEEP_PROB = 0.1
"""Inverse cloze: share of examples whose query sentence is left in the passage (Lee et al. 2019 keep 10%, so
the model also learns word overlap); the rest have it removed."""
PRECISIONS = ("auto", "float32", "bfloat16")
"""``--dtype`` values: ``auto`` (bf16 autocast on CUDA and AMX CPUs, else fp32), ``float32``, ``bfloat16``
(autocast; the weights stay float32). See :func:`autocast_dtype`."""
TRAIN_FILE = "latechunk_train.json"
"""The record of a training run, written into the model folder beside sentence-transformers' files."""


@dataclass(frozen=True)
class TrainConfig:
    """The settings of one training run (see ``latechunk train --help``).

    Attributes:
        out: The model folder to write.
        dataset: A dataset ``compare`` reads that has answer spans (``chroma``, ``xquad`` or a path); or None.
        ict: Files/folders of a corpus for label-free inverse-cloze training (:func:`ict_examples`); or None.
            Exactly one of ``dataset`` and ``ict``.
        model: Base model (alias, hub id or folder); None = the bundled all-MiniLM-L6-v2.
        strategy: Chunking SPEC whose chunks are trained on (not ``semantic``).
        macro_window: Macro-window size in tokens, frame included; None = the model's sentence-transformers
            ``max_seq_length`` (256 for MiniLM), else its input limit.
        window_overlap: Content tokens shared by consecutive macro windows; None = the encoder's default.
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
        device: ``auto``, ``cpu``, ``cuda``, ``cuda:N``.
        precision: One of :data:`PRECISIONS`: the dtype the model's forward and backward are autocast to
            (:func:`autocast_dtype`); weights, optimiser state and loss stay float32.
        trust_remote_code: Run the base model repository's own Python code (only for models that need it).
    """

    out: str
    dataset: str | None = None
    ict: tuple[str, ...] | None = None
    model: str | None = None
    strategy: str = DEFAULT_STRATEGY
    macro_window: int | None = None
    window_overlap: int | None = None
    epochs: int = 1
    lr: float = 2e-5
    batch_size: int = 32
    naive_weight: float = 0.5
    fused_weight: float = 0.0
    temperature: float = DEFAULT_TEMPERATURE
    warmup: float = DEFAULT_WARMUP
    weight_decay: float = 0.01
    ict_queries: int = DEFAULT_ICT_QUERIES
    max_queries: int | None = None
    seed: int = 0
    device: str = "auto"
    precision: str = "auto"
    trust_remote_code: bool = False

    def __post_init__(self) -> None:
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
        if self.precision not in PRECISIONS:
            raise ValueError(f"--dtype must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
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
            ``{field: value}``.
        """
        d = asdict(self)
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
