"""Stages 3 and 4 of ``latechunk compare`` (:func:`eval.harness.run_compare`): the late passes and the systems.

:class:`ComparePlan` resolves what runs from the config alone (the strategies, the modes of each ``embed()`` call),
:class:`LatePasses` the ``(window, overlap)`` passes with the model's defaults. :func:`embed_passes` runs one
:func:`latechunk.pipeline.embed` call per pass (one late pass for every strategy; naive and contextual in the
first one's call; a strategy whose boundaries depend on the late states gets its naive and contextual vectors again
for each further pass, from that pass's boundaries) and checks that every other strategy got the same boundaries
from each pass. :func:`system_inputs` turns them into one :class:`~eval.scoring.SystemInput` per system (strategy x
mode x window), fused ones made by the pipeline (:func:`latechunk.pipeline.fused_chunk_vectors`) from the late and
naive vectors of the same chunks. Tests: ``tests/eval/test_eval_harness.py``, ``tests/pipeline/test_fused.py``,
``tests/eval/test_eval_plots.py``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .config import CompareConfig
from .datasets import EvalDataset
from .result import System
from .scoring import SystemInput


def state_dependent(spec: str) -> bool:
    """True when a strategy's boundaries come from the late token states (``semantic`` with source=late)."""
    from latechunk.strategies.base import get_strategy

    s = get_strategy(spec)
    return bool(s.needs_sentence_vectors) and getattr(s, "source", "late") == "late"


def _same_boundaries(a: Sequence, b: Sequence) -> bool:
    return len(a) == len(b) and all(
        x.doc_id == y.doc_id and np.array_equal(x.token_spans, y.token_spans) and np.array_equal(x.char_spans, y.char_spans)
        for x, y in zip(a, b)
    )


def _label(mode: str, macro_window: int | None, multi: bool, overlap: int | None = None, multi_o: bool = False) -> str:
    """A system's row label: ``late``, ``late w=256``, ``late w=256 o=32`` (an overlap sweep), ``naive``, ..."""
    what = f"w={macro_window}" + (f" o={overlap}" if multi_o else "")
    if mode in ("late", "fused"):
        return f"{mode} {what}" if multi or multi_o else mode
    return f"{mode} ({what} cuts)" if (multi or multi_o) and macro_window is not None else mode


@dataclass
class ComparePlan:
    """What the comparison runs, from its config alone: the strategies and the modes of each ``embed()`` call.

    Fused systems are made from the late and naive vectors of the same chunks (late of each pass), so the
    ``embed()`` calls run late and naive whenever fused is asked for (:attr:`pipe_modes`, in the first pass's call;
    the further passes run late only).
    """

    config: CompareConfig
    specs: list[str]
    pipe_modes: tuple[str, ...]

    @classmethod
    def of(cls, config: CompareConfig) -> ComparePlan:
        """The plan of ``config``."""
        pipe_modes = tuple(m for m in config.modes if m != "fused")
        if "fused" in config.modes:
            pipe_modes = tuple(dict.fromkeys(("late", *pipe_modes, "naive")))
        return cls(config, config.specs(), pipe_modes)

    @property
    def text_modes(self) -> list[str]:
        """The modes that encode chunk texts (naive, contextual), in the first pass's call."""
        return [m for m in self.pipe_modes if m != "late"]

    def pass_config(self, i: int, w: int | None, ov: int | None):
        """The :class:`~latechunk.config.PipelineConfig` of late pass ``i`` (naive and contextual in the first)."""
        from latechunk.config import PipelineConfig

        c = self.config
        return PipelineConfig(tuple(self.specs), modes=self.pipe_modes if i == 0 else ("late",),
                              include_special=c.include_special, macro_window=w, macro_window_overlap=ov,
                              sentence_workers=c.sentence_workers, late_pooling=c.late_pooling,
                              macro_window_align=c.macro_window_align)

    def check_model(self, encoder) -> None:
        """The settings that need the model (late pooling, each macro window) against its files, before the
        dataset is parsed or a weight loads; ``embed()`` checks them again with the loaded encoder."""
        from latechunk.models import ModelFacts

        facts = encoder.facts if encoder is not None else ModelFacts.read(self.config.model)
        for i, (w, ov) in enumerate(self.config.late_passes()):
            self.pass_config(i, w, ov).check_model(facts)


