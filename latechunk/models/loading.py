"""A model, its tokenizer and its settings, loaded once (:class:`LoadedModel`: safetensors where the model has
them; the repository's own code only when asked), and the sha256 of its weight files (:func:`weight_hash`, recorded
in the manifest); :class:`latechunk.encoder.Encoder` runs it.

Part of :mod:`latechunk.models`; tests: ``tests/model_loading/test_models.py``; safety of loading: ``tests/model_loading/test_safety.py``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from latechunk.models.resolve import DEFAULT_MODEL, HubProbe, resolve_model_path
from latechunk.models.settings import ModelSettings, input_limit

if TYPE_CHECKING:  # torch is imported where a model is loaded, never at import time (fast command-line checks)
    import torch


log = logging.getLogger("latechunk")


def weight_hash(path: str | os.PathLike) -> str:
    """sha256 over a model's weight files: every ``*.safetensors`` in name order, else every ``*.bin``.

    Args:
        path: A model folder, or a hub id (then its local cache copy, never the network).

    Returns:
        The hex digest (64 characters), or ``""`` where no weight file is found (a hub id not cached locally).
    """
    p = Path(path)
    if not p.is_dir():
        try:
            from transformers.utils import cached_file

            f = cached_file(str(path), "model.safetensors", local_files_only=True,
                            _raise_exceptions_for_missing_entries=False)
            p = Path(f).parent if f else p
        except Exception:  # noqa: BLE001  (not cached, an invalid id: no hash)
            return ""
    files = sorted(p.glob("*.safetensors")) or sorted(p.glob("*.bin"))
    h = hashlib.sha256()
    for f in files:
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                h.update(block)
    return h.hexdigest() if files else ""


# ------------------------------------------------------------------------------------------------ loading
@dataclass(frozen=True, eq=False)
class LoadedModel:
    """A model, its tokenizer and its embedding settings, loaded once; :class:`~latechunk.encoder.Encoder` runs it.

    Build it with :meth:`load` (from a name or folder), or directly around objects already in memory (tests,
    custom models): ``LoadedModel("tiny", model, tokenizer, ModelSettings(pooling="mean"))``.

    Attributes:
        name: The model as asked (``"all-MiniLM-L6-v2"`` for the default), recorded in the manifest.
        model: The Hugging Face model (``AutoModel``), returning ``last_hidden_state``.
        tokenizer: Its Hugging Face fast tokenizer (character offsets are needed).
        settings: The model's embedding settings.
        path: Where it was loaded from (a folder, or a hub id); default ``name`` (a model built in memory).
    """

    name: str
    model: torch.nn.Module
    tokenizer: Any
    settings: ModelSettings = field(default_factory=ModelSettings)
    path: str = ""

    def __post_init__(self) -> None:
        if not self.path:
            object.__setattr__(self, "path", self.name)

    @property
    def input_limit(self) -> int:
        """The model's input limit in tokens, frame included (:func:`input_limit`)."""
        return input_limit(self.model, self.tokenizer)

    @cached_property
    def sha256(self) -> str:
        """sha256 of the weight files (:func:`weight_hash`) of ``path`` resolved (:func:`resolve_model_path`:
        a default alias hashes the bundled folder; a hub id only a local cache copy); ``""`` where there is none.
        Computed once, on first use."""
        try:
            return weight_hash(resolve_model_path(self.path))
        except ValueError:
            return ""

    @classmethod
    def load(
        cls,
        name_or_path: str | os.PathLike | None = None,
        dtype: torch.dtype | None = None,
        trust_remote_code: bool = False,
        settings: ModelSettings | None = None,
        probe: HubProbe | None = None,
    ) -> LoadedModel:
        """Resolve and load a model with its tokenizer and settings.

        Weights load through safetensors wherever the model has them (never unpickling when it need not); a
        folder with only PyTorch ``.bin`` weights loads them with a warning (transformers' ``torch.load`` with
        ``weights_only``). SDPA attention is asked for and dropped where the model does not support it.

        Args:
            name_or_path: Alias, hub id or folder (:func:`resolve_model_path`); ``None`` = :data:`DEFAULT_MODEL`.
            dtype: Weight dtype to load in; ``None`` = ``torch.float32``.
            trust_remote_code: Allow the model repository's own Python code (off unless asked; warns).
            settings: Embedding settings; default :meth:`ModelSettings.read` of the model's files.
            probe: Hub probe for a hub id (default a new one).

        Returns:
            The :class:`LoadedModel` (model in eval mode, on the CPU).

        Raises:
            ValueError: on a model that does not resolve (see :func:`resolve_model_path`), or a model or
                tokenizer that does not load (the message names the path).
        """
        if trust_remote_code:
            warnings.warn("trust_remote_code=True: the model repository's own Python code will run", stacklevel=2)
        import torch

        name = DEFAULT_MODEL if name_or_path is None else str(name_or_path)
        path = resolve_model_path(name_or_path, probe)
        settings = settings or ModelSettings.read(path)
        if not trust_remote_code and _needs_own_code(path):  # before transformers warns about the unknown type
            raise ValueError(remote_code_message(name))
        try:
            tokenizer = _load_tokenizer(path, trust_remote_code)
            model = _load_model(path, torch.float32 if dtype is None else dtype, trust_remote_code)
        except ValueError as err:
            if not trust_remote_code and needs_remote_code(err):
                raise ValueError(remote_code_message(name)) from err
            raise
        model.eval()
        return cls(name=name, model=model, tokenizer=tokenizer, settings=settings, path=path)


