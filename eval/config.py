"""The settings of one comparison (``latechunk compare``): :class:`CompareConfig`, frozen and validated once.

A comparison is one model, one pipeline and one index configuration (:class:`~latechunk.config.ModelConfig`,
:class:`~latechunk.config.PipelineConfig`, :class:`~latechunk.config.IndexConfig`, the configs ``embed`` runs
with, their defaults and checks defined there once) plus its sweeps (strategies, macro windows and their overlaps,
index precisions and dimensions) and the evaluation's own settings (cut-offs, dedup, bootstrap).

Read by :mod:`.harness` (which runs it) and :mod:`.report` (which reads it back from ``results.json``); it imports
neither. Tests: ``tests/eval/test_eval_config.py``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import SimpleNamespace

from latechunk.config import (
    DEFAULT_HNSW_M,
    DEFAULT_INDEX,
    DEFAULT_PRECISION,
    MODES,
    IndexConfig,
    ModelConfig,
    PipelineConfig,
)
from latechunk.config.names import renamed

__all__ = ["DEFAULT_STRATEGIES", "CompareConfig"]

DEFAULT_STRATEGIES = ("fixed", "recursive", "heading", "sentence_window", "semantic")
"""The five built-in strategies with their default parameters."""
DEFAULT_MODES = ("late", "naive")
"""The modes ``compare`` compares by default."""
_MODES_OPTION = ",".join(DEFAULT_MODES)
DEFAULT_INDEX_GPU = "off"
"""``compare``'s FAISS runs on the CPU unless asked (``--index-gpu``), so CPU and GPU runs search alike."""

_MODEL_OPTIONS = {"model": "name", "device": "device", "dtype": "dtype", "batch_tokens": "batch_tokens",
                  "backend": "backend", "compile": "compile", "trust_remote_code": "trust_remote_code"}
"""Old flat settings -> the :class:`~latechunk.config.ModelConfig` field that holds them."""
_PIPELINE_OPTIONS = ("modes", "include_special", "sentence_workers", "late_pooling", "macro_window_align")
"""Old flat settings that are :class:`~latechunk.config.PipelineConfig` fields of the same name."""
_INDEX_OPTIONS = {"ef_construction": "ef_construction", "ef_search": "ef_search", "index_gpu": "gpu"}
"""Old flat settings -> the :class:`~latechunk.config.IndexConfig` field that holds them."""
_OWN = {"strategies": DEFAULT_STRATEGIES, "ks": (1, 5, 10), "macro_windows": (None,),
        "macro_window_overlaps": (None,), "dedup": False, "dedup_factor": 10, "dedup_threshold": None,
        "doc_depth": 100, "index": DEFAULT_INDEX, "hnsw_m": DEFAULT_HNSW_M, "precision": (DEFAULT_PRECISION,),
        "truncate_dim": (None,), "n_resamples": 10000, "confidence": 0.95, "seed": 0, "max_queries": None,
        "use_cache": True, "cache_dir": None}
"""The sweeps and the evaluation's own settings, with their defaults (the fields of :class:`CompareConfig` beside
``dataset`` and the three configs)."""
_RENAMED = {"windows": "macro_windows", "window_overlap": "macro_window_overlaps"}
"""Old keyword -> new field (:mod:`latechunk.config.names`): accepted with a DeprecationWarning."""
_RECORD = ("dataset", "model", "strategies", "modes", "ks", "windows", "window_overlap", "macro_window_align", "dedup", "dedup_factor",
           "dedup_threshold", "doc_depth", "index", "hnsw_m", "ef_construction", "ef_search", "index_gpu",
           "precision", "truncate_dim", "device", "dtype", "batch_tokens", "backend", "compile", "include_special",
           "n_resamples", "confidence", "seed", "max_queries", "use_cache", "cache_dir", "sentence_workers",
           "late_pooling", "trust_remote_code")