@dataclass
class LatePasses:
    """The late passes, ``(window, overlap)`` in tokens with defaults resolved, each with its macro-window plan;
    the first is the main one."""

    plans: dict
    macro_windows: list[int]

    @property
    def passes(self) -> list[tuple[int, int]]:
        """Every pass, ``(window, overlap)``, windows outer, overlaps inner."""
        return list(self.plans)

    @property
    def first(self) -> tuple[int, int]:
        """The main pass (the first window at the first overlap)."""
        return self.passes[0]

    @property
    def multi(self) -> bool:
        """More than one macro-window size (the labels name the window)."""
        return len(self.macro_windows) > 1

    @property
    def multi_o(self) -> bool:
        """More than one overlap (the labels name the overlap)."""
        return len(dict.fromkeys(ov for _, ov in self.passes)) > 1


@dataclass
class Recut:
    """Naive or contextual vectors of a further pass's cuts (a state-dependent strategy), with their cost."""

    vectors: object  # ChunkVectors
    tokens: int
    calls: int
    seconds: float


def embed_passes(plan: ComparePlan, lp: LatePasses, ds: EvalDataset, encoder, progress: bool, seconds: dict):
    """Stage 3: one ``embed()`` call per late pass (one late pass for every strategy; naive and contextual in the
    first one's call), and for a strategy whose cuts depend on the late states (``semantic``) its naive and
    contextual vectors again for each further pass, from that pass's boundaries:
    ``(embeds by pass, the manifest's windows entries, recut vectors by (mode, spec, pass))``.

    Raises:
        ValueError: if a pass embeds no document.
        RuntimeError: if two passes embedded other documents, or gave other boundaries to a strategy whose cuts
            do not depend on the late states (bugs).
    """
    from latechunk.pipeline import embed, encode_chunk_vectors
    from latechunk.sentences import SentenceSegmenter

    embeds, info = {}, []
    recut: dict[tuple[str, str, tuple[int, int]], Recut] = {}
    # one segmenter for every macro window: each document's sentences are segmented once for the comparison
    segmenter = SentenceSegmenter(workers=plan.config.sentence_workers)
    try:
        for i, p in enumerate(lp.passes):
            w, ov = p
            t0 = time.perf_counter()
            res = embed(list(ds.documents), encoder, plan.pass_config(i, w, ov), progress=progress,
                        segmenter=segmenter)
            wall = time.perf_counter() - t0
            if not res.documents:  # nothing to index or score: say so instead of failing deep in a metric
                why = "; ".join(f"{s.doc_id}: {s.reason}" for s in res.skipped[:3]) + ("; ..." if len(res.skipped) > 3 else "")
                raise ValueError(f"dataset {ds.name!r}: no document to embed ({len(ds.documents)} documents"
                                 + (f", all skipped: {why})" if res.skipped else ")"))
            embeds[p] = res
            extra_s = 0.0
            for spec in (plan.specs if i > 0 else ()):
                if not state_dependent(spec):
                    continue
                for mode in plan.text_modes:  # vectors exactly as embed() makes them, of this window's cuts
                    t1 = time.perf_counter()
                    vec, tokens, calls = encode_chunk_vectors(encoder, mode, res.documents, res.run(spec).boundaries)
                    recut[(mode, spec, p)] = Recut(vec, tokens, calls, time.perf_counter() - t1)
                    extra_s += recut[(mode, spec, p)].seconds
            info.append(_pass_info(plan, p, plan.pipe_modes if i == 0 else ("late",), res, recut, wall, extra_s))
            seconds[f"embed_w{w}" + (f"_o{ov}" if lp.multi_o else "")] = wall + extra_s
    finally:
        segmenter.close()
    _check_passes(plan.specs, lp, embeds)
    return embeds, info, recut


def _pass_info(plan: ComparePlan, p: tuple[int, int], modes: Sequence[str], res, recut: dict, wall: float,
               extra_s: float) -> dict:
    """The manifest's entry of one late pass: its modes (a further window's re-encoding of window-dependent cuts
    named: ``recut``), tokens and forward calls per mode, documents and skipped items, seconds."""
    w, ov = p
    recut_specs = {m: [sp for sp in plan.specs if (m, sp, p) in recut] for m in plan.text_modes}
    recut_specs = {m: v for m, v in recut_specs.items() if v}

    def extra(mode: str, field: str) -> int:
        return sum(getattr(x, field) for (m, _, pp), x in recut.items() if pp == p and m == mode)

    stats = res.stats
    return {
        "window": w, "overlap": ov, "modes": list(modes) + list(recut_specs), "recut": recut_specs,
        "late_tokens": stats.tokens["late"], "late_forward_calls": stats.forward_calls["late"],
        "naive_tokens": stats.tokens["naive"] + extra("naive", "tokens"),
        "naive_forward_calls": stats.forward_calls["naive"] + extra("naive", "calls"),
        **({"contextual_tokens": stats.tokens.get("contextual", 0) + extra("contextual", "tokens"),
            "contextual_forward_calls": stats.forward_calls.get("contextual", 0) + extra("contextual", "calls")}
           if "contextual" in plan.config.modes else {}),
        "content_tokens": stats.content_tokens, "documents_in": stats.documents_in,
        "documents_embedded": len(res.documents),
        "skipped": [{"doc_id": s.doc_id, "reason": s.reason} for s in res.skipped],
        "seconds": {**{k: float(v) for k, v in stats.seconds.items()}, "naive_extra": extra_s,
                    "wall": wall + extra_s},
    }


