"""The settings of one comparison (``latechunk compare``): :class:`CompareConfig`, frozen and validated once.

Read by :mod:`.harness` (which runs it) and :mod:`.report` (which reads it back from ``results.json``); it imports
neither. Tests: ``tests/test_eval_harness.py``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from latechunk.config import LATE_POOLINGS, MODES, ModelConfig

__all__ = ["DEFAULT_STRATEGIES", "CompareConfig"]

DEFAULT_STRATEGIES = ("fixed", "recursive", "heading", "sentence_window", "semantic")
"""The five built-in strategies with their default parameters."""


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


@dataclass(frozen=True)
class CompareConfig:
    """Everything that decides a comparison's numbers (recorded in the manifest).

    Attributes:
        dataset: ``chroma``, ``xquad`` or a path (see :func:`latechunk.eval.datasets.load_dataset`).
        model: Model name or folder; ``None`` = the bundled all-MiniLM-L6-v2.
        strategies: SPECs; sweep SPECs (``fixed:size=128|256``) are expanded.
        modes: Subset of ``("late", "naive", "contextual")`` (:data:`latechunk.config.MODES`), in order.
        ks: Cut-offs for the span metrics (the document-level measures have their own).
        windows: Late macro-window sizes in tokens (frame included); ``None`` = the model's default window
            (:attr:`latechunk.models.ModelFacts.default_window`: its sentence-transformers ``max_seq_length``, 256
            for all-MiniLM-L6-v2, else its input limit). The first is the main macro window (naive vectors are
            made in its pass). (Named ``windows``/``window_overlap`` like the ``--window`` option and the report's
            keys.)
        window_overlap: Content tokens shared by consecutive macro windows, one late pass per (window, overlap)
            pair, windows outer (``--window-overlap 0|32|64``); ``None`` =
            :data:`latechunk.macro_window.DEFAULT_WINDOW_OVERLAP` (0). A single int is taken as a one-value
            sweep.
        dedup: Drop retrieved chunks that overlap an earlier retrieved chunk of the same document (by char
            offsets) before scoring; the ranking is then read ``dedup_factor * max(ks)`` deep to refill.
        dedup_factor: See ``dedup``.
        dedup_threshold: ``--dedup-threshold``: also score every system as ``embed --dedup THRESHOLD`` would index
            it (chunks whose cosine to an earlier kept chunk, in document order, is at least the threshold
            dropped: :mod:`latechunk.dedup`), beside the run without dedup, and count ``NearDup@k`` (share of a
            query's top k that are near-duplicates of a higher-ranked hit) for both; ``None``: off.
        doc_depth: Chunks retrieved per query to build the document-level run.
        index / hnsw_m / ef_construction / ef_search: One index configuration for every system
            (:meth:`index_spec`).
        precision / truncate_dim: Compact-vector settings (:data:`latechunk.config.PRECISIONS`; ``None`` = all
            dimensions): every system is also indexed once per (precision, truncate_dim) pair, over the same
            vectors, and scored (:meth:`index_specs`); the first pair is the main index, which every other table
            and comparison uses.
        index_gpu: FAISS on the GPU (``auto``/``on``/``off``); default ``off`` so CPU and GPU runs search alike.
        device / dtype / batch_tokens: Encoder settings (``batch_tokens`` ``None``: the encoder's default,
            :func:`latechunk.encoder.default_batch_tokens`).
        backend: What runs the model (``--backend``): ``torch`` (any device), ``onnx`` or ``onnx-int8`` (ONNX
            Runtime on the CPU, float32; :mod:`latechunk.onnx_backend`). Recorded in ``results.json``'s config,
            and (for the ONNX backends) in the manifest's model block.
        compile: Run the torch forward through ``torch.compile`` (``--compile``;
            :class:`~latechunk.encoder.Encoder`'s ``compile``): speed only, the same vectors to float rounding.
        include_special: Late mode: first/last chunk absorb the frame tokens.
        n_resamples / confidence / seed: Paired bootstrap settings.
        max_queries: Score only the first N queries (quick runs); ``None`` = all.
        use_cache / cache_dir: The parse cache.
        sentence_workers: Processes that segment sentences ahead of the split (0: in this process); never
            changes a chunk.
        trust_remote_code: Run the model repository's own Python code (``--trust-remote-code``; only for models
            that need it).
        late_pooling: ``"mean"``: late mode with a model whose own pooling is not mean (CLS, last token, max),
            mean-pooling its token states anyway; ``None``: such a model is refused in late mode
            (:meth:`latechunk.config.PipelineConfig.check_model`, before the model loads).

    Raises:
        ValueError: on an unknown mode, a bad k, window, SPEC or index setting.
    """

    dataset: str
    model: str | None = None
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    modes: tuple[str, ...] = ("late", "naive")
    ks: tuple[int, ...] = (1, 5, 10)
    windows: tuple[int | None, ...] = (None,)
    window_overlap: tuple[int | None, ...] = (None,)
    dedup: bool = False
    dedup_factor: int = 10
    dedup_threshold: float | None = None
    doc_depth: int = 100
    index: str = "flat"
    hnsw_m: int = 32
    ef_construction: int = 200
    ef_search: int = 128
    index_gpu: str = "off"
    precision: tuple[str, ...] = ("float32",)
    truncate_dim: tuple[int | None, ...] = (None,)
    device: str = "auto"
    dtype: str | None = None
    batch_tokens: int | None = None
    backend: str = "torch"
    compile: bool = False
    include_special: bool = False
    n_resamples: int = 10000
    confidence: float = 0.95
    seed: int = 0
    max_queries: int | None = None
    use_cache: bool = True
    cache_dir: str | None = None
    sentence_workers: int = 0
    late_pooling: str | None = None
    trust_remote_code: bool = False

    def __post_init__(self) -> None:
        if self.window_overlap is None or isinstance(self.window_overlap, int):  # one value (older results.json)
            object.__setattr__(self, "window_overlap", (self.window_overlap,))
        _check_config(self)

    def late_passes(self) -> list[tuple[int | None, int | None]]:
        """The late passes of the comparison: one per (macro window, overlap) pair, windows outer.

        Returns:
            ``[(window, overlap), ...]`` in tokens (``None``: the model's default); the first is the main pass
            (naive and contextual vectors are made in its call).
        """
        return [(w, o) for w in self.windows for o in self.window_overlap]

    @classmethod
    def from_options(
        cls, *, dataset: str, strategies=None, modes="late,naive", k="1,5,10", window=None, precision="float32",
        truncate_dim=None, window_overlap=None, **kwargs
    ) -> CompareConfig:
        """Build from command-line style values (``latechunk compare``'s options).

        Args:
            dataset: As :attr:`dataset`.
            strategies: SPECs; ``None`` or empty = :data:`DEFAULT_STRATEGIES`.
            modes: ``"late,naive"`` style (``,`` or ``|`` separated), or a sequence.
            k: ``"1,5,10"`` style cut-offs, or a sequence.
            window: ``"128|256"`` style macro-window sizes in tokens; ``None`` = the model's default window.
            window_overlap: ``"0|32|64"`` style overlaps in tokens, an int, or ``None`` (the default, 0).
            precision: ``"float32,int8,ubinary"`` style precisions (``,`` or ``|`` separated), or a sequence.
            truncate_dim: ``"128,256"`` style dimensions, an int, a sequence, or ``None`` (all dimensions).
            **kwargs: Any other field.

        Returns:
            The validated config.

        Raises:
            ValueError: on a k or window that is not an integer, or anything the constructor rejects.
        """
        ks = tuple(_to_int(v, "k") for v in _split_list(k, "k"))
        wins = tuple(_to_int(v, "window") for v in _split_list(window, "window")) or (None,)
        overlaps = ((window_overlap,) if isinstance(window_overlap, int) else
                    tuple(_to_int(v, "window-overlap") for v in _split_list(window_overlap, "window-overlap"))
                    or (None,))
        dims = truncate_dim if isinstance(truncate_dim, int) else _split_list(truncate_dim, "truncate-dim")
        kwargs["precision"] = tuple(_split_list(precision, "precision")) or ("float32",)
        kwargs["truncate_dim"] = ((dims,) if isinstance(dims, int) else
                                  tuple(None if v.lower() in ("none", "all") else _to_int(v, "truncate-dim") for v in dims)
                                  or (None,))
        return cls(
            dataset=str(dataset),
            strategies=tuple(strategies) if strategies else DEFAULT_STRATEGIES,
            modes=tuple(_split_list(modes, "modes")),
            ks=ks,
            windows=wins,
            window_overlap=overlaps,
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
        from latechunk.strategies.base import expand_spec, get_strategy

        out: list[str] = []
        for s in self.strategies:
            for one in expand_spec(s):
                spec = get_strategy(one).spec
                if spec in out:
                    raise ValueError(f"strategy {spec!r} is given twice (after expanding sweeps)")
                out.append(spec)
        return out

    def index_spec(self):
        """The one index configuration every system is indexed with.

        Returns:
            A :class:`latechunk.config.IndexConfig` of the ``index`` option (``flat`` -> ``Flat``, ``hnsw`` ->
            ``HNSW{hnsw_m}``, else a faiss ``index_factory`` string) with this config's HNSW beam widths and GPU
            setting; inner products over the unit-norm vectors of the harness (cosine).

        Raises:
            ValueError: on an empty factory string or unknown GPU setting, or non-positive HNSW parameters.
        """
        from latechunk.config import IndexConfig

        return IndexConfig.from_option(
            self.index,
            hnsw_m=self.hnsw_m,
            ef_construction=self.ef_construction,
            ef_search=self.ef_search,
            gpu=self.index_gpu,
        )

    def index_specs(self) -> list:
        """The index of every compact-vector setting: :meth:`index_spec` with each (precision, truncate_dim) pair,
        truncate_dim outer, precision inner; the first is the main index.

        Returns:
            A list of :class:`latechunk.config.IndexConfig`, distinct, main first.

        Raises:
            ValueError: on an unknown precision, a bad ``truncate_dim``, a pair given twice, or a precision the
                index cannot take (``ubinary`` needs ``flat``).
        """
        import dataclasses

        base = self.index_spec()
        out = []
        for t in self.truncate_dim:
            for p in self.precision:
                spec = dataclasses.replace(base, precision=p, truncate_dim=t)
                if spec in out:
                    raise ValueError(f"compact-vector setting {spec.label} is given twice (--precision, --truncate-dim)")
                out.append(spec)
        return out

    def to_dict(self) -> dict:
        """The fields as a JSON-ready dict (``results.json``'s ``config``).

        Returns:
            ``{field: value}``, tuples as lists; :meth:`from_dict` reads it back.
        """
        d = asdict(self)
        for key in ("strategies", "modes", "ks", "windows", "window_overlap", "precision", "truncate_dim"):
            d[key] = list(d[key])
        return d

    @classmethod
    def from_dict(cls, d: dict) -> CompareConfig:
        """The config of a :meth:`to_dict` dict.

        Args:
            d: ``{field: value}``; unknown keys are ignored, lists become tuples.

        Returns:
            The validated config.

        Raises:
            ValueError: as the constructor.
        """
        names = {f.name for f in fields(cls)}
        kwargs = {k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items() if k in names}
        return cls(**kwargs)


def _to_int(value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError as err:
        raise ValueError(f"--{what}: {value!r} is not an integer") from err


def _check_factory_early(c: CompareConfig) -> None:
    """The index string checked as ``embed`` checks it (:func:`latechunk.index.check_factory`) before the model
    loads: an unknown string or an ID map failed only after every system was encoded (``IDMap,Flat`` with a
    traceback). The model's dimension is not known yet, so the string is refused only when it fits none of the
    common ones (384, 768, 1024: a PQ's code count must divide the dimension)."""
    from latechunk.index import check_factory

    err = None
    for dim in (384, 768, 1024):
        try:
            check_factory(c.index_spec(), dim)
            return
        except ValueError as e:
            err = e
    raise ValueError(str(err)) from err


def _check_config(c: CompareConfig) -> None:
    """Validate a config up front (every error before any work)."""
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
    if not c.windows or any(
        w is not None and (isinstance(w, bool) or not isinstance(w, int) or w < 1) for w in c.windows
    ):  # the model's own minimum (its frame + 16 content tokens) is checked with its files
        raise ValueError(f"windows must be positive integers of tokens (e.g. '128|256|512'), got {list(c.windows)}")
    if len(set(c.windows)) != len(c.windows):
        raise ValueError(f"window sizes repeat: {list(c.windows)}")
    if len(c.windows) > 1 and "late" not in c.modes:
        raise ValueError("a window sweep (--window a|b) needs late mode: windows only change late vectors")
    if not c.window_overlap or any(o is not None and (isinstance(o, bool) or not isinstance(o, int) or o < 0)
                                   for o in c.window_overlap):
        raise ValueError(f"window overlaps must be integers >= 0 tokens (e.g. '0|32|64'), got {list(c.window_overlap)}")
    if len(set(c.window_overlap)) != len(c.window_overlap):
        raise ValueError(f"window overlaps repeat: {list(c.window_overlap)}")
    if len(c.window_overlap) > 1 and "late" not in c.modes:
        raise ValueError("a window-overlap sweep (--window-overlap a|b) needs late mode: overlaps only change late "
                         "vectors")
    if c.backend != "torch" or c.dtype is not None or c.compile:  # an unknown dtype or backend, ONNX on a GPU or in
        # 16 bits, --compile with ONNX: the encoder config's own check
        ModelConfig(device=c.device, dtype=c.dtype, backend=c.backend, compile=c.compile)
    if c.sentence_workers < 0:
        raise ValueError(f"--sentence-workers (sentence_workers) must be >= 0 (0: segment in the main process), "
                         f"got {c.sentence_workers}")
    if c.late_pooling is not None and c.late_pooling not in LATE_POOLINGS:
        raise ValueError(f"late_pooling (--late-pooling) must be one of {list(LATE_POOLINGS)} or unset, "
                         f"got {c.late_pooling!r}")
    if c.dedup_threshold is not None:
        from latechunk.dedup import check_threshold

        check_threshold(c.dedup_threshold, "--dedup-threshold")
    for name in ("dedup_factor", "doc_depth", "batch_tokens", "n_resamples"):
        if name == "batch_tokens" and c.batch_tokens is None:
            continue
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
    c.specs()  # unknown names and bad parameters raise here
    c.index_specs()  # and bad index, precision and truncate_dim settings here
    _check_factory_early(c)
    if "IVF" in c.index_spec().factory.upper():
        # embed fits an IVF index's nlist to its corpus (n // 39 below 39 * nlist vectors): here each system has
        # its own chunk count, so the systems would not share one index setting, and an evaluation corpus of a few
        # thousand chunks trains lists on a handful of vectors each
        raise ValueError(f"--index {c.index}: compare indexes every system alike, with flat, hnsw or another faiss "
                         "string without IVF (Flat, HNSW32, HNSW32,SQ8); an IVF index's lists are fitted to each "
                         "corpus's size. Measure an IVF index's recall cost on one corpus with `latechunk embed "
                         "--index IVF...` and `latechunk search --nprobe`")
