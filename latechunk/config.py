"""A run is one value: frozen, validated configs built once (from the command line or Python) and passed down.

- :class:`ModelConfig`: which encoder and how to run it (device, dtype, token budget, remote code).
- :class:`PipelineConfig`: strategies, modes and the late-pooling settings of :mod:`latechunk.pipeline`.
- :class:`IndexConfig`: the FAISS index, as a faiss ``index_factory`` string (``flat``/``hnsw`` aliases), and its
  compact vectors (``precision``, ``truncate_dim``).
- :class:`EmbedConfig`: one ``latechunk embed`` run: inputs, output folder and policy, and the three above.
  Its :meth:`EmbedConfig.to_dict` is the ``settings`` block of ``run.json`` and of the manifest; a resumed run
  must have the same.

Every check of a setting lives in the ``__post_init__`` of the config that holds it, so an object that exists is
valid; layers below take the config (or the part they need), never loose options. Settings that need the model
(the macro window beside the model's input limit and frame, late pooling beside the model's own pooling) are
checked in one place, :meth:`PipelineConfig.check_model`, against :class:`~latechunk.models.ModelFacts`: the
command line calls it with the facts read from the model's files before torch is imported or a weight is
loaded (:meth:`ModelFacts.read <latechunk.models.ModelFacts.read>`), and :func:`latechunk.pipeline.iter_embed`
calls it with the loaded encoder's facts, so the Python API gets the same checks. Nothing in this module imports
torch.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from latechunk.macro_window import MacroWindow
from latechunk.models import DTYPE_NAMES, canonical_dtype
from latechunk.strategies.base import Strategy, get_strategy
from latechunk.types import RecordFields

if TYPE_CHECKING:
    from latechunk.models import ModelFacts

__all__ = [
    "DEFAULT_GROUP_TOKENS",
    "DEFAULT_STRATEGY",
    "LATE_POOLINGS",
    "MODES",
    "PRECISIONS",
    "RESCORE_MULTIPLIER",
    "EmbedConfig",
    "IndexConfig",
    "ModelConfig",
    "PipelineConfig",
    "dist_env",
    "split_specs",
]

Mode = Literal["late", "naive", "contextual", "fused"]
MODES: tuple[str, ...] = ("late", "naive", "contextual", "fused")
"""The modes of chunk vectors: ``late`` (one pass over the document, mean of each chunk's token states), ``naive``
(each chunk's text encoded on its own), ``contextual`` (naive, with the chunk's contextual header
``[title > section path]`` and a blank line before its text; :func:`latechunk.pipeline.contextual_texts`) and
``fused`` (the chunk's late and naive vectors, each unit-normalised, summed: :func:`latechunk.pipeline.fused_vectors`;
it costs both encodings)."""
DEFAULT_STRATEGY = "recursive:max_tokens=256"
"""``latechunk embed``'s default strategy SPEC."""
DEFAULT_GROUP_TOKENS = 1 << 18
"""Tokens per pipeline group (= per shard of ``embed``): bounds memory, never changes a vector."""
LATE_POOLINGS: tuple[str, ...] = ("mean",)
"""Values of ``late_pooling`` / ``--late-pooling``: ``mean`` mean-pools token states even for a model whose own
pooling is not mean (CLS, last token, max); unset, such a model is refused in late mode."""
DEVICES = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")
DTYPES = DTYPE_NAMES


def _require(ok: bool, msg: str) -> None:
    if not ok:
        raise ValueError(msg)


def _positive_int(name: str, value, minimum: int = 1) -> None:
    _require(isinstance(value, int) and not isinstance(value, bool) and value >= minimum,
             f"{name} must be an integer >= {minimum}, got {value!r}")


@dataclass(frozen=True)
class ModelConfig:
    """Which encoder to load and how to run it.

    Attributes:
        name: Hugging Face model id or local folder; ``None`` = the bundled all-MiniLM-L6-v2 (offline).
        device: ``auto`` (CUDA when present), ``cpu``, ``cuda``, ``cuda:N`` or ``mps``.
        dtype: ``float32``, ``bfloat16`` or ``float16`` (any case; ``fp32``, ``bf16``, ``fp16`` too:
            :func:`latechunk.models.canonical_dtype`); ``None`` = :func:`latechunk.encoder.default_dtype` (bf16 on
            CUDA and on CPUs with AMX or AVX-512 BF16, else fp32); the resolved dtype is recorded in ``run.json``.
        batch_tokens: Token budget of one forward batch (padded tokens: rows x longest row); ``None`` =
            :func:`latechunk.encoder.default_batch_tokens` (4,096 on the CPU, 16,384 on a GPU). It never changes a
            vector: ``run.json`` records the budget the encoder used (:func:`latechunk.ingest.run_settings`), and
            ``--resume`` and ``--append`` take their own without comparing
            (:data:`latechunk.ingest.folder.NOT_COMPARED`).
        trust_remote_code: Run the model repository's own Python code (only for models that need it).
        backend: ``torch`` (any device), ``onnx`` or ``onnx-int8`` (ONNX Runtime on the CPU, float32 only;
            :mod:`latechunk.onnx_backend`).
        compile: Run the torch forward through ``torch.compile`` (:class:`~latechunk.encoder.Encoder`'s
            ``compile``). Not a setting of the output: token states equal the eager ones to float rounding, so it
            is not recorded in ``run.json`` and a run may be resumed with or without it.

    Raises:
        ValueError: on an unknown device, dtype or backend, an ONNX backend on CUDA or with a 16-bit dtype,
            ``compile`` with an ONNX backend, or ``batch_tokens < 1``.
    """

    name: str | None = None
    device: str = "auto"
    dtype: str | None = None
    batch_tokens: int | None = None
    trust_remote_code: bool = False
    backend: str = "torch"
    compile: bool = False

    def __post_init__(self) -> None:
        _require(bool(DEVICES.match(self.device)), f"device must be auto, cpu, cuda or cuda:N, got {self.device!r}")
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype))  # bf16, FP32 ... -> torch's names
        if self.batch_tokens is not None:
            _positive_int("batch_tokens (--batch-tokens)", self.batch_tokens)
        _require(self.backend in ("torch", "onnx", "onnx-int8"),
                 f"backend must be torch, onnx or onnx-int8, got {self.backend!r}")
        _require(self.backend == "torch" or (not self.device.startswith("cuda") and self.dtype in (None, "float32")),
                 f"backend {self.backend!r} runs on the CPU in float32 (got device {self.device!r}, dtype "
                 f"{self.dtype!r}); on a GPU use --backend torch")
        _require(not self.compile or self.backend == "torch",
                 f"--compile applies to the torch backend (torch.compile), not to --backend {self.backend}")


