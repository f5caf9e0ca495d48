"""A model's own embedding settings from its sentence-transformers files (:class:`ModelSettings`), its input
limit (:func:`config_input_limit`, :func:`input_limit`) and its default macro window (:func:`default_window`).

Part of :mod:`latechunk.models`; tests: ``tests/model_loading/test_models.py``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch is imported where a model is loaded, never at import time (fast command-line checks)
    import torch


def _read_json(name_or_path: str, filename: str) -> dict | list | None:
    """Read a JSON file of the model repo (local folder or hub cache); None where absent."""
    p = Path(name_or_path) / filename
    if p.is_file():
        return json.loads(p.read_text(encoding="utf-8"))
    if Path(name_or_path).is_dir():
        return None
    try:
        from transformers.utils import cached_file

        f = cached_file(name_or_path, filename, _raise_exceptions_for_missing_entries=False)
    except Exception:  # noqa: BLE001  (any hub/offline failure means "no such settings file")
        return None
    return json.loads(Path(f).read_text(encoding="utf-8")) if f else None


_POOLING_FLAGS = (  # sentence-transformers < 6: one boolean per mode, in the order their outputs concatenate
    ("pooling_mode_cls_token", "cls"),
    ("pooling_mode_mean_tokens", "mean"),
    ("pooling_mode_max_tokens", "max"),
    ("pooling_mode_mean_sqrt_len_tokens", "mean"),
    ("pooling_mode_weightedmean_tokens", "weightedmean"),
    ("pooling_mode_lasttoken", "lasttoken"),
)


def _pooling_mode(cfg: dict) -> str:
    """The pooling of a sentence-transformers Pooling config (both formats), as :attr:`ModelSettings.pooling`."""
    mode = cfg.get("pooling_mode")
    if isinstance(mode, str):
        modes = [mode]
    elif isinstance(mode, (list, tuple)) and mode:
        modes = [str(m) for m in mode]
    else:
        modes = [name for key, name in _POOLING_FLAGS if cfg.get(key)] or ["mean"]
    modes = ["mean" if m in ("mean_tokens", "mean_sqrt_len_tokens", "mean_sqrt_len") else m for m in modes]
    return "+".join(dict.fromkeys(modes))


@dataclass(frozen=True)
class ModelSettings:
    """The model's own embedding settings (from its sentence-transformers files where present).

    Attributes:
        pooling: The model's own pooling, from its sentence-transformers Pooling config: ``"mean"`` (also for
            ``mean_sqrt_len_tokens``, the mean scaled), ``"cls"``, ``"lasttoken"``, ``"max"``, ``"weightedmean"``,
            or several joined by ``+`` (concatenated). Naive-mode and query pooling; late mode needs ``"mean"``
            (:meth:`latechunk.config.PipelineConfig.check_model`).
        normalize: Whether the model L2-normalises its sentence embeddings (a ``Normalize`` module).
        query_prompt / document_prompt: Instruction prefixes (``""`` where none).
        max_seq_length: The sentence-transformers max sequence length (tokens), or None where the model has
            no ``sentence_bert_config.json``. Recorded, not used to truncate (see
            :attr:`latechunk.encoder.Encoder.max_seq_length`).
        include_prompt: Whether naive mean pooling includes the prompt tokens (sentence-transformers default).
    """

    pooling: str = "mean"
    normalize: bool = False
    query_prompt: str = ""
    document_prompt: str = ""
    max_seq_length: int | None = None
    include_prompt: bool = True

    @classmethod
    def read(cls, name_or_path: str) -> ModelSettings:
        """Read the settings from a sentence-transformers model folder or hub id (defaults where a file is absent).

        Sources: ``modules.json`` and the Pooling module's ``config.json`` (pooling mode: ``pooling_mode``, as
        sentence-transformers >= 6 writes it, or the older ``pooling_mode_*_tokens`` flags; ``include_prompt``), a
        ``Normalize`` module (``normalize``), ``config_sentence_transformers.json`` (``prompts``: ``query``;
        ``document``, else ``passage``, else ``doc``) and ``sentence_bert_config.json`` (``max_seq_length``). A
        hub id's files come through ``transformers``' ``cached_file``; any hub or offline failure counts as "no
        such file".

        Args:
            name_or_path: A model folder or hub id (as :func:`resolve_model_path` returns).

        Returns:
            The settings; ``ModelSettings()`` (mean pooling, no normalisation, no prompts) for a plain
            Hugging Face folder.
        """
        modules = _read_json(name_or_path, "modules.json") or []
        pooling, normalize, include_prompt = "mean", False, True
        for m in modules if isinstance(modules, list) else []:
            typ = str(m.get("type", ""))
            if typ.endswith("Pooling"):
                cfg = _read_json(name_or_path, f"{m.get('path', '')}/config.json".lstrip("/")) or {}
                pooling = _pooling_mode(cfg)
                include_prompt = bool(cfg.get("include_prompt", True))
            if typ.endswith("Normalize"):
                normalize = True
        st = _read_json(name_or_path, "config_sentence_transformers.json") or {}
        prompts = st.get("prompts") or {}
        query_prompt = prompts.get("query", "")
        document_prompt = prompts.get("document", prompts.get("passage", prompts.get("doc", "")))
        sb = _read_json(name_or_path, "sentence_bert_config.json") or {}
        return cls(
            pooling=pooling,
            normalize=normalize,
            query_prompt=query_prompt,
            document_prompt=document_prompt,
            max_seq_length=sb.get("max_seq_length"),
            include_prompt=include_prompt,
        )


def config_input_limit(config: Mapping[str, Any] | Any, model_max_length: int | None) -> int:
    """A model's input limit in tokens (frame included), from its config and its tokenizer's ``model_max_length``.

    The smaller of ``model_max_length`` (where set to a real value) and the config's ``max_position_embeddings``
    (``n_positions`` where only that is given; less ``pad_token_id + 1`` for RoBERTa-style models, which reserve
    those positions); 512 where neither is known. The one rule of :func:`input_limit` (a loaded model) and
    :meth:`ModelFacts.read` (the model's files, before loading).

    Args:
        config: The model config: a ``transformers`` config object or the parsed ``config.json`` (a mapping).
        model_max_length: The tokenizer's ``model_max_length`` (``None`` or a huge value: unset).

    Returns:
        The limit in tokens.
    """
    def get(key: str):
        return config.get(key) if isinstance(config, Mapping) else getattr(config, key, None)

    limits = []
    if isinstance(model_max_length, int) and 0 < model_max_length < 1_000_000:
        limits.append(model_max_length)
    mpe = get("max_position_embeddings")
    if mpe is None:
        mpe = get("n_positions")
    if isinstance(mpe, int) and mpe > 0:
        pad = get("pad_token_id")
        roberta = (get("model_type") or "") in ("roberta", "xlm-roberta", "camembert")
        limits.append(mpe - ((pad + 1) if roberta and isinstance(pad, int) else 0))
    return min(limits) if limits else 512


def input_limit(model: torch.nn.Module, tokenizer: Any) -> int:
    """The input limit of a loaded model in tokens (frame included): :func:`config_input_limit` of its config
    and its tokenizer's ``model_max_length``.

    Args:
        model: A Hugging Face model (its ``config`` is read).
        tokenizer: Its Hugging Face tokenizer.

    Returns:
        The limit in tokens.
    """
    return config_input_limit(model.config, getattr(tokenizer, "model_max_length", None))


def default_window(settings: ModelSettings, input_limit: int) -> int:
    """The default macro window of a model: the length it was trained to embed, not the longest it can take.

    A sentence-transformers model states the input length it was trained and evaluated at as ``max_seq_length``
    (``sentence_bert_config.json``; 256 word pieces for all-MiniLM-L6-v2, whose position table holds 512).
    Token states from a longer window are further from anything the model saw in training; latechunk's own
    measurement (results/map.md: ``latechunk compare`` over chunk size x macro window x overlap on Chroma
    and XQuAD) finds late chunking at a 256-token window level with or ahead of 512 for MiniLM.

    Args:
        settings: The model's sentence-transformers settings (:class:`ModelSettings`).
        input_limit: Its input limit in tokens, frame included (:func:`config_input_limit`).

    Returns:
        ``min(max_seq_length, input_limit)`` where ``max_seq_length`` is a positive int, else ``input_limit``
        (tokens, frame included).
    """
    st = settings.max_seq_length
    if isinstance(st, int) and not isinstance(st, bool) and st > 0:
        return min(int(st), int(input_limit))
    return int(input_limit)
