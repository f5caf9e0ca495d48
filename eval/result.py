"""What a comparison produces: one :class:`System` per strategy x mode x window, gathered in a :class:`CompareResult`.

Built by :mod:`.harness`, written and read back by :mod:`.report`; this module imports neither. Tests:
``tests/eval/test_eval_harness.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .config import CompareConfig
from .datasets import EvalDataset

__all__ = ["MODE_PAIRS", "CompareResult", "System"]

MODE_PAIRS: tuple[tuple[str, str], ...] = (("late", "naive"), ("late", "contextual"), ("naive", "contextual"),
                                           ("fused", "late"), ("fused", "naive"))
"""The mode pairs compared per strategy (A minus B, paired bootstrap) where both modes run; a comparison's ``kind``
is ``"A-B"`` (``"late-naive"``, ``"late-contextual"``, ``"naive-contextual"``, ``"fused-late"``,
``"fused-naive"``). Defined here, beside the result it labels, so that :mod:`.harness` (which makes the
comparisons) and :mod:`.report` (which draws them) read one list; ``harness.MODE_PAIRS`` re-exports it.
"""


@dataclass
class System:
    """One strategy in one mode (and, for late, one window): one index, one ranking per query.

    Attributes:
        strategy: Canonical SPEC.
        mode: ``"late"``, ``"naive"`` or ``"contextual"`` (naive with the header ``[title > section path]``).
        window: The late macro window (tokens) that made the vectors (late) or the boundaries (naive and
            contextual with state-dependent boundaries); ``None`` for naive and contextual vectors of boundaries
            that no window changes.
        label: Row label in the report (``late``, ``naive``, ``contextual``, ``late w=256``, ...).
        chunks_sha256: sha256 of the chunk records the index rows stand for (:func:`chunk_records_sha256`).
        per_query: ``{metric: {query_id: value}}``.
        aggregates: ``{metric: mean over queries}``.
        std: ``{metric: population standard deviation over queries}`` (Chroma reports mean ± std).
        costs: Chunk counts, tokens, overlap, index bytes, seconds.
        window_overlap: The late pass's window overlap (content tokens) where ``window`` is set; else ``None``.
        compact: With several compact-vector settings (``--precision``, ``--truncate-dim``): ``{label: {
            "precision", "truncate_dim", "faiss_factory", "metrics": {metric: mean}, "index_bytes",
            "index_ntotal", "overlap_k", "overlap_with_main" (mean share of the main index's top-k chunks in this
            index's top k), "seconds_index", "seconds_search_and_score"}}``, the main setting first; else empty.
        top_hits: ``{query_id: hits}``: the first k (the largest ``--k``) chunks the main index returned, best
            first, each ``doc_id:char_start-char_end`` (half-open character offsets), joined with ``" | "``;
            ``per_query.csv``'s ``top_hits`` column (not in ``results.json``).
    """

    strategy: str
    mode: str
    window: int | None
    label: str
    chunks_sha256: str = ""
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)
    aggregates: dict[str, float] = field(default_factory=dict)
    std: dict[str, float] = field(default_factory=dict)
    costs: dict = field(default_factory=dict)
    compact: dict = field(default_factory=dict)
    window_overlap: int | None = None
    top_hits: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def key(self) -> tuple[str, str, int | None, int | None]:
        """``(strategy, mode, window, window_overlap)``, unique within a result."""
        return (self.strategy, self.mode, self.window, self.window_overlap)

    def to_dict(self, per_query: bool = False) -> dict:
        """The system as a JSON-ready dict.

        Args:
            per_query: Also include ``per_query`` (``{metric: {query_id: value}}``).

        Returns:
            ``strategy``, ``mode``, ``window``, ``label``, ``chunks_sha256``, ``metrics`` (the aggregates), ``std``
            and ``costs``; ``compact`` where there are several compact-vector settings.
        """
        d = {
            "strategy": self.strategy,
            "mode": self.mode,
            "window": self.window,
            "window_overlap": self.window_overlap,
            "label": self.label,
            "chunks_sha256": self.chunks_sha256,
            "metrics": dict(self.aggregates),
            "std": dict(self.std),
            "costs": dict(self.costs),
        }
        if self.compact:
            d["compact"] = {label: dict(v) for label, v in self.compact.items()}
        if per_query:
            d["per_query"] = {m: dict(v) for m, v in self.per_query.items()}
        return d


@dataclass
class CompareResult:
    """The output of :func:`latechunk.eval.harness.run_compare` (and of :func:`latechunk.eval.report.load_result`).

    Attributes:
        config: The config.
        systems: Every system, in report order (strategy, then late windows, then naive, then contextual).
        comparisons: Paired bootstrap results (dicts: kind, a, b, metric, mean_diff, ci_low, ci_high, ...); the
            kinds are ``late-naive``, ``late-contextual``, ``naive-contextual`` (mode A minus mode B per strategy
            and window: :data:`MODE_PAIRS`), ``strategy`` and ``window``.
        metric_names: Per-query metric names, in column order.
        headline: The metrics compared across strategies and windows.
        main_k: The k of the headline metric in plots (5 when given, else the largest).
        manifest: Dataset, model, index, windows, query vectors, versions, machine, seconds, command line, and
            ``titles`` (``{"origins": {origin: documents}, "examples": [...]}``: where each document's title came
            from, :func:`latechunk.titles.document_title`).
        embeds: ``{(window, overlap): EmbedResult}``, one per late pass (tokens; kept for inspection and tests).
        dataset: The evaluated dataset (queries cut to ``max_queries``).
        questions: ``{query_id: question text}`` for ``per_query.csv``'s ``question`` column where ``dataset`` is
            None (:func:`latechunk.eval.report.load_result` reads it back); empty otherwise.
    """

    config: CompareConfig
    systems: list[System]
    comparisons: list[dict]
    metric_names: list[str]
    headline: list[str]
    main_k: int
    manifest: dict
    embeds: dict = field(default_factory=dict, repr=False)
    dataset: EvalDataset | None = field(default=None, repr=False)
    questions: dict[str, str] = field(default_factory=dict, repr=False)

    def system(self, strategy: str, mode: str, window: int | None = "first",  # type: ignore[assignment]
               window_overlap: int | None = "any") -> System:  # type: ignore[assignment]
        """The system of a strategy (any SPEC form) and mode.

        Args:
            strategy: A SPEC, canonical or not (``fixed`` = ``fixed:size=256,overlap=0``).
            mode: ``"late"``, ``"naive"`` or ``"contextual"``.
            window: A macro window (tokens), ``None``, or ``"first"``: the first matching system.
            window_overlap: A window overlap (tokens), ``None``, or ``"any"``.

        Returns:
            The first matching system in report order.

        Raises:
            KeyError: if the result holds no such system.
            ValueError: if ``strategy`` is not a valid SPEC.
        """
        from latechunk.strategies.base import get_strategy

        spec = get_strategy(strategy).spec
        cands = [s for s in self.systems if s.strategy == spec and s.mode == mode]
        if window != "first":
            cands = [s for s in cands if s.window == window]
        if window_overlap != "any":
            cands = [s for s in cands if s.window_overlap == window_overlap]
        if not cands:
            raise KeyError(f"no system {spec!r} {mode} window={window}")
        return cands[0]

    def numbers(self) -> dict:
        """Every number that does not depend on wall-clock time (for determinism checks).

        Returns:
            ``{"systems": [...], "comparisons": [...], "query_vectors_sha256": str}``: each system's dict
            with its per-query values and its costs without the seconds.
        """
        timeless = {"seconds", "seconds_encode", "seconds_pool", "seconds_index", "seconds_search"}
        return {
            "systems": [
                {
                    **s.to_dict(per_query=True),
                    "costs": {k: v for k, v in s.costs.items() if k not in timeless},
                    **({"compact": {label: {k: v for k, v in c.items() if not k.startswith("seconds")}
                                    for label, c in s.compact.items()}} if s.compact else {}),
                }
                for s in self.systems
            ],
            "comparisons": self.comparisons,
            "query_vectors_sha256": self.manifest["query_vectors"]["sha256"],
        }

    def to_dict(self) -> dict:
        """The ``results.json`` form: config, manifest, metric names and every system's aggregates.

        Returns:
            ``config``, ``manifest``, ``metric_names``, ``headline``, ``main_k``, ``systems`` (without
            per-query values; those are ``per_query.csv``'s) and ``comparisons``.
        """
        return {
            "config": self.config.to_dict(),
            "manifest": self.manifest,
            "metric_names": self.metric_names,
            "headline": self.headline,
            "main_k": self.main_k,
            "systems": [s.to_dict() for s in self.systems],
            "comparisons": self.comparisons,
        }
