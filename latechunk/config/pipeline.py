"""What the pipeline computes: :class:`PipelineConfig` (strategies x modes, late pooling, the macro window), the
modes and the default strategy. Nothing here imports torch."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from latechunk.config._checks import _field_dict, _known_keys, _positive_int, _require
from latechunk.macro_window import MacroWindow
from latechunk.strategies.base import Strategy, get_strategy

if TYPE_CHECKING:
    from latechunk.models import ModelFacts

Mode = Literal["late", "naive", "contextual", "fused"]
MODES: tuple[str, ...] = ("late", "naive", "contextual", "fused")
"""The modes of chunk vectors: ``late`` (one pass over the document, mean of each chunk's token states), ``naive``
(each chunk's text encoded on its own), ``contextual`` (naive, with the chunk's contextual header
``[title > section path]`` and a blank line before its text; :func:`latechunk.pipeline.contextual_texts`) and
``fused`` (the chunk's late and naive vectors, each unit-normalised, summed: :func:`latechunk.pipeline.fused_vectors`;
it costs both encodings)."""
DEFAULT_STRATEGY = "semantic"
"""The default strategy SPEC of ``latechunk embed`` and ``latechunk chunk`` and of the Python API's
:class:`~latechunk.api.LateChunker`: ``semantic`` (sentences grouped where consecutive sentences stay similar; in
late mode its sentence vectors come from the same pass), the one strategy whose late mode beats naive on every set
measured, none of them tuned on (issue 38, results/issue38.md; late - naive AR@1 / SpanRecall@5 in points, paired
95% intervals): Chroma +6.6 [+2.6, +10.8] / +3.1 [+0.1, +6.1], XQuAD +2.9 [+1.0, +4.7] / +0.3 [-0.4, +1.2], and two
held-out long-document sets (articles +8.8 / +5.1, meetings SpanRecall@5 +4.8). The previous default,
``recursive:max_tokens=256``, lost in late mode on XQuAD (AR@1 -3.3 [-5.0, -1.6]) and the held-out articles. (``latechunk train`` trains on chunks of its own default,
:data:`latechunk.train.DEFAULT_TRAIN_STRATEGY`; ``compare`` compares :data:`latechunk.eval.config.DEFAULT_STRATEGIES`.)"""
DEFAULT_MODE = "late"
"""The default mode of ``latechunk embed`` and of :class:`PipelineConfig`."""
DEFAULT_GROUP_TOKENS = 1 << 18
"""Tokens per pipeline group (= per shard of ``embed``): bounds memory, never changes a vector."""
LATE_POOLINGS: tuple[str, ...] = ("mean",)
"""Values of ``late_pooling`` / ``--late-pooling``: ``mean`` mean-pools token states even for a model whose own
pooling is not mean (CLS, last token, max); unset, such a model is refused in late mode."""

MACRO_WINDOW_ALIGNS: tuple[str, ...] = ("tokens", "chunks")
"""Values of ``macro_window_align`` / ``--macro-window-align``: where a macro window stops keeping token states
(:class:`PipelineConfig`)."""

DEFAULT_MACRO_WINDOW_ALIGN = "tokens"
"""Macro windows cut by tokens unless asked otherwise (measured in results/issue38.md)."""


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
        macro_window_align: Where a macro window stops keeping token states when a document needs several
            (:data:`MACRO_WINDOW_ALIGNS`): ``"chunks"``: at a chunk end (every strategy's, when several share
            the pass; :meth:`MacroWindow.plan_aligned <latechunk.macro_window.MacroWindow.plan_aligned>`), so a
            chunk that fits a window is pooled from one context; ``"tokens"``: every window's worth of tokens,
            wherever that falls. ``None`` = :data:`DEFAULT_MACRO_WINDOW_ALIGN`.
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
    modes: tuple[str, ...] = (DEFAULT_MODE,)
    normalize: bool = True
    include_special: bool = False
    macro_window: int | None = None
    macro_window_overlap: int | None = None
    macro_window_align: str | None = None
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
        if self.macro_window_align is None:
            object.__setattr__(self, "macro_window_align", DEFAULT_MACRO_WINDOW_ALIGN)
        _require(self.macro_window_align in MACRO_WINDOW_ALIGNS,
                 f"macro_window_align (--macro-window-align) must be one of {list(MACRO_WINDOW_ALIGNS)}, "
                 f"got {self.macro_window_align!r}")
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
        d = _field_dict(self)
        d["strategies"] = self.specs
        d["modes"] = list(self.modes)
        return d

    @classmethod
    def from_dict(cls, d: Mapping) -> PipelineConfig:
        """The config of a :meth:`to_dict` mapping (``PipelineConfig.from_dict(p.to_dict()) == p``), or of part of
        one: a setting left out has its default (``strategies`` has none).

        Args:
            d: ``{field: value}``; ``strategies`` SPEC strings (or one SPEC), ``modes`` a list (or one mode).

        Returns:
            The validated :class:`PipelineConfig`.

        Raises:
            ValueError: on a key that is not a field (naming it), no ``strategies``, or as the constructor.
        """
        _known_keys(d, {f.name for f in dataclasses.fields(cls)}, "pipeline settings")
        _require("strategies" in d, "pipeline settings need 'strategies' (SPEC strings)")
        return cls(**d)



def split_specs(values: Sequence[str] | None) -> list[str]:
    """SPECs from command-line values: each value may hold several SPECs separated by spaces.

    Args:
        values: The values of a repeatable option; None: none.

    Returns:
        The SPEC strings, in order (not parsed or checked).
    """
    return [s for v in (values or []) for s in v.split()]
