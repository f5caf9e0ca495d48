"""The FAISS index of a run: :class:`IndexConfig` (an ``index_factory`` string, HNSW beam widths, compact vectors)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from latechunk.config._checks import _positive_int, _require

_INDEX_ALIASES = {"flat": "Flat"}

DEFAULT_INDEX = "flat"
"""``--index``'s default: the alias of a ``Flat`` index (exact inner product), :attr:`IndexConfig.factory`'s
default."""
DEFAULT_HNSW_M = 32
"""Neighbours per node of ``--index hnsw`` (``--hnsw-m``): the alias builds ``HNSW{DEFAULT_HNSW_M}``."""
DEFAULT_EF_CONSTRUCTION = 200
"""HNSW build beam width (``--ef-construction``)."""
DEFAULT_EF_SEARCH = 128
"""HNSW search beam width (``--ef-search``)."""
DEFAULT_PRECISION = "float32"
"""How the index stores the vectors by default (``--precision``): as they are."""

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

_SETTINGS = ("ef_construction", "ef_search", "gpu", "precision", "truncate_dim", "renormalize")
"""The fields :meth:`IndexConfig.from_dict` reads beside ``factory``."""
INDEX_RECORD_KEYS = frozenset({"factory", "metric", "rescore_multiplier", *_SETTINGS})
"""The keys of an index record in run.json's settings (:meth:`IndexConfig.to_dict`), and ``gpu``: what
:meth:`latechunk.config.EmbedConfig.from_dict` accepts in its ``index`` block."""


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

    factory: str = _INDEX_ALIASES[DEFAULT_INDEX]
    ef_construction: int = DEFAULT_EF_CONSTRUCTION
    ef_search: int = DEFAULT_EF_SEARCH
    gpu: str = "auto"
    precision: str = DEFAULT_PRECISION
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
    def from_option(cls, value: str, hnsw_m: int = DEFAULT_HNSW_M, **kwargs) -> IndexConfig:
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

        A setting the record leaves out has its default (:meth:`to_dict` leaves out those at their defaults, and
        folders written before ``precision`` or ``truncate_dim`` existed lack them); keys that are not settings
        (``metric``, ``rescore_multiplier``, the manifest's ``ntotal``, ``file``, ...) are ignored. So
        ``IndexConfig.from_dict(c.to_dict()) == c`` for every config whose HNSW beam widths are at their defaults
        unless it is HNSW, whose ``renormalize`` is at its default unless it truncates, and whose ``gpu`` is
        ``auto`` (settings :meth:`to_dict` does not record) unless the record gives ``gpu``.

        Args:
            d: The record.

        Returns:
            The :class:`IndexConfig`.

        Raises:
            ValueError: as the constructor, or a record without ``factory``.
        """
        _require(isinstance(d, Mapping) and "factory" in d, f"an index record needs a 'factory', got {d!r}")
        return cls(factory=d["factory"], **{k: d[k] for k in _SETTINGS if k in d})

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
        if self.precision != DEFAULT_PRECISION:
            d["precision"] = self.precision
        if self.is_binary:
            d["rescore_multiplier"] = RESCORE_MULTIPLIER
        if self.truncate_dim is not None:
            d.update(truncate_dim=self.truncate_dim, renormalize=self.renormalize)
        return d
