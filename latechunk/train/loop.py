"""``latechunk train``: contrastive fine-tuning of an encoder for late chunking.

Late chunking (Günther et al., "Late Chunking: Contextual Chunk Embeddings Using Long-Context Embedding Models",
arXiv:2409.04701) encodes a document once and mean-pools each chunk's token states; its section on span pooling
training, and InSeNT (Conti et al., "Context is Gold to find the Gold Passage", arXiv:2505.24782: in-sequence
negatives with late pooling), show that a short contrastive post-training makes the late-pooled chunk vectors
markedly better. This module does that training:

- **Examples.** ``(document, query, answer char span)``: from any dataset ``latechunk compare`` reads that has
  answer spans (:func:`supervised_examples`), or without labels by the inverse cloze task
  (:func:`ict_examples`, Lee et al., "Latent Retrieval for Weakly Supervised Open Domain Question Answering",
  ACL 2019: a sentence held out of its passage is the query, the passage's chunk where it stood the target).
- **Chunks.** Each document is tokenized once with the encoder's document tokenizer and cut by ``--strategy``
  (any strategy but ``semantic``); a query's *target* is the chunk that holds the largest part of its first
  answer span (characters). Long documents go through the same macro windows as ``latechunk embed``
  (:meth:`Encoder.model_inputs <latechunk.encoder.Encoder.model_inputs>`, each token's state taken from the macro
  window where it has the most context); a step runs, with gradients, only the macro windows that hold its
  queries' target chunks.
- **Loss** (InfoNCE, van den Oord et al. 2018, arXiv:1807.03748; the form of sentence-transformers'
  ``MultipleNegativesRankingLoss``): the query vector (the model's own pooling, query prompt) against the
  late-pooled vectors (mean of the token states over the chunk's token span, frame tokens excluded, as
  ``embed``) of every chunk that the step's macro windows hold whole: the target, the other chunks of the same
  document (*in-sequence negatives*) and the chunks of the other queries' documents (*in-batch negatives*);
  cosine similarity divided by a temperature :data:`DEFAULT_TEMPERATURE` (0.05, i.e. sentence-transformers'
  scale 20). With ``naive_weight > 0`` a second InfoNCE term does the same for the naive vectors of the step's
  target chunks (each chunk's text encoded on its own, in-batch negatives), so the model stays good in naive
  mode; with ``fused_weight > 0`` a third term scores the step's target chunks by their *fused* vectors (late and
  naive each unit-normalised and summed, as ``--mode fused`` serves them: :func:`latechunk.pipeline.fused_vectors`,
  in-batch negatives), so the model learns the vector it is served with in fused mode:
  ``loss = late + naive_weight * naive + fused_weight * fused`` (measured on Chroma, the fused term cost fused mode
  about a point of SpanRecall@5: ``results/fused.md``). For inverse-cloze examples the chunks of *other*
  passages of the query's source document are left out of every term's softmax (passages drawn from
  one document overlap, so such a chunk may hold the target's very text: a false negative).
- **Precision** (``--dtype``; ``--precision``, its old name, still works). The weights, the optimiser state, the pooling and the loss stay float32; with
  ``bfloat16`` the model's forward (and so its backward) runs under ``torch.autocast(dtype=torch.bfloat16)``
  (mixed precision: matrix products in bf16, reductions in fp32). ``auto`` (the default) picks bf16 on CUDA and
  on CPUs that multiply bf16 matrices in hardware (Intel AMX or AVX-512 BF16: :func:`latechunk.encoder.cpu_bf16_isa`), where bf16 matrix
  products run about 2x fp32's speed (inference measured in ``results/bf16.md``; training speed not yet
  measured), and float32
  elsewhere (a CPU without either emulates bf16, slower than fp32). :func:`autocast_dtype` is the rule.
- **Optimiser.** ``torch.optim.AdamW`` with a linear warm-up over the first :data:`DEFAULT_WARMUP` share of the
  steps and a linear decay to zero after it (``torch.optim.lr_scheduler``), gradient norm clipped at 1.
- **Output.** The trained model is saved by sentence-transformers (``SentenceTransformer.save``: ``config.json``,
  tokenizer files, ``modules.json``, Pooling, ``config_sentence_transformers.json`` with the prompts,
  ``sentence_bert_config.json``, ``model.safetensors``), so ``--model MODEL_DIR`` loads it in ``embed``,
  ``compare`` and :class:`~latechunk.api.LateChunker`; ``latechunk_train.json`` beside them records the settings,
  the data and the loss per step.

Tests: ``tests/test_train.py``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from latechunk.types import Document

if TYPE_CHECKING:
    import torch

    from latechunk.encoder import Encoder
    from latechunk.macro_window import MacroWindow, PlannedWindow
    from latechunk.types import Boundaries, Tokenization

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
CHECKPOINT_DIR = ".checkpoint"
"""The folder inside ``--out`` where an unfinished run keeps its last checkpoint (removed when the run ends)."""
CHECKPOINT_FILE = "state.safetensors"
"""The checkpoint in :data:`CHECKPOINT_DIR`: tensors in safetensors, the rest as JSON in its metadata."""
DEFAULT_CHECKPOINT_EVERY = 50
"""Optimiser steps between two checkpoints by default (``--checkpoint-every``)."""


# ------------------------------------------------------------------------------------------------ examples
@dataclass(frozen=True)
class TrainExample:
    """One training query with the place of its answer.

    Attributes:
        query_id: Stable identifier.
        query: The query text.
        doc: The document that holds the answer (shared by the examples of one document).
        span: ``(char_start, char_end)``, half-open character offsets into ``doc.text`` of the answer; the
            target chunk is the one holding most of it.
    """

    query_id: str
    query: str
    doc: Document
    span: tuple[int, int]


def supervised_examples(dataset) -> list[TrainExample]:
    """The examples of a dataset with answer spans: one per query, its first answer span.

    Args:
        dataset: A :class:`latechunk.eval.datasets.EvalDataset` (Chroma, SQuAD/XQuAD, or any format with spans).

    Returns:
        One :class:`TrainExample` per query that has an answer span, in query order.

    Raises:
        ValueError: if no query has an answer span (e.g. a BEIR folder, whose relevance is per document).
    """
    out = []
    for q in dataset.queries:
        if not q.spans:
            continue
        doc_id, start, end = q.spans[0]
        out.append(TrainExample(q.query_id, q.text, dataset.document(doc_id), (int(start), int(end))))
    if not out:
        raise ValueError(
            f"dataset {dataset.name!r} has no answer spans ({len(dataset.queries)} queries, relevance per "
            "document only?): latechunk train needs queries with answer spans (Chroma, SQuAD/XQuAD formats); "
            "to train without labels use --ict CORPUS"
        )
    return out


def _passage(text: str, centre: int, n_chars: int) -> tuple[int, int]:
    """A passage of about ``n_chars`` characters around ``centre``, its ends moved to whitespace."""
    a = max(0, centre - n_chars // 2)
    b = min(len(text), a + n_chars)
    a = max(0, b - n_chars)
    if a > 0:
        ws = text.find(" ", a)
        nl = text.find("\n", a)
        cands = [x for x in (ws, nl) if 0 <= x < centre]
        a = min(cands) + 1 if cands else a
    if b < len(text):
        cands = [x for x in (text.rfind(" ", centre, b), text.rfind("\n", centre, b)) if x > centre]
        b = max(cands) if cands else b
    return a, b


def ict_examples(
    documents: Sequence[Document],
    n_queries: int = DEFAULT_ICT_QUERIES,
    passage_chars: int = 1200,
    seed: int = 0,
    keep_prob: float = ICT_KEEP_PROB,
    segmenter=None,
) -> list[TrainExample]:
    """Label-free examples by the inverse cloze task (Lee et al., ACL 2019, arXiv:1906.00300).

    The masking rule: draw a document (weighted by length) and a character in it, uniformly; cut a *passage*
    of about ``passage_chars`` characters around it (ends moved to whitespace; about one MiniLM macro window);
    segment the passage into sentences (:class:`~latechunk.sentences.SentenceSegmenter`, pysbd) and pick one
    of 5 to 60 words that is neither its first nor its last sentence (so it has context on both sides). The
    sentence is the query. With probability ``1 - keep_prob`` it is removed from the passage (the passage
    becomes ``before + after``, the target span the two characters around the gap: the chunk where the
    sentence stood); else it stays and is its own target span. The passage is the example's document.

    Args:
        documents: The corpus (only its text is read; no questions, no labels).
        n_queries: Examples to draw (fewer if the corpus has too few usable sentences).
        passage_chars: Characters per passage, about.
        seed: Seed of the draw (``random.Random``).
        keep_prob: Share of examples whose sentence stays in the passage.
        segmenter: A :class:`~latechunk.sentences.SentenceSegmenter` (default a new in-process one).

    Returns:
        Up to ``n_queries`` :class:`TrainExample`, each with its own passage document (``doc_id``
        ``"<doc_id>@<start>:<example number>"``, unique per example; ``metadata["source_doc"]``).

    Raises:
        ValueError: if no document has text, or ``n_queries < 1``.
    """
    if n_queries < 1:
        raise ValueError(f"ict: the number of queries must be >= 1, got {n_queries}")
    docs = [d for d in documents if d.text.strip()]
    if not docs:
        raise ValueError("ict: the corpus has no document with text")
    if segmenter is None:
        from latechunk.sentences import SentenceSegmenter

        segmenter = SentenceSegmenter()
    rng = random.Random(seed)
    weights = [len(d.text) for d in docs]
    out: list[TrainExample] = []
    seen: set[tuple[str, int]] = set()
    tries = 0
    while len(out) < n_queries and tries < 20 * n_queries:
        tries += 1
        doc = rng.choices(docs, weights)[0]
        a, b = _passage(doc.text, rng.randrange(len(doc.text)), passage_chars)
        passage = doc.text[a:b]
        spans = np.asarray(segmenter.char_spans(passage, cache=False)).reshape(-1, 2)
        inner = [(int(s), int(e)) for s, e in spans[1:-1] if 5 <= len(passage[s:e].split()) <= 60]
        if not inner:
            continue
        s, e = rng.choice(inner)
        if (doc.doc_id, a + s) in seen:
            continue
        seen.add((doc.doc_id, a + s))
        query = " ".join(passage[s:e].split())
        if rng.random() < keep_prob:
            text, span = passage, (s, e)
        else:
            before, after = passage[:s].rstrip(), passage[e:].lstrip()
            text = f"{before} {after}" if before and after else before or after
            cut = len(before)
            span = (max(0, cut - 1), min(len(text), cut + 1))
        # one passage document per example: two examples can share a passage start (a short document gives every
        # draw a == 0) but not its text (each removes its own sentence), and the trainer plans documents by id
        pdoc = Document(f"{doc.doc_id}@{a}:{len(out)}", text,
                        {"source_doc": doc.doc_id, "source": doc.metadata.get("source", "")})
        out.append(TrainExample(f"ict:{len(out)}", query, pdoc, span))
    return out


def _dataset_path(spec: str | None) -> str | None:
    """The resolved path of a ``--dataset`` (a bundled name's file or folder under the data root), recorded so
    that ``compare`` recognises the dataset from any directory and under any of its names; None without one."""
    if not spec:
        return None
    from latechunk.eval.datasets import dataset_path

    try:
        return str(dataset_path(spec).resolve())
    except (OSError, ValueError, FileNotFoundError):
        return None


def same_dataset(recorded: str, path: str | None, spec: str) -> bool:
    """Whether a training record's dataset (its ``--dataset`` text and resolved ``dataset_path``) is the dataset
    ``spec`` (a bundled name or a path) names: the same name, or the same resolved path (or the folder holding
    the other's file: ``xquad`` is ``DATA/xquad_en/xquad.en.json``, named also by ``DATA/xquad_en``).

    Args:
        recorded: The ``--dataset`` the model was trained on, as given.
        path: Its resolved path as recorded (None in records written before it).
        spec: The dataset to compare with.

    Returns:
        True when both name one dataset.
    """
    if recorded.strip() == spec.strip():
        return True
    mine = _dataset_path(spec)
    theirs = path or _dataset_path(recorded)
    if mine is None or theirs is None:
        return False
    a, b = Path(mine), Path(theirs)
    return a == b or a.parent == b or b.parent == a  # a dataset's file, or the folder that holds it


def trained_on(model: str | Path | None, depth: int = 8) -> list[tuple[str, str | None]]:
    """The labelled datasets a model folder was trained on by ``latechunk train --dataset``, its base models'
    included (each folder's :data:`TRAIN_FILE` names its base model): what ``compare`` checks its dataset
    against, since a score on questions the model was trained on is not a held-out score.

    Args:
        model: A model folder (a name or a folder without :data:`TRAIN_FILE`: ``[]``).
        depth: Base models followed at most.

    Returns:
        ``(--dataset as given, its resolved path or None)`` per training, nearest first; ``--ict`` runs (no
        questions) are not listed.
    """
    out: list[tuple[str, str | None]] = []
    path = Path(model) if model else None
    for _ in range(depth):
        if path is None or not (path / TRAIN_FILE).is_file():
            break
        try:
            record = json.loads((path / TRAIN_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            break
        dataset = (record.get("config") or {}).get("dataset")
        if dataset:
            out.append((str(dataset), record.get("dataset_path")))
        base = record.get("base_model")
        path = Path(base) if isinstance(base, str) and base and Path(base) != path else None
    return out


# ------------------------------------------------------------------------------------------------ config
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

    def epoch_means(self) -> list[float]:
        """Mean loss per epoch.

        Returns:
            One mean per epoch (``config.epochs`` values).
        """
        n = self.config.epochs if self.config else 1
        per = max(1, len(self.losses) // n)
        return [float(np.mean(self.losses[i * per:(i + 1) * per])) for i in range(n) if self.losses[i * per:(i + 1) * per]]


# ------------------------------------------------------------------------------------------------ documents
@dataclass
class _DocPlan:
    """One document as trained on: its tokenization, chunks and macro-window inputs (computed once)."""

    doc: Document
    tok: Tokenization
    bounds: Boundaries
    rows: list[np.ndarray]  # model inputs (token ids), one per macro window
    plan: list[PlannedWindow]
    keep_ends: np.ndarray  # (n_windows,) content-token keep_end of each window (for searchsorted)

    def target(self, span: tuple[int, int]) -> int:
        """The chunk holding most of a char span (-1 if none touches it)."""
        cs = self.bounds.char_spans.astype(np.int64)
        s, e = span
        overlap = np.minimum(cs[:, 1], e) - np.maximum(cs[:, 0], s)
        j = int(np.argmax(overlap))
        return j if overlap[j] > 0 else -1

    def windows_of(self, j: int) -> range:
        """The macro windows whose kept tokens hold chunk ``j``'s tokens."""
        a, b = (self.bounds.token_spans[j] - self.tok.n_lead).tolist()
        w0 = int(np.searchsorted(self.keep_ends, a, side="right"))
        w1 = int(np.searchsorted(self.keep_ends, b - 1, side="right"))
        return range(w0, w1 + 1)


def _plan_documents(examples: Sequence[TrainExample], encoder: Encoder, strategy: str, mw: MacroWindow,
                    progress: bool) -> tuple[dict[str, _DocPlan], list[tuple[TrainExample, int]], dict[str, int]]:
    from latechunk.sentences import SentenceSegmenter
    from latechunk.strategies import get_strategy

    strat = get_strategy(strategy).for_model(encoder.max_length - encoder.tokenizer.n_frame)
    docs: dict[str, Document] = {}
    for ex in examples:
        docs.setdefault(ex.doc.doc_id, ex.doc)
    plans: dict[str, _DocPlan] = {}
    skipped: dict[str, int] = {}
    seg = SentenceSegmenter()
    it = docs.values()
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, total=len(docs), desc="chunk", unit="doc", leave=False)
    for doc in it:
        tok = encoder.tokenizer(doc)
        if tok.n_content == 0:
            continue
        b = strat.split(doc, tok, None, sentences=seg)
        rows, plan = encoder.model_inputs(tok, mw)
        plans[doc.doc_id] = _DocPlan(doc, tok, b, rows, plan, np.asarray([w.keep_end for w in plan], dtype=np.int64))
    pairs = []
    for ex in examples:
        p = plans.get(ex.doc.doc_id)
        if p is None:
            skipped["document without tokens"] = skipped.get("document without tokens", 0) + 1
            continue
        j = p.target(ex.span)
        if j < 0:
            skipped["answer span in no chunk"] = skipped.get("answer span in no chunk", 0) + 1
            continue
        pairs.append((ex, j))
    return plans, pairs, skipped


# ------------------------------------------------------------------------------------------------ forward
def _cpu_has_amx() -> bool:
    """Whether this CPU multiplies bf16 matrices in hardware: :func:`latechunk.encoder.cpu_has_bf16_matmul` (one
    probe for inference and training; a seam the tests replace)."""
    from latechunk import encoder as encoder_module

    return encoder_module.cpu_has_bf16_matmul()


def autocast_dtype(precision: str, device_type: str, amx: bool | None = None) -> torch.dtype | None:
    """The dtype the training forward is autocast to, or None for plain float32.

    Args:
        precision: One of :data:`PRECISIONS`. ``auto``: bfloat16 on ``cuda``, and on ``cpu`` when the CPU has
            hardware bf16 matrix products (``amx``: AMX or AVX-512 BF16), else None; on ``cpu`` with ``amx`` not
            given, ``$LATECHUNK_CPU_DTYPE`` (float32 or bfloat16) decides first, as it does for the encoder; ``float32``: None; ``bfloat16``: bfloat16 on ``cpu`` and ``cuda`` (on a CPU
            without AMX it is emulated and slower than fp32, but runs).
        device_type: ``torch.device.type`` of the model (``cpu``, ``cuda``, ``mps``, ...). Other types than
            ``cpu``/``cuda`` always get None.
        amx: Whether the CPU multiplies bf16 matrices in hardware; None = :func:`latechunk.encoder.cpu_has_bf16_matmul`.

    Returns:
        ``torch.bfloat16`` or None.

    Raises:
        ValueError: on a ``precision`` not in :data:`PRECISIONS`.
    """
    import torch

    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision == "float32" or device_type not in ("cpu", "cuda"):
        return None
    if precision == "bfloat16" or device_type == "cuda":
        return torch.bfloat16
    if amx is None:
        import os

        from latechunk.encoder import CPU_DTYPE_ENV
        from latechunk.models import canonical_dtype

        env = os.environ.get(CPU_DTYPE_ENV, "auto").strip().lower() or "auto"
        if env != "auto":  # the CPU rule the encoder follows (embed, compare) holds for training too
            return torch.bfloat16 if canonical_dtype(env, f"${CPU_DTYPE_ENV} (auto, float32, bfloat16 or float16)") \
                == "bfloat16" else None
        amx = _cpu_has_amx()
    return torch.bfloat16 if amx else None


def _forward(model, rows: Sequence[np.ndarray], pad_id: int, device,
             amp: torch.dtype | None = None) -> tuple[torch.Tensor, int]:
    """Padded forward with gradients: ``(n_rows * longest, dim)`` float32 states and ``longest``; under
    ``torch.autocast(device.type, amp)`` when ``amp`` is a dtype."""
    import torch

    longest = max(len(r) for r in rows)
    ids_np = np.full((len(rows), longest), pad_id, dtype=np.int64)
    mask_np = np.zeros((len(rows), longest), dtype=np.int64)
    for i, r in enumerate(rows):
        ids_np[i, : len(r)] = r
        mask_np[i, : len(r)] = 1
    ids, mask = torch.from_numpy(ids_np).to(device), torch.from_numpy(mask_np).to(device)
    autocast = torch.autocast(device.type, dtype=amp) if amp is not None else contextlib.nullcontext()
    with autocast:
        out = model(input_ids=ids, attention_mask=mask)
    hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
    return hidden.float().reshape(len(rows) * longest, hidden.shape[-1]), longest


def _pooled_texts(encoder: Encoder, toks: Sequence[Tokenization], pad_id: int,
                  amp: torch.dtype | None = None) -> torch.Tensor:
    """The model's own pooling of short inputs (queries, naive chunks), with gradients: (n, dim) float32."""
    import torch

    states, longest = _forward(encoder.model, [t.input_ids for t in toks], pad_id, encoder.device, amp)
    return torch.stack([encoder.pool_model(states[i * longest: i * longest + len(t)], t) for i, t in enumerate(toks)])


def _late_step_vectors(batch: Sequence[tuple[TrainExample, int]], plans: dict[str, _DocPlan], encoder: Encoder,
                       pad_id: int, amp: torch.dtype | None = None
                       ) -> tuple[torch.Tensor, list[int], list[tuple[str, int]]]:
    """Late-pooled vectors of every chunk the step's macro windows hold whole.

    Returns ``(vectors (n_chunks, dim), target row per query, (doc_id, chunk) per row)``.
    """
    import torch

    need: dict[str, set[int]] = {}
    for ex, j in batch:
        need.setdefault(ex.doc.doc_id, set()).update(plans[ex.doc.doc_id].windows_of(j))
    rows, where = [], []  # where: (doc_id, window index) per model input
    for d, ws in need.items():
        for w in sorted(ws):
            rows.append(plans[d].rows[w])
            where.append((d, w))
    states, longest = _forward(encoder.model, rows, pad_id, encoder.device, amp)
    src_of: dict[str, np.ndarray] = {}
    for r, (d, w) in enumerate(where):
        p = plans[d]
        src = src_of.setdefault(d, np.full(p.tok.n_content, -1, dtype=np.int64))
        win = p.plan[w]
        pos = np.arange(win.keep_start, win.keep_end, dtype=np.int64)
        src[pos] = r * longest + p.tok.n_lead + (pos - win.start)
    keys: list[tuple[str, int]] = []
    idx_parts, seg_parts = [], []
    for d, src in src_of.items():
        p = plans[d]
        for j, (a, b) in enumerate((p.bounds.token_spans.astype(np.int64) - p.tok.n_lead).tolist()):
            rows_j = src[a:b]
            if (rows_j < 0).any():
                continue  # not whole in this step's macro windows
            idx_parts.append(rows_j)
            seg_parts.append(np.full(b - a, len(keys), dtype=np.int64))
            keys.append((d, j))
    idx = torch.from_numpy(np.concatenate(idx_parts)).to(states.device)
    seg = torch.from_numpy(np.concatenate(seg_parts)).to(states.device)
    sums = torch.zeros((len(keys), states.shape[1]), dtype=states.dtype, device=states.device)
    sums = sums.index_add(0, seg, states.index_select(0, idx))
    counts = torch.bincount(seg, minlength=len(keys)).to(states.dtype).unsqueeze(1)
    row_of = {k: i for i, k in enumerate(keys)}
    targets = [row_of[(ex.doc.doc_id, j)] for ex, j in batch]
    return sums / counts, targets, keys


def _fused_targets(late: torch.Tensor, targets: Sequence[int], naive: torch.Tensor,
                   cols: Sequence[int]) -> torch.Tensor:
    """The fused vectors of a step's distinct target chunks, as ``--mode fused`` serves them (unit late + unit
    naive; :func:`latechunk.pipeline.fused_vectors` then normalises, which the InfoNCE cosine does here).

    Args:
        late: (n_candidates, dim) float32 late vectors of the step (:func:`_late_step_vectors`).
        targets: Per query of the batch, its target's row in ``late``.
        naive: (n_distinct, dim) float32 naive vectors of the distinct target chunks.
        cols: Per query of the batch, its target's row in ``naive`` (queries sharing a chunk share a row).

    Returns:
        (n_distinct, dim) float32: row i is the fused vector of ``naive``'s chunk i.
    """
    import torch.nn.functional as F

    rows = [0] * len(naive)
    for t, c in zip(targets, cols):
        rows[c] = t
    return F.normalize(late[rows], dim=1) + F.normalize(naive, dim=1)


def _info_nce(q: torch.Tensor, c: torch.Tensor, targets: Sequence[int], temperature: float,
              exclude: np.ndarray | None = None) -> torch.Tensor:
    """InfoNCE: cross-entropy of cosine(q, c) / temperature against the target column of each query; candidates
    where ``exclude[i, j]`` is True are left out of query i's softmax (never its target)."""
    import torch
    import torch.nn.functional as F

    logits = F.normalize(q, dim=1) @ F.normalize(c, dim=1).T / temperature
    if exclude is not None and exclude.any():
        logits = logits.masked_fill(torch.from_numpy(exclude).to(logits.device), float("-inf"))
    return F.cross_entropy(logits, torch.as_tensor(list(targets), device=logits.device))


def _overlapping(batch: Sequence[tuple[TrainExample, int]], keys: Sequence[tuple[str, int]],
                 plans: dict[str, _DocPlan]) -> np.ndarray | None:
    """Inverse cloze: a candidate from another passage of the query's source document may hold the very text of
    the target (passages drawn from one document overlap), so it is no negative: (n_queries, n_candidates) True
    where left out. None for supervised examples (no ``source_doc``)."""
    src = {d: p.doc.metadata.get("source_doc") for d, p in plans.items()}
    if not any(v is not None for v in src.values()):
        return None
    out = np.zeros((len(batch), len(keys)), dtype=bool)
    for i, (ex, _) in enumerate(batch):
        mine = src[ex.doc.doc_id]
        for j, (d, _) in enumerate(keys):
            out[i, j] = mine is not None and d != ex.doc.doc_id and src[d] == mine
    return out


def _query_tok(encoder: Encoder, text: str, limit: int) -> Tokenization:
    """The query's tokenization, content cut to fit ``limit`` tokens (an inverse-cloze sentence can be long)."""
    from latechunk.types import Tokenization

    t = encoder.query_tokenizer(text)
    if len(t) <= limit:
        return t
    keep = limit - t.n_lead - t.n_trail
    ids = np.concatenate([t.input_ids[: t.n_lead + keep], t.input_ids[t.content_end:]])
    offs = np.concatenate([t.offsets[: t.n_lead + keep], t.offsets[t.content_end:]])
    mask = np.concatenate([t.special_tokens_mask[: t.n_lead + keep], t.special_tokens_mask[t.content_end:]])
    return Tokenization(ids, offs, mask, t.n_lead, t.n_trail)


# ------------------------------------------------------------------------------------------------ the run
def _load(config: TrainConfig):
    """The sentence-transformers model (for saving) and an Encoder around its transformer (for running)."""
    import logging

    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as err:
        raise ValueError("latechunk train saves the model with sentence-transformers: pip install 'latechunk[train]'") from err

    from transformers.utils import logging as hf_logging

    from latechunk.encoder import Encoder
    from latechunk.models import DEFAULT_MODEL, LoadedModel, ModelSettings, resolve_model_path

    path = resolve_model_path(config.model)
    logging.getLogger("sentence_transformers").setLevel(logging.ERROR)
    hf_logging.disable_progress_bar()  # "Loading weights", "Writing model shards": train's own bar says enough
    from latechunk.models import needs_remote_code, remote_code_message

    try:
        st = SentenceTransformer(path, device="cpu", trust_remote_code=config.trust_remote_code)
    except Exception as err:
        if not config.trust_remote_code and needs_remote_code(err):
            raise ValueError(remote_code_message(config.model or DEFAULT_MODEL)) from err
        raise ValueError(f"cannot load model {config.model or DEFAULT_MODEL!r} with sentence-transformers: {err}") from err
    hf = st[0].auto_model
    loaded = LoadedModel(config.model or DEFAULT_MODEL, hf, st.tokenizer, ModelSettings.read(path), path=path)
    encoder = Encoder(loaded, device=config.device, dtype="float32")
    return st, encoder


def _keep_base_limits(out: Path, base: Path, max_seq_length: int | None) -> None:
    """Give the saved model its base's input limit and ``max_seq_length`` back.

    sentence-transformers 6 saves ``max_seq_length`` as the tokenizer's ``model_max_length`` and no longer in
    ``sentence_bert_config.json``, so a model trained from all-MiniLM-L6-v2 read back with an input limit of 256
    tokens (the base: 512) and no ``max_seq_length``: ``search`` over an index built with the base model failed
    with "max_length=512 exceeds the model's limit of 256 tokens". The base's ``model_max_length`` goes back into
    ``tokenizer_config.json`` and ``max_seq_length`` into ``sentence_bert_config.json``, which
    sentence-transformers reads first (it then caps its tokenizer at that length, as for the base model).
    """
    tok_path, sb_path = out / "tokenizer_config.json", out / "sentence_bert_config.json"
    try:
        base_mml = json.loads((base / "tokenizer_config.json").read_text(encoding="utf-8")).get("model_max_length")
    except (OSError, ValueError):
        base_mml = None
    if isinstance(base_mml, int) and tok_path.is_file():
        tok = json.loads(tok_path.read_text(encoding="utf-8"))
        tok["model_max_length"] = base_mml
        tok_path.write_text(json.dumps(tok, indent=2) + "\n", encoding="utf-8")
    if isinstance(max_seq_length, int) and sb_path.is_file():
        sb = json.loads(sb_path.read_text(encoding="utf-8"))
        sb["max_seq_length"] = max_seq_length
        sb_path.write_text(json.dumps(sb, indent=4) + "\n", encoding="utf-8")


def _usual_file_modes(out: Path) -> None:
    """Give every file of the saved folder the mode a new file gets here (``0666`` less the umask: ``0644`` under
    umask 022). safetensors writes ``model.safetensors`` ``0600`` (a private temp file renamed), while every other
    file of the folder is ``0644``: a model folder shared with other users or served read it as unreadable."""
    probe = out / f".latechunk-mode-probe-{os.getpid()}"
    probe.touch()  # the mode open() gives a new file under this process's umask (os.umask would set it, racily)
    mode = probe.stat().st_mode & 0o777
    probe.unlink()
    for path in out.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.stat().st_mode & 0o777 != mode:
            path.chmod(mode)


def _examples(config: TrainConfig, progress: bool) -> tuple[list[TrainExample], str]:
    if config.dataset is not None:
        from latechunk.eval.datasets import load_dataset

        try:
            ds = load_dataset(config.dataset)
        except FileNotFoundError as err:
            raise ValueError(str(err)) from err
        return supervised_examples(ds), (f"dataset {ds.name!r}: {len(ds.documents)} documents, {len(ds.queries)} "
                                         "queries" + "".join(f"; {n}" for n in ds.notes))
    from latechunk.io import iter_inputs
    from latechunk.types import Skipped

    docs, skipped = [], 0
    for item in iter_inputs(list(config.ict or ())):
        if isinstance(item, Skipped):
            skipped += 1
        else:
            docs.append(item)
    if not docs:
        raise ValueError(f"--ict {' '.join(config.ict or ())}: no documents read ({skipped} inputs skipped)")
    ex = ict_examples(docs, config.ict_queries, seed=config.seed)
    return ex, f"inverse cloze over {len(docs)} documents ({skipped} inputs skipped): {len(ex)} examples"


def _after_step(step: int) -> None:
    """Called after each optimiser step (and its checkpoint) with the number of steps done; a seam for tests that
    stop a run part way."""


def _random_state(state) -> list:
    """A ``random.Random`` state as JSON (``[version, [625 ints], gauss_next]``)."""
    return [state[0], list(state[1]), state[2]]


def _save_checkpoint(out: Path, model, opt, sched, order: random.Random, info: dict) -> None:
    """Write ``out/.checkpoint/state.safetensors`` atomically (a temporary file, then a rename: a kill while it
    writes leaves the previous checkpoint): the model's weights, AdamW's state and the torch/numpy random
    generators as tensors, everything else (``info``, AdamW's parameter groups, the schedule, the Python random
    generators) as JSON in the file's metadata. No pickle (``tests/test_safety.py``)."""
    import torch
    from safetensors.torch import save_file

    def cpu(t) -> torch.Tensor:
        return (t.detach().to("cpu") if torch.is_tensor(t) else torch.tensor(t)).clone().contiguous()

    tensors = {f"model.{k}": cpu(v) for k, v in model.state_dict().items()}
    sd = opt.state_dict()
    for idx, st in sd["state"].items():
        tensors.update({f"optimizer.{idx}.{name}": cpu(v) for name, v in st.items()})
    tensors["rng.torch"] = torch.get_rng_state()
    if torch.cuda.is_available():
        tensors.update({f"rng.cuda.{i}": cpu(t) for i, t in enumerate(torch.cuda.get_rng_state_all())})
    np_state = np.random.get_state()
    tensors["rng.numpy"] = torch.from_numpy(np.asarray(np_state[1], dtype=np.int64))
    info = {**info, "param_groups": sd["param_groups"], "scheduler": sched.state_dict(),
            "rng_numpy": [np_state[0], int(np_state[2]), int(np_state[3]), float(np_state[4])],
            "rng_python": _random_state(random.getstate()), "order_rng": _random_state(order.getstate())}
    folder = out / CHECKPOINT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / "state.safetensors.tmp"
    save_file(tensors, str(tmp), metadata={"latechunk": json.dumps(info)})
    os.replace(tmp, folder / CHECKPOINT_FILE)


def _read_checkpoint(path: Path) -> tuple[dict, dict]:
    """``(info, tensors)`` of a checkpoint file (:func:`_save_checkpoint`)."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        info = json.loads((f.metadata() or {})["latechunk"])
        tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open has no __iter__)
    return info, tensors


def _restore(state: tuple[dict, dict], model, opt, sched, order: random.Random) -> None:
    """Put a checkpoint's weights, AdamW and schedule state and random generators back."""
    import torch

    info, tensors = state
    model.load_state_dict({k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")})
    opt_state: dict[int, dict] = {}
    for k, v in tensors.items():
        if k.startswith("optimizer."):
            _, idx, name = k.split(".", 2)
            opt_state.setdefault(int(idx), {})[name] = v
    groups = [{**g, "betas": tuple(g["betas"])} if "betas" in g else g for g in info["param_groups"]]
    opt.load_state_dict({"state": opt_state, "param_groups": groups})
    sched.load_state_dict(info["scheduler"])
    torch.set_rng_state(tensors["rng.torch"])
    cuda = [tensors[k] for k in sorted((k for k in tensors if k.startswith("rng.cuda.")),
                                       key=lambda k: int(k.rsplit(".", 1)[1]))]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda)
    name, pos, has_gauss, cached = info["rng_numpy"]
    np.random.set_state((name, tensors["rng.numpy"].numpy().astype(np.uint32), pos, has_gauss, cached))
    v, st, gauss = info["rng_python"]
    random.setstate((v, tuple(st), gauss))
    v, st, gauss = info["order_rng"]
    order.setstate((v, tuple(st), gauss))


#: TrainConfig fields whose ``latechunk train`` option is not ``--`` + the name with dashes
_OPTION_NAMES = {"precision": "--dtype"}


def _check_out(out: Path, config: TrainConfig, resume: bool) -> tuple[dict, dict] | None:
    """Refuse an ``--out`` that is a file or holds anything but a checkpoint of this run; with ``resume``, the
    checkpoint (:func:`_read_checkpoint`)."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file; give a new folder for the trained model")
    folder = out / CHECKPOINT_DIR
    state_file = folder / CHECKPOINT_FILE
    others = sorted(p.name for p in out.iterdir() if p.name != CHECKPOINT_DIR) if out.is_dir() else []
    if others:
        what = ("a trained model (latechunk_train.json): this run finished" if TRAIN_FILE in others
                else "files: " + ", ".join(others[:3]) + (" ..." if len(others) > 3 else ""))
        raise ValueError(f"--out {out} is a folder that is not empty ({what}); give a new folder for the trained "
                         "model")
    if not resume:
        if folder.exists():
            raise ValueError(f"--out {out} holds the checkpoint of a training run that did not finish: --resume "
                             "continues it (with the same options), or remove the folder to start again")
        return None
    if not state_file.is_file():
        raise ValueError(f"--resume: {out} holds no checkpoint ({CHECKPOINT_DIR}/{CHECKPOINT_FILE}) to continue "
                         "from; train without --resume")
    state = _read_checkpoint(state_file)
    old = state[0].get("config") or {}
    new = config.to_dict()
    # the device may change (a run moved to another machine), and --dtype is compared as what it resolves to
    # (train() checks that: auto and bfloat16 are one setting on a bf16 CPU; a trial saw them refused)
    diff = [f"{_OPTION_NAMES.get(k, '--' + k.replace('_', '-'))} {old.get(k)!r} there, {new.get(k)!r} now"
            for k in sorted(set(old) | set(new))
            if k not in ("out", "device", "precision") and old.get(k) != new.get(k)]
    if diff:
        raise ValueError(f"--resume: the checkpoint in {out} is of a run with other settings (" + "; ".join(diff)
                         + "): give the same options, or train into a new folder")
    return state


def train(config: TrainConfig, progress: bool = True, log: Callable[[str], None] | None = None, *,
          checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY, resume: bool = False) -> TrainResult:
    """Fine-tune a model for late chunking and save it as a sentence-transformers folder (see the module doc).

    Args:
        config: The settings.
        progress: Show progress bars (chunking, steps with the running loss).
        log: Called with one line per phase (data, plan, saved); default silent.
        checkpoint_every: Every this many optimiser steps (and at the end of each epoch), the run's state
            (weights, AdamW and schedule state, the data order, every random generator, the losses so far) is
            written to ``out/.checkpoint/state.safetensors``, replacing the last one; 0: never. Removed when the
            run ends.
        resume: Continue the run whose checkpoint is in ``out`` (same settings, checked): it takes up at the
            step after the checkpoint and ends with the model an uninterrupted run makes (the same data order,
            dropout masks and updates; tested equal on CPU).

    Returns:
        The :class:`TrainResult` (also written to ``<out>/latechunk_train.json``).

    Raises:
        ValueError: on a dataset without answer spans, an empty corpus, a model that does not load, a macro
            window that does not fit the model, an ``out`` that exists and is not an empty folder (or holds only a
            checkpoint, without ``resume``), ``resume`` without a checkpoint or with other settings, or a
            negative ``checkpoint_every``.
    """
    import torch

    say = log or (lambda _m: None)
    out = Path(config.out)
    if isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int) or checkpoint_every < 0:
        raise ValueError(f"--checkpoint-every must be an integer >= 0 (0: no checkpoints), got {checkpoint_every!r}")
    state = _check_out(out, config, resume)
    random.seed(config.seed)
    np.random.seed(config.seed)
    torch.manual_seed(config.seed)
    examples, what = _examples(config, progress)
    say(what)
    st, encoder = _load(config)
    size = config.macro_window if config.macro_window is not None else encoder.max_seq_length
    mw = encoder.macro_window(size, config.window_overlap)
    plans, pairs, skipped = _plan_documents(examples, encoder, config.strategy, mw, progress)
    if not pairs:
        why = ", ".join(f"{n} {reason}" for reason, n in skipped.items()) if skipped else (
            "no passage has a sentence to hold out: --ict takes a sentence of 5 to 60 words that is neither the "
            "first nor the last of its document" if config.ict else "no query has an answer span in a chunk")
        raise ValueError(f"no training example left ({why})")
    base_pairs = list(pairs)  # the planned order: a checkpoint records the data order as positions in it
    order = random.Random(config.seed)
    order.shuffle(pairs)
    if config.max_queries is not None:
        pairs = pairs[: config.max_queries]
    position = {id(p): i for i, p in enumerate(base_pairs)}
    n_chunks = sum(len(p.bounds.token_spans) for p in plans.values())
    sources = {p.doc.metadata.get("source_doc") for p in plans.values()} - {None}
    # inverse cloze trains on passages cut from the documents read, one per example: name both counts
    over = (f"{len(plans)} passages cut from {len(sources)} documents" if sources else f"{len(plans)} documents")
    say(f"{len(pairs)} examples over {over} ({n_chunks} chunks of {config.strategy}), macro window "
        f"{mw.size} (overlap {mw.overlap}); skipped: {skipped or 'none'}")

    model = encoder.model
    model.train()
    amp = autocast_dtype(config.precision, encoder.device.type)
    say(f"precision: {'bfloat16 autocast' if amp is not None else 'float32'} on {encoder.device} "
        f"(--dtype {config.precision}; weights float32)")
    pad_id = encoder.hf_tokenizer.pad_token_id if encoder.hf_tokenizer.pad_token_id is not None else 0
    steps_per_epoch = math.ceil(len(pairs) / config.batch_size)
    total = steps_per_epoch * config.epochs
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    warm = max(1, round(config.warmup * total)) if config.warmup > 0 else 0
    if warm:
        sched = torch.optim.lr_scheduler.SequentialLR(opt, [
            torch.optim.lr_scheduler.LinearLR(opt, start_factor=1.0 / (warm + 1), end_factor=1.0, total_iters=warm),
            torch.optim.lr_scheduler.LinearLR(opt, start_factor=1.0, end_factor=0.0, total_iters=max(1, total - warm)),
        ], milestones=[warm])
    else:
        sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=1.0, end_factor=0.0, total_iters=max(1, total))
    result = TrainResult(out=out, n_examples=len(pairs), n_skipped=skipped, steps=total, config=config)
    start = 0  # optimiser steps (positions in the schedule, skipped short batches included) already done
    earlier = 0.0
    autocast = str(amp).replace("torch.", "") if amp is not None else "float32"
    if state is not None and state[0].get("autocast", autocast) != autocast:
        raise ValueError(f"--resume: the run in {out} trained with {state[0]['autocast']} autocast, --dtype "
                         f"{config.precision} gives {autocast} here: give --dtype {state[0]['autocast']}")
    if state is not None:  # --resume: everything as the checkpoint left it
        info = state[0]
        _restore(state, model, opt, sched, order)
        pairs = [base_pairs[i] for i in info["order"]]
        for name in ("losses", "late_losses", "naive_losses", "fused_losses"):
            setattr(result, name, list(info[name]))
        start, earlier = int(info["step"]), float(info["seconds"])
        say(f"resumed from {out / CHECKPOINT_DIR} after step {start} of {total}")

    def checkpoint(done: int, seconds: float) -> None:
        _save_checkpoint(out, model, opt, sched, order, {
            "config": config.to_dict(), "step": done, "seconds": seconds, "autocast": autocast,
            "order": [position[id(p)] for p in pairs], "losses": result.losses, "late_losses": result.late_losses,
            "naive_losses": result.naive_losses, "fused_losses": result.fused_losses})

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc="train", unit="step", initial=start)
    t0 = time.perf_counter()
    try:
        for epoch in range(start // steps_per_epoch, config.epochs):
            first = start - epoch * steps_per_epoch if epoch == start // steps_per_epoch else 0
            if epoch and not first:  # a run resumed in the middle of an epoch keeps that epoch's order
                order.shuffle(pairs)
            for s in range(first, steps_per_epoch):
                batch = pairs[s * config.batch_size:(s + 1) * config.batch_size]
                if len(batch) < 2:
                    _after_step(epoch * steps_per_epoch + s + 1)
                    continue
                q_toks = [_query_tok(encoder, ex.query, encoder.max_length) for ex, _ in batch]
                q = _pooled_texts(encoder, q_toks, pad_id, amp)
                chunks, targets, keys = _late_step_vectors(batch, plans, encoder, pad_id, amp)
                late = _info_nce(q, chunks, targets, config.temperature, _overlapping(batch, keys, plans))
                loss = late
                naive_v = 0.0
                if config.naive_weight > 0 or config.fused_weight > 0:
                    uniq = list(dict.fromkeys((ex.doc.doc_id, j) for ex, j in batch))
                    col = {k: i for i, k in enumerate(uniq)}
                    n_toks = []
                    for d, j in uniq:
                        cs, ce = plans[d].bounds.char_spans[j].tolist()
                        n_toks.append(encoder.tokenizer(plans[d].doc.text[cs:ce]))
                    nv = _pooled_texts(encoder, n_toks, pad_id, amp)
                    cols = [col[(ex.doc.doc_id, j)] for ex, j in batch]
                    same_source = _overlapping(batch, uniq, plans)  # inverse cloze: no negative from its own document
                    naive = _info_nce(q, nv, cols, config.temperature, same_source)
                    loss = late + config.naive_weight * naive
                    naive_v = float(naive.detach())
                    if config.fused_weight > 0:  # the target chunks as fused mode serves them
                        fused = _info_nce(q, _fused_targets(chunks, targets, nv, cols), cols, config.temperature,
                                          same_source)
                        loss = loss + config.fused_weight * fused
                        result.fused_losses.append(float(fused.detach()))
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sched.step()
                result.losses.append(float(loss.detach()))
                result.late_losses.append(float(late.detach()))
                result.naive_losses.append(naive_v)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(epoch=epoch + 1, loss=f"{result.losses[-1]:.3f}", cands=len(keys))
                done = epoch * steps_per_epoch + s + 1
                if checkpoint_every and done < total and (done % checkpoint_every == 0 or s == steps_per_epoch - 1):
                    checkpoint(done, earlier + time.perf_counter() - t0)
                _after_step(done)
    finally:
        if bar is not None:
            bar.close()
    result.seconds = earlier + time.perf_counter() - t0
    model.eval()
    model.to("cpu")
    out.mkdir(parents=True, exist_ok=True)
    import shutil

    shutil.rmtree(out / CHECKPOINT_DIR, ignore_errors=True)  # the model is whole: the checkpoint is spent
    st.save(str(out))
    _keep_base_limits(out, Path(encoder.path), st.max_seq_length)
    _usual_file_modes(out)
    record = {
        "config": config.to_dict(),
        "base_model": encoder.path,
        "data": what,
        "dataset_path": _dataset_path(config.dataset),
        "examples": len(pairs),
        "skipped": skipped,
        "documents": len(plans),
        "macro_window": {"size": mw.size, "overlap": mw.overlap},
        "autocast": str(amp).replace("torch.", "") if amp is not None else "float32",
        "steps": result.steps,
        "seconds": round(result.seconds, 1),
        **({"resumed_after_step": start} if state is not None else {}),
        "loss": result.losses,
        "late_loss": result.late_losses,
        "naive_loss": result.naive_losses,
        **({"fused_loss": result.fused_losses} if result.fused_losses else {}),
        "epoch_mean_loss": result.epoch_means(),
        "loss_definition": "InfoNCE over cosine / temperature; late: query vs late-pooled chunks of the step's macro "
                           "windows (target, in-sequence and in-batch negatives); naive: query vs naive vectors of "
                           "the step's target chunks; loss = late + naive_weight * naive"
                           + ("; fused: query vs the target chunks' unit late + unit naive vectors; + fused_weight * "
                              "fused" if config.fused_weight > 0 else ""),
    }
    (out / TRAIN_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    say(f"saved {out} ({result.steps} steps, {result.seconds:.1f} s; mean loss per epoch "
        f"{', '.join(f'{v:.3f}' for v in result.epoch_means())})")
    return result