"""The keys of ``results.json``'s ``config`` (:meth:`CompareConfig.to_dict`), in their order."""
_TUPLES = ("strategies", "modes", "ks", "macro_windows", "macro_window_overlaps", "precision", "truncate_dim")


def _split_list(value, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        sep = "|" if "|" in value else ","
        parts = [v.strip() for v in value.split(sep)]
        if len(parts) > 1 and not all(parts):  # "1,,5", "128|": the user meant a value there, so say so
            raise ValueError(f"--{what} {value!r}: an empty value between or around its '{sep}'; give a value "
                             f"between every two '{sep}'")
        return [v for v in parts if v]
    return [str(v).strip() for v in value]


@dataclass(frozen=True, init=False)
class CompareConfig:
    """Everything that decides a comparison's numbers (recorded in the manifest and in ``results.json``).

    Built from the flat settings below (``CompareConfig(dataset="chroma", model="m", device="cpu", windows=...)``,
    as ``results.json`` records them, or :meth:`from_options`); each is a read-only attribute too. Stored as the
    three configs ``embed`` runs with, plus the sweeps and the evaluation's settings:

    Attributes:
        dataset: ``chroma``, ``xquad`` or a path (see :func:`latechunk.eval.datasets.load_dataset`).
        model_config: The encoder of every system (:class:`~latechunk.config.ModelConfig`): ``model`` (its
            ``name``; ``None`` = the bundled all-MiniLM-L6-v2), ``device``, ``dtype``, ``batch_tokens`` (``None``:
            :func:`latechunk.encoder.default_batch_tokens`), ``backend`` (``torch``, ``onnx`` or ``onnx-int8``:
            ONNX Runtime on the CPU, float32; recorded in ``results.json``'s config and, for ONNX, the manifest's
            model block), ``compile`` (``torch.compile``: speed only) and ``trust_remote_code``.
        pipeline_config: What every system's chunks and vectors are made with
            (:class:`~latechunk.config.PipelineConfig`): every strategy, sweeps expanded (its ``strategies``, as
            :meth:`specs`), ``modes`` (a subset of :data:`latechunk.config.MODES`, in order; default
            ``late,naive``), ``include_special`` (late mode: first/last chunk absorb the frame tokens),
            ``sentence_workers`` (processes that segment sentences ahead of the split; never changes a chunk) and
            ``late_pooling`` (``"mean"``: late mode with a model whose own pooling is not mean, mean-pooling its
            token states anyway; ``None``: such a model is refused in late mode, before it loads). Its macro
            window is left unset: each late pass sets its own (``macro_windows`` x ``macro_window_overlaps``).
        index_config: The one index every system is indexed with (:meth:`index_spec`): ``index`` (``flat``,
            ``hnsw`` = ``HNSW{hnsw_m}``, or a faiss ``index_factory`` string) with ``ef_construction``,
            ``ef_search`` and ``index_gpu`` (its ``gpu``; default ``off`` so CPU and GPU runs search alike).
        strategies: SPECs as given; sweep SPECs (``fixed:size=128|256``) are expanded by :meth:`specs`.
        ks: Cut-offs for the span metrics (the document-level measures have their own).
        macro_windows: Late macro-window sizes in tokens (frame included); ``None`` = the model's default window
            (:attr:`latechunk.models.ModelFacts.default_window`: its sentence-transformers ``max_seq_length``, 256
            for all-MiniLM-L6-v2, else its input limit). The first is the main macro window (naive vectors are
            made in its pass). Old name ``windows`` (``results.json``'s key, the ``--window`` option).
        macro_window_overlaps: Content tokens shared by consecutive macro windows, one late pass per (window,
            overlap) pair, windows outer (``--window-overlap 0|32|64``); ``None`` =
            :data:`latechunk.macro_window.DEFAULT_WINDOW_OVERLAP` (0). A single int is taken as a one-value
            sweep. Old name ``window_overlap``.
        dedup: Drop retrieved chunks that overlap an earlier retrieved chunk of the same document (by char
            offsets) before scoring; the ranking is then read ``dedup_factor * max(ks)`` deep to refill.
        dedup_factor: See ``dedup``.
        dedup_threshold: ``--dedup-threshold``: also score every system as ``embed --dedup THRESHOLD`` would index
            it (chunks whose cosine to an earlier kept chunk, in document order, is at least the threshold
            dropped: :mod:`latechunk.dedup`), beside the run without dedup, and count ``NearDup@k`` (share of a
            query's top k that are near-duplicates of a higher-ranked hit) for both; ``None``: off.
        doc_depth: Chunks retrieved per query to build the document-level run.
        index / hnsw_m: The ``--index`` value as given, and M of ``hnsw`` (the index string of
            ``index_config``).
        precision / truncate_dim: Compact-vector settings (:data:`latechunk.config.PRECISIONS`; ``None`` = all
            dimensions): every system is also indexed once per (precision, truncate_dim) pair, over the same
            vectors, and scored (:meth:`index_specs`); the first pair is the main index, which every other table
            and comparison uses.
        n_resamples / confidence / seed: Paired bootstrap settings.
        max_queries: Score only the first N queries (quick runs); ``None`` = all.
        use_cache / cache_dir: The parse cache.

    Raises:
        ValueError: on an unknown mode, a bad k, window, SPEC or index setting, or anything the three configs
            refuse (an unknown device, dtype or backend, ...).
        TypeError: on an unknown keyword.
    """

    dataset: str
    model_config: ModelConfig
    pipeline_config: PipelineConfig
    index_config: IndexConfig
    strategies: tuple[str, ...]
    ks: tuple[int, ...]
    macro_windows: tuple[int | None, ...]
    macro_window_overlaps: tuple[int | None, ...]
    dedup: bool
    dedup_factor: int
    dedup_threshold: float | None
    doc_depth: int
    index: str
    hnsw_m: int
    precision: tuple[str, ...]
    truncate_dim: tuple[int | None, ...]
    n_resamples: int
    confidence: float
    seed: int
    max_queries: int | None
    use_cache: bool
    cache_dir: str | None

    def __init__(self, dataset: str, *, model_config: ModelConfig | None = None,
                 pipeline_config: PipelineConfig | None = None, index_config: IndexConfig | None = None,
                 **settings) -> None:
        """Build from flat settings (each attribute above, or the old ``model``, ``device``, ``dtype``,
        ``batch_tokens``, ``backend``, ``compile``, ``trust_remote_code``, ``modes``, ``include_special``,
        ``sentence_workers``, ``late_pooling``, ``ef_construction``, ``ef_search``, ``index_gpu``), over the three
        configs when they are given (flat settings replace their fields)."""
        for old, new in _RENAMED.items():
            if old in settings:
                renamed(f"CompareConfig({old}=)", f"CompareConfig({new}=)")
                if new in settings:
                    raise TypeError(f"CompareConfig() got both {old}= and {new}= (its new name)")
                settings[new] = settings.pop(old)
        known = {*_OWN, *_MODEL_OPTIONS, *_PIPELINE_OPTIONS, *_INDEX_OPTIONS}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise TypeError(f"CompareConfig() got an unexpected keyword argument {unknown[0]!r}")
        model = model_config or ModelConfig()
        index = index_config or IndexConfig(gpu=DEFAULT_INDEX_GPU)
        pipe = ({k: getattr(pipeline_config, k) for k in _PIPELINE_OPTIONS} if pipeline_config is not None else
                {"modes": DEFAULT_MODES, **{f.name: f.default for f in dataclasses.fields(PipelineConfig)
                                            if f.name in _PIPELINE_OPTIONS[1:]}})
        v = SimpleNamespace(**{"dataset": dataset, **_OWN, **{k: getattr(model, a) for k, a in _MODEL_OPTIONS.items()},
                               **pipe, **{k: getattr(index, a) for k, a in _INDEX_OPTIONS.items()}, **settings})
        overlaps = v.macro_window_overlaps
        if overlaps is None or isinstance(overlaps, int):  # one value (older results.json)
            v.macro_window_overlaps = (overlaps,)
        for name in _TUPLES:
            if isinstance(getattr(v, name), list):
                setattr(v, name, tuple(getattr(v, name)))
        model, index, specs = _check_config(v, model)
        for name in ("dataset", *_OWN):
            object.__setattr__(self, name, getattr(v, name))
        object.__setattr__(self, "model_config", model)
        object.__setattr__(self, "index_config", index)
        object.__setattr__(self, "pipeline_config", dataclasses.replace(
            pipeline_config or PipelineConfig(strategies=tuple(specs)), strategies=tuple(specs),
            **{k: getattr(v, k) for k in _PIPELINE_OPTIONS}))

    # the flat settings of earlier versions (results.json's keys), read-only
    model = property(lambda self: self.model_config.name, doc="The model's name or folder (``model_config.name``).")
    device = property(lambda self: self.model_config.device, doc="``model_config.device``.")
    dtype = property(lambda self: self.model_config.dtype, doc="``model_config.dtype`` (canonical: ``bfloat16``).")
    batch_tokens = property(lambda self: self.model_config.batch_tokens, doc="``model_config.batch_tokens``.")
    backend = property(lambda self: self.model_config.backend, doc="``model_config.backend``.")
    compile = property(lambda self: self.model_config.compile, doc="``model_config.compile``.")
    trust_remote_code = property(lambda self: self.model_config.trust_remote_code,
                                 doc="``model_config.trust_remote_code``.")
    modes = property(lambda self: self.pipeline_config.modes, doc="``pipeline_config.modes``.")
    include_special = property(lambda self: self.pipeline_config.include_special,
                               doc="``pipeline_config.include_special``.")
    sentence_workers = property(lambda self: self.pipeline_config.sentence_workers,
                                doc="``pipeline_config.sentence_workers``.")
    late_pooling = property(lambda self: self.pipeline_config.late_pooling, doc="``pipeline_config.late_pooling``.")
    macro_window_align = property(lambda self: self.pipeline_config.macro_window_align,
                                  doc="``pipeline_config.macro_window_align``.")
    ef_construction = property(lambda self: self.index_config.ef_construction,
                               doc="``index_config.ef_construction``.")
    ef_search = property(lambda self: self.index_config.ef_search, doc="``index_config.ef_search``.")
    index_gpu = property(lambda self: self.index_config.gpu, doc="``index_config.gpu``.")
    windows = property(lambda self: self.macro_windows, doc="The old name of :attr:`macro_windows`.")
    window_overlap = property(lambda self: self.macro_window_overlaps,
                              doc="The old name of :attr:`macro_window_overlaps`.")

    def late_passes(self) -> list[tuple[int | None, int | None]]:
        """The late passes of the comparison: one per (macro window, overlap) pair, windows outer.

        Returns:
            ``[(window, overlap), ...]`` in tokens (``None``: the model's default); the first is the main pass
            (naive and contextual vectors are made in its call).
        """
        return [(w, o) for w in self.macro_windows for o in self.macro_window_overlaps]

    @classmethod
    def from_options(
        cls, *, dataset: str, strategies=None, modes=_MODES_OPTION, k="1,5,10", macro_window=None,
        precision=DEFAULT_PRECISION, truncate_dim=None, macro_window_overlap=None, **kwargs
    ) -> CompareConfig:
        """Build from command-line style values (``latechunk compare``'s options).

        Args:
            dataset: As :attr:`dataset`.
            strategies: SPECs; ``None`` or empty = :data:`DEFAULT_STRATEGIES`.
            modes: ``"late,naive"`` style (``,`` or ``|`` separated), or a sequence.
            k: ``"1,5,10"`` style cut-offs, or a sequence.
            macro_window: ``"128|256"`` style macro-window sizes in tokens; ``None`` = the model's default window.
                (Old name ``window``, accepted with a DeprecationWarning.)
            macro_window_overlap: ``"0|32|64"`` style overlaps in tokens, an int, or ``None`` (the default, 0).
                (Old name ``window_overlap``, accepted with a DeprecationWarning.)
            precision: ``"float32,int8,ubinary"`` style precisions (``,`` or ``|`` separated), or a sequence.
            truncate_dim: ``"128,256"`` style dimensions, an int, a sequence, or ``None`` (all dimensions).
            **kwargs: Any other setting.

        Returns:
            The validated config.

        Raises:
            ValueError: on a k or window that is not an integer, or anything the constructor rejects.
        """
        for old, new in (("window", "macro_window"), ("window_overlap", "macro_window_overlap")):
            if old in kwargs:
                renamed(f"CompareConfig.from_options({old}=)", f"CompareConfig.from_options({new}=)")
                value = kwargs.pop(old)
                if new == "macro_window":
                    macro_window = value if macro_window is None else macro_window
                else:
                    macro_window_overlap = value if macro_window_overlap is None else macro_window_overlap
        ks = tuple(_to_int(v, "k") for v in _split_list(k, "k"))
        wins = tuple(_to_int(v, "macro-window") for v in _split_list(macro_window, "macro-window")) or (None,)
        overlaps = ((macro_window_overlap,) if isinstance(macro_window_overlap, int) else
                    tuple(_to_int(v, "macro-window-overlap")
                          for v in _split_list(macro_window_overlap, "macro-window-overlap"))
                    or (None,))
        dims = truncate_dim if isinstance(truncate_dim, int) else _split_list(truncate_dim, "truncate-dim")
        kwargs["precision"] = tuple(_split_list(precision, "precision")) or (DEFAULT_PRECISION,)
        kwargs["truncate_dim"] = ((dims,) if isinstance(dims, int) else
                                  tuple(None if v.lower() in ("none", "all") else _to_int(v, "truncate-dim") for v in dims)
                                  or (None,))
        return cls(
            dataset=str(dataset),
            strategies=tuple(strategies) if strategies else DEFAULT_STRATEGIES,
            modes=tuple(_split_list(modes, "modes")),
            ks=ks,
            macro_windows=wins,
            macro_window_overlaps=overlaps,
            **kwargs,
        )

    def specs(self) -> list[str]:
        """The canonical SPEC of every strategy, sweeps expanded, in order.

        Returns:
            One canonical SPEC string per strategy (:attr:`Strategy.spec
            <latechunk.strategies.base.Strategy.spec>`), every parameter filled in.

        Raises:
            ValueError: on an unknown strategy or parameter, or a strategy given twice once sweeps are expanded.
        """
        return _specs(self.strategies)

    def index_spec(self) -> IndexConfig:
        """The one index configuration every system is indexed with.

        Returns:
            :attr:`index_config`: the ``index`` option (``flat`` -> ``Flat``, ``hnsw`` -> ``HNSW{hnsw_m}``, else a
            faiss ``index_factory`` string) with this config's HNSW beam widths and GPU setting; inner products
            over the unit-norm vectors of the harness (cosine).
        """
        return self.index_config

    def index_specs(self) -> list[IndexConfig]:
        """The index of every compact-vector setting: :meth:`index_spec` with each (precision, truncate_dim) pair,
        truncate_dim outer, precision inner; the first is the main index.

        Returns:
            A list of :class:`latechunk.config.IndexConfig`, distinct, main first.
        """
        return _index_specs(self.index_config, self.truncate_dim, self.precision)

    def to_dict(self) -> dict:
        """The flat settings as a JSON-ready dict (``results.json``'s ``config``; its keys and their order are those
        of earlier versions: ``windows`` and ``window_overlap`` for the macro-window sweeps).

        Returns:
            ``{setting: value}``, tuples as lists; :meth:`from_dict` reads it back.
        """
        return {k: list(v) if isinstance(v, tuple) else v for k, v in ((k, getattr(self, k)) for k in _RECORD)}

    @classmethod
    def from_dict(cls, d: dict) -> CompareConfig:
        """The config of a :meth:`to_dict` dict.

        Args:
            d: ``{setting: value}`` (``results.json``'s ``config``, of this version or an earlier one); unknown
                keys are ignored, lists become tuples.

        Returns:
            The validated config.

        Raises:
            ValueError: as the constructor.
        """
        names = {"dataset", *_OWN, *_MODEL_OPTIONS, *_PIPELINE_OPTIONS, *_INDEX_OPTIONS}
        kwargs = {_RENAMED.get(k, k): (tuple(v) if isinstance(v, list) else v) for k, v in d.items()
                  if _RENAMED.get(k, k) in names}
        return cls(**kwargs)


def _to_int(value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError as err:
        raise ValueError(f"--{what}: {value!r} is not an integer") from err


def _specs(strategies) -> list[str]:
    """:meth:`CompareConfig.specs` of these strategies."""
    from latechunk.strategies.base import expand_spec, get_strategy

    out: list[str] = []
    for s in strategies:
        for one in expand_spec(s):
            spec = get_strategy(one).spec
            if spec in out:
                raise ValueError(f"strategy {spec!r} is given twice (after expanding sweeps)")
            out.append(spec)
    return out


def _index_specs(base: IndexConfig, truncate_dims, precisions) -> list[IndexConfig]:
    """:meth:`CompareConfig.index_specs` of this index; a pair given twice or a precision the index cannot take
    (``ubinary`` needs ``flat``) raises ``ValueError``."""
    out = []
    for t in truncate_dims:
        for p in precisions:
            spec = dataclasses.replace(base, precision=p, truncate_dim=t)
            if spec in out:
                raise ValueError(f"compact-vector setting {spec.label} is given twice (--precision, --truncate-dim)")
            out.append(spec)
    return out


def _check_factory_early(index: IndexConfig) -> None:
    """The index string checked as ``embed`` checks it (:func:`latechunk.index.check_factory`) before the model
    loads: an unknown string or an ID map failed only after every system was encoded (``IDMap,Flat`` with a
    traceback). The model's dimension is not known yet, so the string is refused only when it fits none of the
    common ones (384, 768, 1024: a PQ's code count must divide the dimension)."""
    from latechunk.index import check_factory

    err = None
    for dim in (384, 768, 1024):
        try:
            check_factory(index, dim)
            return
        except ValueError as e:
            err = e
    raise ValueError(str(err)) from err


def _check_config(c: SimpleNamespace, model: ModelConfig) -> tuple[ModelConfig, IndexConfig, list[str]]:
    """Validate a comparison's flat settings up front (every error before any work), in the order of earlier
    versions (so a config with two faults names the same one).

    Args:
        c: Every flat setting of :class:`CompareConfig` (the old names of the three configs' fields).
        model: The model config the settings replace fields of.

    Returns:
        ``(model config, index config, SPECs with sweeps expanded)``.
    """
    if c.modes and all(m in MODES for m in c.modes) and len(set(c.modes)) != len(c.modes):
        repeated = sorted({m for m in c.modes if c.modes.count(m) > 1}, key=list(c.modes).index)
        raise ValueError(f"modes repeat: {', '.join(repeated)} given more than once in {list(c.modes)}")
    if not c.modes or any(m not in MODES for m in c.modes):
        raise ValueError(
            f"modes must be a non-empty subset of late, naive, contextual, fused (e.g. 'late,naive,fused'), "
            f"got {list(c.modes)}"
        )
    if not c.ks or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in c.ks):
        raise ValueError(f"k values must be integers >= 1 (e.g. '1,5,10'), got {list(c.ks)}")
    if len(set(c.ks)) != len(c.ks):
        raise ValueError(f"k values repeat: {list(c.ks)}")
    if not c.macro_windows or any(
        w is not None and (isinstance(w, bool) or not isinstance(w, int) or w < 1) for w in c.macro_windows
    ):  # the model's own minimum (its frame + 16 content tokens) is checked with its files
        raise ValueError(f"windows must be positive integers of tokens (e.g. '128|256|512'), got "
                         f"{list(c.macro_windows)}")
    if len(set(c.macro_windows)) != len(c.macro_windows):
        raise ValueError(f"window sizes repeat: {list(c.macro_windows)}")
    if len(c.macro_windows) > 1 and "late" not in c.modes:
        raise ValueError("a window sweep (--window a|b) needs late mode: windows only change late vectors")
    overlaps = c.macro_window_overlaps
    if not overlaps or any(o is not None and (isinstance(o, bool) or not isinstance(o, int) or o < 0) for o in overlaps):
        raise ValueError(f"window overlaps must be integers >= 0 tokens (e.g. '0|32|64'), got {list(overlaps)}")
    if len(set(c.macro_window_overlaps)) != len(c.macro_window_overlaps):
        raise ValueError(f"window overlaps repeat: {list(c.macro_window_overlaps)}")
    if len(c.macro_window_overlaps) > 1 and "late" not in c.modes:
        raise ValueError("a window-overlap sweep (--window-overlap a|b) needs late mode: overlaps only change late "
                         "vectors")
    # an unknown device, dtype or backend, ONNX on a GPU or in 16 bits, --compile with ONNX: the encoder config's own
    model = dataclasses.replace(model, **{a: getattr(c, k) for k, a in _MODEL_OPTIONS.items()})
    if c.sentence_workers < 0:
        raise ValueError(f"--sentence-workers (sentence_workers) must be >= 0 (0: segment in the main process), "
                         f"got {c.sentence_workers}")
    if c.dedup_threshold is not None:
        from latechunk.dedup import check_threshold

        check_threshold(c.dedup_threshold, "--dedup-threshold")
    for name in ("dedup_factor", "doc_depth", "n_resamples"):  # batch_tokens: the model config's check
        if getattr(c, name) < 1:
            raise ValueError(f"{name} must be >= 1, got {getattr(c, name)}")
    if not 0.0 < c.confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {c.confidence}")
    if c.max_queries is not None and c.max_queries < 1:
        raise ValueError(f"max_queries must be >= 1, got {c.max_queries}")
    if not c.strategies:
        raise ValueError("give at least one strategy SPEC")
    if not c.precision or not c.truncate_dim:
        raise ValueError("give at least one --precision (e.g. float32,int8,ubinary)")
    specs = _specs(c.strategies)  # unknown names and bad parameters raise here
    index = IndexConfig.from_option(c.index, hnsw_m=c.hnsw_m, ef_construction=c.ef_construction,
                                    ef_search=c.ef_search, gpu=c.index_gpu)
    _index_specs(index, c.truncate_dim, c.precision)  # and bad index, precision and truncate_dim settings here
    _check_factory_early(index)
    if "IVF" in index.factory.upper():
        # embed fits an IVF index's nlist to its corpus (n // 39 below 39 * nlist vectors): here each system has
        # its own chunk count, so the systems would not share one index setting, and an evaluation corpus of a few
        # thousand chunks trains lists on a handful of vectors each
        raise ValueError(f"--index {c.index}: compare indexes every system alike, with flat, hnsw or another faiss "
                         "string without IVF (Flat, HNSW32, HNSW32,SQ8); an IVF index's lists are fitted to each "
                         "corpus's size. Measure an IVF index's recall cost on one corpus with `latechunk embed "
                         "--index IVF...` and `latechunk search --nprobe`")
    return model, index, specs
