"""What a run's checks need to know about a model (:class:`ModelFacts`: its pooling, input limit and document
frame), read from its files alone: no torch, no weights, so a bad option fails in about a second.

Part of :mod:`latechunk.models`; tests: ``tests/model_loading/test_models.py``, ``tests/config/test_config.py``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from latechunk.models.resolve import DEFAULT_MODEL, HubProbe, resolve_model_path
from latechunk.models.settings import ModelSettings, config_input_limit, default_window


class _FileTokenizer:
    """A model's ``tokenizer.json`` through the ``tokenizers`` library (no transformers, no torch), callable as
    :class:`~latechunk.tokenize.DocumentTokenizer` calls a Hugging Face fast tokenizer to find the frame (ids
    only; the file's own padding and truncation are turned off)."""

    is_fast = True

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_file(str(path))
        self._tok.no_padding()
        self._tok.no_truncation()

    def __call__(self, text: str, add_special_tokens: bool = True, **_: Any) -> dict:
        return {"input_ids": self._tok.encode(text, add_special_tokens=add_special_tokens).ids}


def _local_file(path: str, filename: str) -> Path | None:
    """``filename`` of a resolved model (folder, or hub id through the local cache only); None where absent."""
    p = Path(path)
    if p.is_dir():
        return p / filename if (p / filename).is_file() else None
    try:
        from huggingface_hub import try_to_load_from_cache

        f = try_to_load_from_cache(path, filename)
    except Exception:  # noqa: BLE001  (an invalid repo id: no file)
        return None
    return Path(f) if isinstance(f, str) and Path(f).is_file() else None


@dataclass(frozen=True)
class ModelFacts:
    """What a run's checks need to know about a model: its pooling, input limit and document frame.

    :meth:`read` takes them from the model's files before any weight is loaded, without importing torch
    (``config.json``, ``tokenizer_config.json``, ``tokenizer.json`` through the ``tokenizers`` library, the
    sentence-transformers files), so :meth:`latechunk.config.PipelineConfig.check_model` rejects a setting that
    does not fit the model in about a second; :attr:`latechunk.encoder.Encoder.facts` gives the same facts of a
    loaded model (then nothing is unknown), and the pipeline checks them again there.

    Attributes:
        name: The model as asked (``"all-MiniLM-L6-v2"`` for the default).
        path: Where it resolves to (:func:`resolve_model_path`).
        settings: Its sentence-transformers settings (:class:`ModelSettings`; ``pooling`` decides late mode).
        input_limit: Its input limit in tokens, frame included (:func:`config_input_limit`); ``None`` where no
            ``config.json`` is at hand (a hub id not in the local cache), or where neither it nor
            ``tokenizer_config.json`` states a limit (then the config class's default decides, once loaded).
        document_frame: Frame tokens of a document input (special tokens and the document prompt), from
            ``tokenizer.json``; ``None`` where the model has none (e.g. only ``vocab.txt`` or a sentencepiece
            file): then the macro window is checked once the tokenizer is loaded.
        default_window: The default macro window in tokens, frame included (:func:`default_window`): the
            sentence-transformers ``max_seq_length`` where the model has one (256 for all-MiniLM-L6-v2), else
            the input limit; ``None`` where neither is known yet.
    """

    name: str
    path: str
    settings: ModelSettings = field(default_factory=ModelSettings)
    input_limit: int | None = None
    document_frame: int | None = None

    @property
    def default_window(self) -> int | None:
        """The default macro window in tokens, frame included (:func:`default_window` of the settings and the
        input limit); ``None`` where the model states neither a ``max_seq_length`` nor an input limit."""
        if self.input_limit is None:
            st = self.settings.max_seq_length
            return int(st) if isinstance(st, int) and not isinstance(st, bool) and st > 0 else None
        return default_window(self.settings, self.input_limit)

    @classmethod
    def read(cls, name_or_path: str | os.PathLike | None = None, probe: HubProbe | None = None) -> ModelFacts:
        """The facts of a model from its files (no torch, no weights).

        Args:
            name_or_path: Alias, hub id or folder (:func:`resolve_model_path`); ``None`` = :data:`DEFAULT_MODEL`.
            probe: Hub probe for a hub id (default a new one).

        Returns:
            The :class:`ModelFacts`; a fact that the files do not give is ``None``.

        Raises:
            ValueError: as :func:`resolve_model_path`, or on a ``config.json`` or ``tokenizer.json`` that does
                not parse (the message names the file).
        """
        from latechunk.tokenize import DocumentTokenizer

        name = DEFAULT_MODEL if name_or_path is None else str(name_or_path)
        path = resolve_model_path(name_or_path, probe)
        settings = ModelSettings.read(path)
        limit = frame = None
        config_file = _local_file(path, "config.json")
        if config_file is not None:
            try:
                config = json.loads(config_file.read_text(encoding="utf-8"))
                tok_config_file = _local_file(path, "tokenizer_config.json")
                tok_config = json.loads(tok_config_file.read_text(encoding="utf-8")) if tok_config_file else {}
            except (OSError, ValueError) as err:
                raise ValueError(f"model {name!r}: cannot read {config_file.parent}'s config files: {err}") from err
            mml = tok_config.get("model_max_length")
            known = any(k in config for k in ("max_position_embeddings", "n_positions")) or (
                isinstance(mml, int) and 0 < mml < 1_000_000)
            # without either, the loaded config's class default decides: unknown here (never a false refusal)
            limit = config_input_limit(config, mml) if known else None
        tok_file = _local_file(path, "tokenizer.json")
        if tok_file is not None:
            try:
                frame = DocumentTokenizer(_FileTokenizer(tok_file), prefix=settings.document_prompt).n_frame
            except Exception as err:  # the tokenizers library raises its own exception type
                raise ValueError(f"model {name!r}: cannot read its tokenizer {tok_file}: {err}") from err
        return cls(name=name, path=path, settings=settings, input_limit=limit, document_frame=frame)