def _check_passes(specs: Sequence[str], lp: LatePasses, embeds: dict) -> None:
    """Every pass embedded the first one's documents, and the same boundaries for every strategy whose cuts do
    not depend on the late states (else RuntimeError: a bug)."""
    main = embeds[lp.first]
    for p in lp.passes[1:]:
        if [d.doc_id for d in embeds[p].documents] != [d.doc_id for d in main.documents]:
            raise RuntimeError(f"window {p} embedded other documents than window {lp.first}")
        for spec in specs:
            if not state_dependent(spec) and not _same_boundaries(embeds[p].run(spec).boundaries,
                                                                   main.run(spec).boundaries):
                raise RuntimeError(f"{spec}: window {p} gave other boundaries than window {lp.first} (a bug)")


def system_inputs(plan: ComparePlan, lp: LatePasses, embeds: dict, recut: dict) -> list[SystemInput]:
    """Stage 4: the systems (strategy, mode, window, overlap) with their boundaries, vectors and costs: late of
    each pass, naive and contextual of the first pass (and of each pass for state-dependent cuts), then fused
    (:func:`_fused_inputs`); only the modes asked for are kept."""
    inputs: list[SystemInput] = []
    for spec in plan.specs:
        dep = state_dependent(spec)
        if "late" in plan.pipe_modes:  # (fused needs the late systems too; dropped below if not asked for)
            for w, ov in lp.passes:
                res = embeds[(w, ov)]
                run = res.run(spec)
                late_s = res.stats.seconds["late_encode"]
                inputs.append(SystemInput(System(spec, "late", w, _label("late", w, lp.multi, ov, lp.multi_o),
                                                 window_overlap=ov),
                                          run.boundaries, run.vectors["late"], late_s,
                                          run.seconds.get("late", late_s) - late_s, res.stats.tokens["late"],
                                          res.stats.forward_calls["late"]))
        for mode in plan.text_modes:  # naive, contextual: made in the first window's call (and per window if dep)
            for i, p in enumerate(lp.passes if dep else lp.passes[:1]):
                w, ov = p
                run = embeds[p].run(spec)
                if i == 0:
                    vec, enc_s, tokens, calls = (run.vectors[mode], run.seconds.get(mode, 0.0),
                                                 run.tokens_encoded.get(mode, 0), None)
                else:
                    r = recut[(mode, spec, p)]
                    vec, enc_s, tokens, calls = r.vectors, r.seconds, r.tokens, r.calls
                inputs.append(SystemInput(System(spec, mode, w if dep else None,
                                                 _label(mode, w if dep else None, lp.multi, ov, lp.multi_o),
                                                 window_overlap=ov if dep else None),
                                          run.boundaries, vec, enc_s, 0.0, tokens, calls))
    made = _fused_inputs(inputs, lp) if "fused" in plan.config.modes else []
    return [x for x in inputs if x.system.mode in plan.config.modes] + made


def _fused_inputs(inputs: Sequence[SystemInput], lp: LatePasses) -> list[SystemInput]:
    """A fused system per late system: the pipeline's :func:`~latechunk.pipeline.fused_chunk_vectors` of its late
    vectors and the naive vectors of the same chunks (the first pass's; the same pass's for state-dependent
    cuts), as ``embed`` makes them; its costs are both halves'."""
    from latechunk.pipeline import fused_chunk_vectors

    naive = {(x.system.strategy, x.system.window, x.system.window_overlap): x for x in inputs
             if x.system.mode == "naive"}
    made = []
    for late in inputs:
        s = late.system
        if s.mode != "late":
            continue
        dep = state_dependent(s.strategy)
        nv = naive[(s.strategy, s.window, s.window_overlap) if dep else (s.strategy, None, None)]
        made.append(SystemInput(System(s.strategy, "fused", s.window,
                                       _label("fused", s.window, lp.multi, s.window_overlap, lp.multi_o),
                                       window_overlap=s.window_overlap),
                                late.boundaries, fused_chunk_vectors(late.vectors, nv.vectors, True),
                                late.encode_s + nv.encode_s, late.pool_s, late.tokens + nv.tokens, None))
    return made