@dataclass(frozen=True)
class PipelineConfig:
    """What :func:`latechunk.pipeline.iter_embed` computes: strategies x modes, and how late vectors are pooled.

    Attributes:
        strategies: The strategies, as SPEC strings or :class:`~latechunk.strategies.base.Strategy` objects
            (stored as Strategy objects, in order; the same strategy twice is an error).
        modes: A non-empty subset of :data:`MODES` (``"late"``, ``"naive"``, ``"contextual"``, ``"fused"``), in
            order.
        normalize: L2-normalise every chunk vector (done once, in the pipeline; the index never renormalises).
        include_special: Late mode: the first/last chunk absorb the frame tokens ([CLS], prompt, [SEP]), as
            jina's reference code does; default excluded.
        macro_window: Macro-window size in tokens, frame included; ``None`` = the model's default window
            (:attr:`~latechunk.models.ModelFacts.default_window`: its sentence-transformers ``max_seq_length``,
            256 for all-MiniLM-L6-v2, else its input limit).
        macro_window_overlap: Content tokens shared by consecutive macro windows; ``None`` =
            :data:`~latechunk.macro_window.DEFAULT_WINDOW_OVERLAP` (0, chosen by measurement: results/map.md).
        long_documents: ``"windows"``: a document longer than the macro window is encoded in overlapping macro
            windows; ``"skip"``: it is skipped with its token count (never silently truncated).
        group_tokens: Documents are processed in groups of about this many tokens (bounds memory; one group is
            one shard of ``embed``).
        sentence_workers: Processes that segment sentences ahead of the split (0: in this process). The chunks
            are identical for any value.
        late_pooling: ``None``: late pooling (the mean of a chunk's token states) is only done for a model whose
            own pooling is mean; ``"mean"``: the user's explicit choice to mean-pool the token states of a model
            that pools otherwise (CLS, last token, max). Checked against the model by :meth:`check_model`.

    Raises:
        ValueError: on an unknown mode or strategy, a strategy given twice, or a setting out of range.
    """

    strategies: tuple[Strategy, ...]
    modes: tuple[str, ...] = ("late",)
    normalize: bool = True
    include_special: bool = False
    macro_window: int | None = None
    macro_window_overlap: int | None = None
    long_documents: str = "windows"
    group_tokens: int = DEFAULT_GROUP_TOKENS
    sentence_workers: int = 0
    late_pooling: str | None = None

    def __post_init__(self) -> None:
        raw = (self.strategies,) if isinstance(self.strategies, (str, Strategy)) else tuple(self.strategies)
        strats = tuple(get_strategy(s) for s in raw)
        _require(bool(strats), "give at least one strategy")
        specs = [s.spec for s in strats]
        _require(len(set(specs)) == len(specs), f"the same strategy was given twice: {specs}")
        modes = (self.modes,) if isinstance(self.modes, str) else tuple(self.modes)
        _require(bool(modes), "give at least one mode: late, naive, contextual, fused")
        for m in modes:
            _require(m in MODES, f"mode must be 'late', 'naive', 'contextual' or 'fused', got {m!r}")
        _require(len(set(modes)) == len(modes), f"a mode is given twice: {list(modes)}")
        object.__setattr__(self, "strategies", strats)
        object.__setattr__(self, "modes", modes)
        if self.macro_window is not None:
            _positive_int("macro_window", self.macro_window)
        if self.macro_window_overlap is not None:
            _positive_int("macro_window_overlap", self.macro_window_overlap, minimum=0)
        _require(self.long_documents in ("windows", "skip"),
                 f"long_documents must be 'windows' or 'skip', got {self.long_documents!r}")
        _positive_int("group_tokens", self.group_tokens)
        _positive_int("sentence_workers", self.sentence_workers, minimum=0)
        _require(self.late_pooling is None or self.late_pooling in LATE_POOLINGS,
                 f"late_pooling (--late-pooling) must be one of {list(LATE_POOLINGS)} or unset, "
                 f"got {self.late_pooling!r}")

    @property
    def specs(self) -> list[str]:
        """The canonical SPEC of each strategy, in order."""
        return [s.spec for s in self.strategies]

    @property
    def needs_token_states(self) -> bool:
        """True when a late pass is needed: late or fused mode, or a strategy that reads the late sentence vectors."""
        return self.pools_late or any(s.needs_sentence_vectors and getattr(s, "source", "late") == "late"
                                           for s in self.strategies)

    @property
    def pools_late(self) -> bool:
        """True when chunk vectors are late-pooled: late or fused mode."""
        return "late" in self.modes or "fused" in self.modes

    @property
    def encodes_naive(self) -> bool:
        """True when chunk texts are encoded on their own: naive or fused mode."""
        return "naive" in self.modes or "fused" in self.modes

    def check_model(self, model: ModelFacts) -> MacroWindow | None:
        """The settings that need the model, checked against its facts: the one place for late pooling and the
        macro window (the window itself is validated by :meth:`MacroWindow.check
        <latechunk.macro_window.MacroWindow.check>`, as the encoder does).

        Late chunking is defined for mean-pooled models: a chunk vector is the mean of its token states, which
        is what a mean-pooling model was trained to embed. A model whose sentence-transformers Pooling is CLS,
        last token or max never produced such means, so wherever this run mean-pools token states (late mode,
        and ``semantic``'s sentence vectors from the late pass) it is refused unless ``late_pooling="mean"``.

        Args:
            model: The model's facts: :meth:`ModelFacts.read <latechunk.models.ModelFacts.read>` (its files,
                before loading) or :attr:`Encoder.facts <latechunk.encoder.Encoder.facts>` (loaded).

        Returns:
            The run's :class:`~latechunk.macro_window.MacroWindow` (defaults resolved), or ``None`` where the
            model's input limit or document frame is not known yet (then the encoder checks it once loaded).

        Raises:
            ValueError: on late pooling of a model that does not mean-pool without ``late_pooling="mean"`` (the
                message names the model, its pooling and the flag), or a macro window that does not fit the
                model (size above its input limit, under its frame + 16 content tokens, overlap out of range).
        """
        pooling = model.settings.pooling
        if pooling != "mean" and self.late_pooling != "mean" and self.needs_token_states:
            if self.pools_late:
                what = "late mode" if "late" in self.modes else "fused mode (its late half)"
            else:
                specs = [s.spec for s in self.strategies if s.needs_sentence_vectors]
                what = f"{', '.join(specs)} (sentence vectors mean-pooled from the late pass)"
            raise ValueError(
                f"model {model.name!r} pools by {pooling!r}, not by mean (its sentence-transformers Pooling "
                f"config), so {what} would mean-pool token states this model was never trained to average: the "
                "chunk vectors would mean little. Late chunking is defined for mean-pooled models. Use --mode naive "
                "or a mean-pooled model, or pass --late-pooling mean (Python: PipelineConfig(late_pooling='mean')) "
                "to mean-pool anyway"
            )
        if model.input_limit is None or model.document_frame is None:
            return None
        return MacroWindow.default(model.input_limit, model.document_frame, self.macro_window,
                                   self.macro_window_overlap, default_size=model.default_window)

    def to_dict(self) -> dict:
        """JSON-ready settings (strategies as SPEC strings).

        Returns:
            ``{field name: value}`` for every field; ``strategies`` as canonical SPEC strings, ``modes`` as a
            list; ``macro_window``/``macro_window_overlap`` in tokens (None: the model's default).
        """
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["strategies"] = self.specs
        d["modes"] = list(self.modes)
        return d


