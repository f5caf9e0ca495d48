"""The training forward: autocast precision, padded forwards with gradients, the model's own pooling of short
inputs, and the late-pooled chunk vectors of a step's macro windows; the model loaded for training.

Tests: ``tests/train/test_train.py``, ``tests/train/test_train_precision.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from latechunk.train.config import DTYPES

if TYPE_CHECKING:
    import torch

    from latechunk.encoder import Encoder
    from latechunk.train.config import TrainConfig
    from latechunk.train.data import TrainExample, _DocPlan
    from latechunk.types import Tokenization


def _cpu_has_amx() -> bool:
    """Whether this CPU multiplies bf16 matrices in hardware: :func:`latechunk.encoder.cpu_has_bf16_matmul` (one
    probe for inference and training; a seam the tests replace)."""
    from latechunk.encoder import isa

    return isa.cpu_has_bf16_matmul()


def autocast_dtype(precision: str, device_type: str, amx: bool | None = None) -> torch.dtype | None:
    """The dtype the training forward is autocast to, or None for plain float32.

    Args:
        precision: One of :data:`~latechunk.train.config.DTYPES` (:attr:`TrainConfig.dtype
            <latechunk.train.config.TrainConfig.dtype>`). ``auto``: bfloat16 on ``cuda``, and on ``cpu`` when the CPU has
            hardware bf16 matrix products (``amx``: AMX or AVX-512 BF16), else None; on ``cpu`` with ``amx`` not
            given, ``$LATECHUNK_CPU_DTYPE`` (float32 or bfloat16) decides first, as it does for the encoder; ``float32``: None; ``bfloat16``: bfloat16 on ``cpu`` and ``cuda`` (on a CPU
            without AMX it is emulated and slower than fp32, but runs).
        device_type: ``torch.device.type`` of the model (``cpu``, ``cuda``, ``mps``, ...). Other types than
            ``cpu``/``cuda`` always get None.
        amx: Whether the CPU multiplies bf16 matrices in hardware; None = :func:`latechunk.encoder.cpu_has_bf16_matmul`.

    Returns:
        ``torch.bfloat16`` or None.

    Raises:
        ValueError: on a ``precision`` not in :data:`~latechunk.train.config.DTYPES`.
    """
    import torch

    if precision not in DTYPES:
        raise ValueError(f"precision must be one of {', '.join(DTYPES)}, got {precision!r}")
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


class StepChunks(NamedTuple):
    """The late candidates of one optimiser step (:func:`_late_step_vectors`).

    Attributes:
        vectors: (n_chunks, dim) float32, with gradients: the late-pooled vector of every chunk of the step's
            documents that the step's macro windows hold whole.
        targets: Per query of the batch, its target chunk's row in ``vectors``.
        keys: ``(doc_id, chunk index)`` per row of ``vectors``.
        unpooled: Chunks of the step's documents that the step's macro windows hold only in part (some of their
            tokens run in this step, some not): they cannot be pooled whole, so they are no candidate of this
            step. Counted, never dropped silently (issue 37). A chunk with no token in the step's windows is not
            part of the step and is not counted.
    """

    vectors: torch.Tensor
    targets: list[int]
    keys: list[tuple[str, int]]
    unpooled: int


def _late_step_vectors(batch: Sequence[tuple[TrainExample, int]], plans: dict[str, _DocPlan], encoder: Encoder,
                       pad_id: int, amp: torch.dtype | None = None) -> StepChunks:
    """Late-pooled vectors of every chunk the step's macro windows hold whole: the macro windows that hold the
    batch's target chunks run with gradients, and each chunk whose every token was run is the mean of its token
    states (frame tokens excluded), each token's state from the macro window that keeps it.

    Returns:
        The :class:`StepChunks` (vectors, target rows, keys, and the count of chunks held only in part).
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
    unpooled = 0
    for d, src in src_of.items():
        p = plans[d]
        for j, (a, b) in enumerate((p.bounds.token_spans.astype(np.int64) - p.tok.n_lead).tolist()):
            rows_j = src[a:b]
            missing = rows_j < 0
            if missing.any():  # not whole in this step's macro windows: no candidate here
                unpooled += int(not missing.all())  # counted where part of it ran (a whole-chunk mean is not had)
                continue
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
    return StepChunks(sums / counts, targets, keys, unpooled)



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
