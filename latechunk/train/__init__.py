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
  a chunk the step's macro windows hold only in part is no candidate of that step and is counted
  (:attr:`TrainResult.unpooled`, ``unpooled_chunks`` in ``latechunk_train.json``, the run's last log line);
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
- **dtype** (``--dtype``, :attr:`TrainConfig.dtype`; the old names ``--precision`` and ``TrainConfig(precision=)``
  still work). The weights, the optimiser state, the pooling and the loss stay float32; with
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

The package, one module per concern: :mod:`~latechunk.train.config` (:class:`TrainConfig`, :class:`TrainResult`,
the defaults), :mod:`~latechunk.train.data` (examples, documents planned once), :mod:`~latechunk.train.forward`
(autocast, forwards with gradients, late pooling of a step's macro windows), :mod:`~latechunk.train.loss`
(InfoNCE), :mod:`~latechunk.train.checkpoint` (``--checkpoint-every``, ``--resume``), :mod:`~latechunk.train.save`
(the model folder) and :mod:`~latechunk.train.loop` (:func:`train`). Every name is importable from
``latechunk.train`` as it was from the one module before; patch a seam where it is used (e.g.
``latechunk.train.loop._after_step``, ``latechunk.train.forward._cpu_has_amx``).

Tests: ``tests/train/test_train.py``, ``tests/train/test_train_precision.py``, ``tests/train/test_trained_on.py``.
"""

from latechunk.train.checkpoint import _OPTION_NAMES as _OPTION_NAMES
from latechunk.train.checkpoint import CHECKPOINT_DIR, DEFAULT_CHECKPOINT_EVERY
from latechunk.train.checkpoint import CHECKPOINT_FILE as CHECKPOINT_FILE
from latechunk.train.checkpoint import _check_out as _check_out
from latechunk.train.checkpoint import _random_state as _random_state
from latechunk.train.checkpoint import _read_checkpoint as _read_checkpoint
from latechunk.train.checkpoint import _restore as _restore
from latechunk.train.checkpoint import _save_checkpoint as _save_checkpoint
from latechunk.train.config import (
    DEFAULT_DTYPE,
    DEFAULT_ICT_QUERIES,
    DEFAULT_TEMPERATURE,
    DEFAULT_TRAIN_STRATEGY,
    DEFAULT_WARMUP,
    DTYPES,
    ICT_KEEP_PROB,
    TRAIN_FILE,
    TrainConfig,
    TrainResult,
)
from latechunk.train.data import TrainExample, ict_examples, supervised_examples
from latechunk.train.data import _dataset_path as _dataset_path
from latechunk.train.data import _DocPlan as _DocPlan
from latechunk.train.data import _examples as _examples
from latechunk.train.data import _passage as _passage
from latechunk.train.data import _plan_documents as _plan_documents
from latechunk.train.data import same_dataset as same_dataset
from latechunk.train.data import trained_on as trained_on
from latechunk.train.forward import _cpu_has_amx as _cpu_has_amx
from latechunk.train.forward import _forward as _forward
from latechunk.train.forward import _late_step_vectors as _late_step_vectors
from latechunk.train.forward import _load as _load
from latechunk.train.forward import _pooled_texts as _pooled_texts
from latechunk.train.forward import _query_tok as _query_tok
from latechunk.train.forward import autocast_dtype
from latechunk.train.loop import _after_step as _after_step
from latechunk.train.loop import train
from latechunk.train.loss import _fused_targets as _fused_targets
from latechunk.train.loss import _info_nce as _info_nce
from latechunk.train.loss import _overlapping as _overlapping
from latechunk.train.save import _keep_base_limits as _keep_base_limits
from latechunk.train.save import _usual_file_modes as _usual_file_modes

__all__ = [
    "DEFAULT_DTYPE",
    "DEFAULT_ICT_QUERIES",
    "DTYPES",
    "DEFAULT_TRAIN_STRATEGY",
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


def __getattr__(name: str):
    """``PRECISIONS`` and ``DEFAULT_STRATEGY``, the old names of :data:`DTYPES` and :data:`DEFAULT_TRAIN_STRATEGY`
    (a DeprecationWarning; :mod:`latechunk.config.names`)."""
    from latechunk.train import config

    return config.__getattr__(name, _stacklevel=4)