_INDEX_ALIASES = {"flat": "Flat"}

PRECISIONS: tuple[str, ...] = ("float32", "float16", "int8", "ubinary")
"""Values of ``precision`` / ``--precision``: how the FAISS index stores the vectors (the shards always keep
float32): ``float32`` as given; ``float16`` (faiss ``SQfp16``); ``int8`` (faiss ``SQ8``: 8-bit codes with
per-dimension ranges calibrated on the corpus); ``ubinary`` (one bit per dimension, ``x > 0``, packed; a faiss
``IndexBinaryFlat`` searched by Hamming distance, then rescored with the float query). Semantics of
sentence-transformers' ``quantize_embeddings``."""

RESCORE_MULTIPLIER = 4
"""A ``ubinary`` index is searched for ``RESCORE_MULTIPLIER * k`` candidates by Hamming distance, which are then
rescored with the float query (sentence-transformers' ``semantic_search_faiss(..., rescore=True)``; its default
multiplier is 2, its binary-quantization write-up uses 4)."""

_SQ_CODES = {"float16": "SQfp16", "int8": "SQ8"}


@dataclass(frozen=True)
class IndexConfig:
    """The FAISS index of a run: a faiss ``index_factory`` string over inner products, and how compact its
    vectors are (``precision``, ``truncate_dim``).

    Vectors are normalised (or not) by the pipeline; the index adds them as they are, except that with
    ``truncate_dim`` it keeps their first ``truncate_dim`` dimensions (Matryoshka models) and, when
    ``renormalize``, L2-normalises them again. Queries get the same transform
    (:func:`latechunk.index.query_transform`). See https://github.com/facebookresearch/faiss/wiki/The-index-factory
    for the strings.

    Attributes:
        factory: A faiss ``index_factory`` string, e.g. ``Flat`` (exact), ``HNSW32``, ``IVF1024,Flat``.
        ef_construction / ef_search: HNSW build and search beam widths (used by HNSW indexes only).
        gpu: ``auto`` (GPU FAISS for flat float32 indexes when present), ``on`` or ``off``. Compact indexes
            (``precision`` other than float32) are built on the CPU.
        precision: One of :data:`PRECISIONS`. ``float16``/``int8`` replace the factory's ``Flat`` storage by a
            scalar quantizer (``Flat`` -> ``SQfp16``/``SQ8``, ``HNSW32`` -> ``HNSW32,SQ8``, ``IVF64,Flat`` ->
            ``IVF64,SQ8``: :attr:`faiss_factory`); ``ubinary`` needs ``Flat``.
        truncate_dim: Keep the first N dimensions of every vector (indexed and query), or None (all).
        renormalize: With ``truncate_dim``: L2-normalise the truncated vectors (set from the run's
            ``normalize``; unused without ``truncate_dim``).

    Raises:
        ValueError: on an empty factory string, non-positive beam widths, an unknown ``gpu`` value or
            precision, a ``truncate_dim`` below 1 (or, for ``ubinary``, not a multiple of 8), or a precision the
            factory string cannot take.
    """

    factory: str = "Flat"
    ef_construction: int = 200
    ef_search: int = 128
    gpu: str = "auto"
    precision: str = "float32"
    truncate_dim: int | None = None
    renormalize: bool = True

    def __post_init__(self) -> None:
        _require(isinstance(self.factory, str) and bool(self.factory.strip()), "index factory string is empty")
        _positive_int("ef_construction", self.ef_construction)
        _positive_int("ef_search", self.ef_search)
        _require(self.gpu in ("auto", "on", "off"), f"gpu must be auto, on or off, got {self.gpu!r}")
        _require(self.precision in PRECISIONS,
                 f"--precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        if self.truncate_dim is not None:
            _positive_int("--truncate-dim", self.truncate_dim)
            _require(self.precision != "ubinary" or self.truncate_dim % 8 == 0,
                     f"--truncate-dim {self.truncate_dim} with --precision ubinary: give a multiple of 8 "
                     "(binary codes are whole bytes)")
            _require(self.truncate_dim > 1 or not self.renormalize,
                     "--truncate-dim 1 with normalised vectors leaves every vector +1 or -1, so every score is +1 "
                     "or -1 (a trial's search ranked nothing); give a useful number of dimensions (Matryoshka "
                     "models: 64, 128, 256)")
        self.faiss_factory  # noqa: B018  (a precision the factory cannot take fails here)

    @classmethod
    def from_option(cls, value: str, hnsw_m: int = 32, **kwargs) -> IndexConfig:
        """The config of an ``--index`` value: ``flat`` -> ``Flat``, ``hnsw`` -> ``HNSW{hnsw_m}``, any other
        value is taken as a faiss ``index_factory`` string (checked when the index is built).

        Args:
            value: The ``--index`` value (case-insensitive for the aliases ``flat`` and ``hnsw``).
            hnsw_m: Neighbours per node of ``hnsw`` (>= 2); ignored for other values.
            **kwargs: Other fields (``ef_construction``, ``ef_search``, ``gpu``, ``precision``, ``truncate_dim``,
                ``renormalize``).

        Returns:
            The :class:`IndexConfig`.

        Raises:
            ValueError: as the constructor, or ``hnsw_m < 2``.
        """
        key = value.strip().lower()
        if key in PRECISIONS or key in ("binary", "fp16", "bf16", "sq8"):  # a storage setting, not an index type
            hint = {"binary": "ubinary", "fp16": "float16", "bf16": "float16", "sq8": "int8"}.get(key, key)
            raise ValueError(f"--index {value.strip()!r} is how the vectors are stored, not an index type: give "
                             f"--precision {hint} (with --index flat{'' if hint == 'ubinary' else ', hnsw or IVF...'})")
        if key == "hnsw":
            _positive_int("hnsw_m", hnsw_m, minimum=2)
            return cls(factory=f"HNSW{hnsw_m}", **kwargs)
        return cls(factory=_INDEX_ALIASES.get(key, value.strip()), **kwargs)

    @classmethod
    def from_dict(cls, d: Mapping) -> IndexConfig:
        """The config of a manifest's (or run.json's) index record (:meth:`to_dict`, plus ``ntotal``/``file``).

        Args:
            d: The record; a missing ``precision`` is ``float32`` and a missing ``truncate_dim`` None (folders
                written before these settings existed).

        Returns:
            The :class:`IndexConfig` (``gpu`` ``auto``).

        Raises:
            ValueError: as the constructor, or a record without ``factory``.
        """
        _require(isinstance(d, Mapping) and "factory" in d, f"an index record needs a 'factory', got {d!r}")
        return cls(factory=d["factory"], ef_construction=d.get("ef_construction", 200),
                   ef_search=d.get("ef_search", 128), precision=d.get("precision", "float32"),
                   truncate_dim=d.get("truncate_dim"), renormalize=d.get("renormalize", True))

    @property
    def is_hnsw(self) -> bool:
        """True for an HNSW index (``ef_construction``/``ef_search`` apply)."""
        return self.factory.upper().startswith("HNSW")

    @property
    def is_binary(self) -> bool:
        """True for a ``ubinary`` index (a faiss ``IndexBinary``, Hamming distance, float rescoring)."""
        return self.precision == "ubinary"

    @property
    def faiss_factory(self) -> str:
        """The faiss ``index_factory`` string actually built: :attr:`factory` for float32; ``BFlat`` (faiss's
        ``index_binary_factory`` string of an ``IndexBinaryFlat``) for ubinary; else the factory with its ``Flat``
        storage replaced by ``SQfp16``/``SQ8``.

        Raises:
            ValueError: for ``ubinary`` with a factory other than ``Flat``, or ``float16``/``int8`` with a factory
                that sets its own encoding (``PQ``, ``SQ``, ...).
        """
        f = self.factory.strip()
        if self.precision == "float32":
            return f
        if self.precision == "ubinary":
            _require(f == "Flat", f"--precision ubinary builds a binary flat index (Hamming distance, then float "
                                  f"rescoring); it cannot be combined with --index {f!r}: use --index flat")
            return "BFlat"
        code = _SQ_CODES[self.precision]
        if f == "Flat":
            return code
        if re.fullmatch(r"HNSW\d+", f):
            return f"{f},{code}"
        if f.endswith(",Flat"):
            return f[: -len("Flat")] + code
        raise ValueError(f"--precision {self.precision} stores the vectors of a Flat, HNSW{{M}} or IVF{{n}},Flat "
                         f"index as {code}; --index {f!r} sets its own encoding: use --precision float32 with it")

    def index_dim(self, dim: int) -> int:
        """The dimension of the indexed vectors, for input vectors of ``dim`` dimensions.

        Args:
            dim: The model's vector dimension (what the shards hold).

        Returns:
            ``truncate_dim`` or ``dim``.

        Raises:
            ValueError: if ``truncate_dim`` exceeds ``dim``, or ``ubinary`` gets a dimension that is not a
                multiple of 8.
        """
        _require(self.truncate_dim is None or self.truncate_dim <= dim,
                 f"--truncate-dim {self.truncate_dim} exceeds the model's vector dimension {dim}")
        d = self.truncate_dim or dim
        _require(not self.is_binary or d % 8 == 0,
                 f"--precision ubinary needs a vector dimension that is a multiple of 8, got {d} "
                 "(give --truncate-dim N with N a multiple of 8)")
        return d

    @property
    def label(self) -> str:
        """A short name of the compact-vector setting: ``int8``, ``ubinary@128`` (precision@truncate_dim)."""
        return self.precision + (f"@{self.truncate_dim}" if self.truncate_dim else "")

    def to_dict(self) -> dict:
        """The manifest form of the index settings.

        Returns:
            ``{"factory", "metric"}`` (metric ``"ip"``, inner product; ``"hamming"`` for ubinary), plus
            ``ef_construction`` and ``ef_search`` for an HNSW index, ``precision`` (and for ubinary
            ``rescore_multiplier``) when not float32, ``truncate_dim`` and ``renormalize`` when truncating:
            settings at their defaults are left out, so folders written before they existed still resume.
        """
        d = {"factory": self.factory, "metric": "hamming" if self.is_binary else "ip"}
        if self.is_hnsw:
            d.update(ef_construction=self.ef_construction, ef_search=self.ef_search)
        if self.precision != "float32":
            d["precision"] = self.precision
        if self.is_binary:
            d["rescore_multiplier"] = RESCORE_MULTIPLIER
        if self.truncate_dim is not None:
            d.update(truncate_dim=self.truncate_dim, renormalize=self.renormalize)
        return d


def _nested_input(inputs: tuple[Path, ...]) -> str:
    """Why two inputs would read the same documents twice (one is the other, or lies inside an input folder: its
    documents would get two ids, one relative to each input), or ``""``."""
    resolved = [p.resolve() for p in inputs]
    for i, a in enumerate(resolved):
        for j, b in enumerate(resolved):
            if i == j:
                continue
            if a == b and i < j:
                return (f"input {inputs[j]} is the input {inputs[i]} given again: its documents would be read twice; "
                        "give it once")
            # a folder inside a hidden one (.venv, .cache) is never walked by the reader of a: named, it is read once
            if (a != b and a.is_dir() and b.is_relative_to(a)
                    and not any(part.startswith(".") for part in b.relative_to(a).parts)):
                return (f"input {inputs[j]} is inside the input folder {inputs[i]}: its documents would be read twice "
                        f"(under two ids, one relative to each); give {inputs[i]} alone")
    return ""


def _require_utf8_path(path: Path, what: str) -> None:
    """Refuse a path whose bytes are not valid UTF-8 (os.fsdecode's surrogate escapes), also through the working
    directory it is under: run.json and the manifest record it, and JSON takes only valid text."""
    def shown(p: str) -> str:
        return p.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")

    given, full = os.fspath(path), os.fspath(path.absolute())
    try:
        full.encode("utf-8")
        return
    except UnicodeEncodeError:
        pass
    why = "run.json records every path as text"
    if shown(given) != given:
        raise ValueError(f"{what} '{shown(given)}' is not valid UTF-8 (its bytes shown as \\x escapes): {why}; "
                         "rename it") from None
    raise ValueError(f"{what} '{given}' is under '{shown(full)}', whose path is not valid UTF-8: {why}; give it "
                     "from another working directory or rename that folder") from None


@dataclass(frozen=True)
class EmbedConfig:
    """One ``latechunk embed`` run.

    Attributes:
        inputs: Input paths (files, folders, ``.jsonl``, ``.parquet``, ``.arrow``, Hugging Face ``save_to_disk``
            folders; see :func:`latechunk.io.iter_inputs`); each must exist.
        out: The output folder (``index.faiss``, ``chunks.parquet``, ``manifest.json``, shards).
        model: The encoder.
        pipeline: Exactly one strategy and one mode.
        index: The FAISS index.
        force: Remove a previous output in ``out`` first (never files latechunk did not write).
        resume: Continue an interrupted run in ``out`` (its settings must equal these).
        dedup: ``--dedup``: drop a chunk whose cosine to an earlier kept chunk is at least this threshold
            (``0 < dedup <= 1``; :mod:`latechunk.dedup`); None: off. A setting of the run (run.json).
        fields: Which record field or column holds a record's id, text and title (``--id-field``,
            ``--text-field``, ``--title-field``; :class:`RecordFields`). A setting of the run (run.json, only
            where it differs from the defaults), so ``--resume``, ``--append`` and ``verify`` read the same way.

    Raises:
        ValueError: on a missing input, an input given twice or inside an input folder, an input or ``out`` whose
            path is not valid UTF-8, ``out`` that is a file or an input folder, both ``force`` and ``resume``, a pipeline
            with other than one strategy and one mode, or a dedup threshold outside ``(0, 1]``.
    """

    inputs: tuple[Path, ...]
    out: Path
    pipeline: PipelineConfig
    model: ModelConfig = field(default_factory=ModelConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    force: bool = False
    resume: bool = False
    dedup: float | None = None
    fields: RecordFields = field(default_factory=lambda: RecordFields())

    def __post_init__(self) -> None:
        inputs = tuple(Path(p) for p in ([self.inputs] if isinstance(self.inputs, (str, os.PathLike)) else self.inputs))
        _require(bool(inputs), "give at least one input path")
        missing = [str(p) for p in inputs if not p.exists()]
        if missing:
            from latechunk.io import missing_inputs_message

            raise ValueError(missing_inputs_message(missing))
        for p in inputs:
            _require_utf8_path(p, "the input path")
        out = Path(self.out)
        _require_utf8_path(out, "--out")
        _require(not (out.exists() and not out.is_dir()), f"--out {out} exists and is not a folder")
        same = [str(p) for p in inputs if p.is_dir() and out.resolve() == p.resolve()]
        first = same[0] if same else ""
        _require(not same, f"--out {out} is the input folder {first}: the index would be written among the "
                 f"documents (a folder inside it, e.g. --out {first}/index, is fine: it is never read back)")
        _require(not (self.force and self.resume),
                 "--force (start over) and --resume (continue) exclude each other; give one")
        nested = _nested_input(inputs)
        _require(not nested, nested)
        _require(len(self.pipeline.strategies) == 1, "embed takes exactly one strategy")
        _require(len(self.pipeline.modes) == 1, "embed takes exactly one mode: late, naive, contextual or fused")
        object.__setattr__(self, "inputs", inputs)
        object.__setattr__(self, "out", out)
        if self.dedup is not None:
            from latechunk.dedup import check_threshold

            object.__setattr__(self, "dedup", check_threshold(self.dedup))
        if self.index.truncate_dim is not None and self.index.renormalize != self.pipeline.normalize:
            # truncated vectors are renormalised exactly when the run normalises
            object.__setattr__(self, "index", dataclasses.replace(self.index, renormalize=self.pipeline.normalize))

    @property
    def strategy(self) -> Strategy:
        """The run's one strategy."""
        return self.pipeline.strategies[0]

    @property
    def mode(self) -> str:
        """The run's one mode, ``late``, ``naive``, ``contextual`` or ``fused``."""
        return self.pipeline.modes[0]

    def to_dict(self) -> dict:
        """The run's settings, as recorded in ``run.json`` and the manifest (a resumed run must match them).

        Input paths are stored relative to the output folder (never absolute), so a folder can move together
        with its inputs; the device, worker count and output policy are not settings (they never change the
        output).

        Returns:
            ``inputs_from_out``, ``strategy`` (canonical SPEC), ``mode``, ``normalize``, ``include_special``,
            ``macro_window`` and ``macro_window_overlap`` (tokens, or None), ``long_documents``,
            ``group_tokens`` (tokens), ``index`` (:meth:`IndexConfig.to_dict`), ``model`` (name, dtype, batch_tokens,
            trust_remote_code, and backend when it is not torch), and ``late_pooling``, ``dedup`` and ``record_fields`` only where they are set (so that folders
            written before the settings existed still resume).
        """
        out_abs = self.out.resolve()
        p = self.pipeline
        late = {"late_pooling": p.late_pooling} if p.late_pooling is not None else {}
        if self.dedup is not None:
            late["dedup"] = self.dedup
        if self.fields.to_dict():
            late["record_fields"] = self.fields.to_dict()
        return {
            "inputs_from_out": [os.path.relpath(Path(i).resolve(), out_abs) for i in self.inputs],
            "strategy": self.strategy.spec,
            "mode": self.mode,
            "normalize": p.normalize,
            "include_special": p.include_special,
            "macro_window": p.macro_window,
            "macro_window_overlap": p.macro_window_overlap,
            "long_documents": p.long_documents,
            "group_tokens": p.group_tokens,
            **late,
            "index": self.index.to_dict(),
            "model": {"name": self.model.name, "dtype": self.model.dtype, "batch_tokens": self.model.batch_tokens,
                      "trust_remote_code": self.model.trust_remote_code,
                      # only when not torch, so folders written before backends existed still resume
                      **({"backend": self.model.backend} if self.model.backend != "torch" else {})},
        }


def split_specs(values: Sequence[str] | None) -> list[str]:
    """SPECs from command-line values: each value may hold several SPECs separated by spaces.

    Args:
        values: The values of a repeatable option; None: none.

    Returns:
        The SPEC strings, in order (not parsed or checked).
    """
    return [s for v in (values or []) for s in v.split()]


def dist_env(environ: Mapping[str, str] | None = None) -> tuple[int, int, int]:
    """``(rank, world_size, local_rank)`` from ``$RANK``, ``$WORLD_SIZE`` and ``$LOCAL_RANK`` (set for each
    process by ``torchrun`` and ``accelerate launch``); ``(0, 1, 0)`` when unset. ``LOCAL_RANK`` defaults to
    ``RANK``. A setting of the run read from the environment (here, not in :mod:`latechunk.ingest.ranks`, so
    the command line reads it before torch is imported).

    Args:
        environ: The environment to read (default ``os.environ``).

    Returns:
        ``(rank, world_size, local_rank)``.

    Raises:
        ValueError: on a value that is not an integer or out of range.
    """
    env = os.environ if environ is None else environ

    def get(name: str, default: int) -> int:
        v = str(env.get(name, "")).strip()
        if not v:
            return default
        try:
            return int(v)
        except ValueError:
            raise ValueError(f"${name} must be an integer, got {v!r}") from None

    world = get("WORLD_SIZE", 1)
    rank = get("RANK", 0)
    local = get("LOCAL_RANK", rank)
    if world < 1:
        raise ValueError(f"$WORLD_SIZE must be >= 1, got {world}")
    if not 0 <= rank < world:
        raise ValueError(f"$RANK={rank} is outside 0..{world - 1} ($WORLD_SIZE={world})")
    if local < 0:
        raise ValueError(f"$LOCAL_RANK must be >= 0, got {local}")
    return rank, world, local