def needs_remote_code(err: BaseException) -> bool:
    """Whether ``err`` is transformers refusing a model (or tokenizer) whose repository ships its own Python code
    (its config's ``auto_map``) because ``trust_remote_code`` was not given."""
    return "trust_remote_code" in str(err)


def _needs_own_code(path: str) -> bool:
    """Whether a local model folder can load only through its own code: its config.json maps the Auto classes
    to files of its own (``auto_map``) and its ``model_type`` is not one transformers knows (a known type loads
    natively, its own code unused)."""
    config = Path(path) / "config.json"
    if not config.is_file():
        return False
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(data, dict) or not data.get("auto_map"):
        return False
    from transformers import CONFIG_MAPPING

    return data.get("model_type") not in CONFIG_MAPPING


def remote_code_message(name: str) -> str:
    """What to say of a model that needs its own code to load (:func:`needs_remote_code`): the option that allows
    it, on the command line and in Python."""
    return (f"model {name!r} runs its own Python code to load (its config.json names code files: auto_map), "
            "which latechunk never runs unless asked: pass --trust-remote-code (in Python trust_remote_code=True) "
            "if you trust its repository")


def _load_tokenizer(path: str, trust_remote_code: bool):
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    try:
        return AutoTokenizer.from_pretrained(path, use_fast=True, trust_remote_code=trust_remote_code)
    except OSError as err:
        raise ValueError(
            f"cannot load the tokenizer of model {path!r}: {err}. Offline? Give a local folder or set up the hub cache."
        ) from err


def _load_model(path: str, dtype: torch.dtype, trust_remote_code: bool) -> torch.nn.Module:
    kwargs = {"dtype": dtype, "trust_remote_code": trust_remote_code}
    local = Path(path).is_dir()
    has_st = local and (any(Path(path).glob("*.safetensors")) or (Path(path) / "model.safetensors.index.json").is_file())
    if has_st or not local:
        # weights through safetensors wherever the model has them: never unpickle when it need not
        try:
            return _from_pretrained(path, kwargs | {"use_safetensors": True})
        except ValueError:
            if local:
                raise
    log.warning("model %r has no safetensors weights: loading PyTorch .bin weights (torch.load, weights_only)", path)
    return _from_pretrained(path, kwargs | {"use_safetensors": False})


def _from_pretrained(path: str, kwargs: dict) -> torch.nn.Module:
    from transformers import AutoModel

    try:
        try:
            return AutoModel.from_pretrained(path, attn_implementation="sdpa", **kwargs)
        except (ValueError, ImportError):
            return AutoModel.from_pretrained(path, **kwargs)
    except OSError as err:
        raise ValueError(f"cannot load model {path!r}: {err}") from err
