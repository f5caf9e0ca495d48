"""``latechunk train``'s run: :func:`train`, in steps: the examples planned against the model (:func:`_plan`),
the optimiser and its schedule (:func:`_optimiser`), the epochs of optimiser steps with their checkpoints
(:class:`_Run`), and the saved folder (:func:`_save_model`). The method is described in :mod:`latechunk.train`.

Tests: ``tests/train/test_train.py``.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from latechunk.train.checkpoint import (
    CHECKPOINT_DIR,
    DEFAULT_CHECKPOINT_EVERY,
    _check_out,
    _restore,
    _save_checkpoint,
)
from latechunk.train.config import TRAIN_FILE, TrainConfig, TrainResult
from latechunk.train.data import TrainExample, _dataset_path, _DocPlan, _examples, _plan_documents
from latechunk.train.forward import _late_step_vectors, _load, _pooled_texts, _query_tok, autocast_dtype
from latechunk.train.loss import _fused_targets, _info_nce, _overlapping
from latechunk.train.save import _keep_base_limits, _usual_file_modes

if TYPE_CHECKING:
    import torch

    from latechunk.encoder import Encoder
    from latechunk.macro_window import MacroWindow


def _after_step(step: int) -> None:
    """Called after each optimiser step (and its checkpoint) with the number of steps done; a seam for tests that
    stop a run part way."""


@dataclass
class _Plan:
    """The examples of a run planned against its model.

    Attributes:
        mw: The macro-window plan.
        plans: Each document as trained on, by ``doc_id``.
        pairs: ``(example, target chunk)`` in training order (shuffled, cut to ``max_queries``).
        base_pairs: The same before the shuffle (a checkpoint records the order as positions in it).
        skipped: Examples left out, by reason.
        order: The random generator of the data order (shuffled again each epoch).
    """

    mw: MacroWindow
    plans: dict[str, _DocPlan]
    pairs: list[tuple[TrainExample, int]]
    base_pairs: list[tuple[TrainExample, int]]
    skipped: dict[str, int]
    order: random.Random


def _plan(config: TrainConfig, encoder: Encoder, examples: list[TrainExample], progress: bool,
          say: Callable[[str], None]) -> _Plan:
    """Chunk and plan every document, find each example's target chunk, shuffle; say what is trained on.

    Raises:
        ValueError: if no example is left (naming why), or the macro window does not fit the model.
    """
    size = config.macro_window if config.macro_window is not None else encoder.max_seq_length
    mw = encoder.macro_window(size, config.macro_window_overlap)
    plans, pairs, skipped = _plan_documents(examples, encoder, config.strategy, mw, progress)
    if not pairs:
        why = ", ".join(f"{n} {reason}" for reason, n in skipped.items()) if skipped else (
            "no passage has a sentence to hold out: --ict takes a sentence of 5 to 60 words that is neither the "
            "first nor the last of its document" if config.ict else "no query has an answer span in a chunk")
        raise ValueError(f"no training example left ({why})")
    base_pairs = list(pairs)  # the planned order: a checkpoint records the data order as positions in it
    order = random.Random(config.seed)
    order.shuffle(pairs)
    if config.max_queries is not None:
        pairs = pairs[: config.max_queries]
    n_chunks = sum(len(p.bounds.token_spans) for p in plans.values())
    sources = {p.doc.metadata.get("source_doc") for p in plans.values()} - {None}
    # inverse cloze trains on passages cut from the documents read, one per example: name both counts
    over = (f"{len(plans)} passages cut from {len(sources)} documents" if sources else f"{len(plans)} documents")
    say(f"{len(pairs)} examples over {over} ({n_chunks} chunks of {config.strategy}), macro window "
        f"{mw.size} (overlap {mw.overlap}); skipped: {skipped or 'none'}")
    return _Plan(mw, plans, pairs, base_pairs, skipped, order)


def _optimiser(model, config: TrainConfig, total: int):
    """AdamW and its schedule: a linear warm-up over ``config.warmup`` of the ``total`` steps, then a linear decay
    to zero. Returns ``(optimiser, scheduler)``."""
    import torch

    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    warm = max(1, round(config.warmup * total)) if config.warmup > 0 else 0
    if warm:
        sched = torch.optim.lr_scheduler.SequentialLR(opt, [
            torch.optim.lr_scheduler.LinearLR(opt, start_factor=1.0 / (warm + 1), end_factor=1.0, total_iters=warm),
            torch.optim.lr_scheduler.LinearLR(opt, start_factor=1.0, end_factor=0.0, total_iters=max(1, total - warm)),
        ], milestones=[warm])
    else:
        sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=1.0, end_factor=0.0, total_iters=max(1, total))
    return opt, sched


class _Run:
    """One run's moving parts: the model in training mode, AdamW and its schedule, the data order and the result
    so far; :meth:`epochs` runs the optimiser steps."""

    def __init__(self, config: TrainConfig, encoder: Encoder, data: _Plan, out: Path, say: Callable[[str], None]):
        self.config, self.encoder, self.data, self.out, self.say = config, encoder, data, out, say
        self.model = encoder.model
        self.model.train()
        self.amp: torch.dtype | None = autocast_dtype(config.dtype, encoder.device.type)
        say(f"precision: {'bfloat16 autocast' if self.amp is not None else 'float32'} on {encoder.device} "
            f"(--dtype {config.dtype}; weights float32)")
        tok = encoder.hf_tokenizer
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
        self.steps_per_epoch = math.ceil(len(data.pairs) / config.batch_size)
        self.total = self.steps_per_epoch * config.epochs
        self.opt, self.sched = _optimiser(self.model, config, self.total)
        self.result = TrainResult(out=out, n_examples=len(data.pairs), n_skipped=data.skipped, steps=self.total,
                                  config=config)
        self.pairs = data.pairs
        self.position = {id(p): i for i, p in enumerate(data.base_pairs)}
        self.start = 0  # optimiser steps (positions in the schedule, skipped short batches included) already done
        self.earlier = 0.0  # seconds of the run before a resume
        self.autocast = str(self.amp).replace("torch.", "") if self.amp is not None else "float32"

    def resume(self, state: tuple[dict, dict]) -> None:
        """Take up a checkpoint (:func:`~latechunk.train.checkpoint._check_out`): weights, AdamW, schedule, data
        order, random generators and the losses so far, as the checkpoint left them.

        Raises:
            ValueError: if the checkpoint was trained with another autocast dtype than ``--dtype`` gives here.
        """
        info = state[0]
        if info.get("autocast", self.autocast) != self.autocast:
            raise ValueError(f"--resume: the run in {self.out} trained with {info['autocast']} autocast, --dtype "
                             f"{self.config.dtype} gives {self.autocast} here: give --dtype {info['autocast']}")
        _restore(state, self.model, self.opt, self.sched, self.data.order)
        self.pairs = [self.data.base_pairs[i] for i in info["order"]]
        for name in ("losses", "late_losses", "naive_losses", "fused_losses"):
            setattr(self.result, name, list(info[name]))
        self.result.unpooled = list(info.get("unpooled", []))  # a checkpoint written before the count: none
        self.start, self.earlier = int(info["step"]), float(info["seconds"])
        self.say(f"resumed from {self.out / CHECKPOINT_DIR} after step {self.start} of {self.total}")

    def checkpoint(self, done: int, seconds: float) -> None:
        """Write the run's state after ``done`` optimiser steps (:func:`~latechunk.train.checkpoint._save_checkpoint`)."""
        r = self.result
        _save_checkpoint(self.out, self.model, self.opt, self.sched, self.data.order, {
            "config": self.config.to_dict(), "step": done, "seconds": seconds, "autocast": self.autocast,
            "order": [self.position[id(p)] for p in self.pairs], "losses": r.losses, "late_losses": r.late_losses,
            "naive_losses": r.naive_losses, "fused_losses": r.fused_losses, "unpooled": r.unpooled})

    def step(self, batch: list[tuple[TrainExample, int]]) -> int:
        """One optimiser step over ``batch``: the loss terms, backward, clipping, AdamW and the schedule; the losses
        appended to the result, and the chunks its macro windows hold only in part (counted, not candidates).
        Returns the step's late candidates (chunks pooled)."""
        import torch

        config, encoder, plans, amp, pad_id = self.config, self.encoder, self.data.plans, self.amp, self.pad_id
        q_toks = [_query_tok(encoder, ex.query, encoder.max_length) for ex, _ in batch]
        q = _pooled_texts(encoder, q_toks, pad_id, amp)
        chunks, targets, keys, unpooled = _late_step_vectors(batch, plans, encoder, pad_id, amp)
        late = _info_nce(q, chunks, targets, config.temperature, _overlapping(batch, keys, plans))
        loss = late
        naive_v = 0.0
        if config.naive_weight > 0 or config.fused_weight > 0:
            uniq = list(dict.fromkeys((ex.doc.doc_id, j) for ex, j in batch))
            col = {k: i for i, k in enumerate(uniq)}
            n_toks = []
            for d, j in uniq:
                cs, ce = plans[d].bounds.char_spans[j].tolist()
                n_toks.append(encoder.tokenizer(plans[d].doc.text[cs:ce]))
            nv = _pooled_texts(encoder, n_toks, pad_id, amp)
            cols = [col[(ex.doc.doc_id, j)] for ex, j in batch]
            same_source = _overlapping(batch, uniq, plans)  # inverse cloze: no negative from its own document
            naive = _info_nce(q, nv, cols, config.temperature, same_source)
            loss = late + config.naive_weight * naive
            naive_v = float(naive.detach())
            if config.fused_weight > 0:  # the target chunks as fused mode serves them
                fused = _info_nce(q, _fused_targets(chunks, targets, nv, cols), cols, config.temperature,
                                  same_source)
                loss = loss + config.fused_weight * fused
                self.result.fused_losses.append(float(fused.detach()))
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        self.sched.step()
        self.result.losses.append(float(loss.detach()))
        self.result.late_losses.append(float(late.detach()))
        self.result.naive_losses.append(naive_v)
        self.result.unpooled.append(unpooled)
        return len(keys)

    def epochs(self, progress: bool, checkpoint_every: int) -> None:
        """Run the optimiser steps from :attr:`start` to the end (a batch of fewer than two queries is skipped but
        keeps its place in the schedule), a checkpoint every ``checkpoint_every`` steps and at each epoch's end;
        :attr:`result`'s ``seconds`` set."""
        config, per, start = self.config, self.steps_per_epoch, self.start
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=self.total, desc="train", unit="step", initial=start, file=sys.stderr,
                       disable=None)  # on a terminal only
        t0 = time.perf_counter()
        try:
            for epoch in range(start // per, config.epochs):
                first = start - epoch * per if epoch == start // per else 0
                if epoch and not first:  # a run resumed in the middle of an epoch keeps that epoch's order
                    self.data.order.shuffle(self.pairs)
                for s in range(first, per):
                    batch = self.pairs[s * config.batch_size:(s + 1) * config.batch_size]
                    if len(batch) < 2:
                        _after_step(epoch * per + s + 1)
                        continue
                    cands = self.step(batch)
                    if bar is not None:
                        bar.update(1)
                        bar.set_postfix(epoch=epoch + 1, loss=f"{self.result.losses[-1]:.3f}", cands=cands)
                    done = epoch * per + s + 1
                    if checkpoint_every and done < self.total and (done % checkpoint_every == 0 or s == per - 1):
                        self.checkpoint(done, self.earlier + time.perf_counter() - t0)
                    _after_step(done)
        finally:
            if bar is not None:
                bar.close()
        self.result.seconds = self.earlier + time.perf_counter() - t0


def _save_model(run: _Run, st, what: str, resumed: bool, say: Callable[[str], None]) -> None:
    """Save the trained model by sentence-transformers into ``--out`` (the checkpoint removed) and write
    :data:`~latechunk.train.config.TRAIN_FILE` beside it."""
    config, encoder, out, result = run.config, run.encoder, run.out, run.result
    run.model.eval()
    run.model.to("cpu")
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / CHECKPOINT_DIR, ignore_errors=True)  # the model is whole: the checkpoint is spent
    st.save(str(out))
    _keep_base_limits(out, Path(encoder.path), st.max_seq_length)
    _usual_file_modes(out)
    record = {
        "config": config.to_dict(),
        "base_model": encoder.path,
        "data": what,
        "dataset_path": _dataset_path(config.dataset),
        "examples": len(run.pairs),
        "skipped": run.data.skipped,
        "documents": len(run.data.plans),
        "macro_window": {"size": run.data.mw.size, "overlap": run.data.mw.overlap},
        "autocast": run.autocast,
        "steps": result.steps,
        "seconds": round(result.seconds, 1),
        **({"resumed_after_step": run.start} if resumed else {}),
        "loss": result.losses,
        "late_loss": result.late_losses,
        "naive_loss": result.naive_losses,
        **({"fused_loss": result.fused_losses} if result.fused_losses else {}),
        "epoch_mean_loss": result.epoch_means(),
        # chunks a step's macro windows held only in part: no whole-chunk mean, so no candidate of that step
        "unpooled_chunks": result.n_unpooled,
        "unpooled_chunks_per_step": result.unpooled,
        "loss_definition": "InfoNCE over cosine / temperature; late: query vs late-pooled chunks of the step's macro "
                           "windows (target, in-sequence and in-batch negatives); naive: query vs naive vectors of "
                           "the step's target chunks; loss = late + naive_weight * naive"
                           + ("; fused: query vs the target chunks' unit late + unit naive vectors; + fused_weight * "
                              "fused" if config.fused_weight > 0 else ""),
    }
    (out / TRAIN_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    say(f"saved {out} ({result.steps} steps, {result.seconds:.1f} s; mean loss per epoch "
        f"{', '.join(f'{v:.3f}' for v in result.epoch_means())}; {result.n_unpooled} chunks left out of a step's "
        "candidates as not whole in its macro windows)")


def _check_macro_window(config: TrainConfig) -> None:
    """The macro window against the model's files (:class:`~latechunk.models.ModelFacts`: no torch, no weights),
    before the corpus is read, as embed and compare check it; where the files do not tell the model's limit or
    frame, or the model does not resolve, the loaded encoder checks it (:func:`_plan`).

    Raises:
        ValueError: as :meth:`MacroWindow.check <latechunk.macro_window.MacroWindow.check>`.
    """
    from latechunk.macro_window import MacroWindow
    from latechunk.models import ModelFacts

    try:
        facts = ModelFacts.read(config.model)
    except ValueError:  # the loader names what is wrong with the model
        return
    if facts.input_limit is not None and facts.document_frame is not None:
        MacroWindow.default(facts.input_limit, facts.document_frame, config.macro_window,
                            config.macro_window_overlap, default_size=facts.default_window)


def train(config: TrainConfig, progress: bool = True, log: Callable[[str], None] | None = None, *,
          checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY, resume: bool = False) -> TrainResult:
    """Fine-tune a model for late chunking and save it as a sentence-transformers folder (see the module doc).

    Args:
        config: The settings.
        progress: Show progress bars (chunking, steps with the running loss; on stderr when it is a terminal).
        log: Called with one line per phase (data, plan, saved); default silent.
        checkpoint_every: Every this many optimiser steps (and at the end of each epoch), the run's state
            (weights, AdamW and schedule state, the data order, every random generator, the losses so far) is
            written to ``out/.checkpoint/state.safetensors``, replacing the last one; 0: never. Removed when the
            run ends.
        resume: Continue the run whose checkpoint is in ``out`` (same settings, checked): it takes up at the
            step after the checkpoint and ends with the model an uninterrupted run makes (the same data order,
            dropout masks and updates; tested equal on CPU).

    Returns:
        The :class:`TrainResult` (also written to ``<out>/latechunk_train.json``).

    Raises:
        ValueError: on a dataset without answer spans, an empty corpus, a model that does not load, a macro
            window that does not fit the model, an ``out`` that exists and is not an empty folder (or holds only a
            checkpoint, without ``resume``), ``resume`` without a checkpoint or with other settings, or a
            negative ``checkpoint_every``.
    """
    import torch

    say = log or (lambda _m: None)
    out = Path(config.out)
    if isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int) or checkpoint_every < 0:
        raise ValueError(f"--checkpoint-every must be an integer >= 0 (0: no checkpoints), got {checkpoint_every!r}")
    state = _check_out(out, config, resume)
    _check_macro_window(config)
    random.seed(config.seed)
    np.random.seed(config.seed)
    torch.manual_seed(config.seed)
    examples, what = _examples(config, progress)
    say(what)
    st, encoder = _load(config)
    run = _Run(config, encoder, _plan(config, encoder, examples, progress, say), out, say)
    if state is not None:  # --resume: everything as the checkpoint left it
        run.resume(state)
    run.epochs(progress, checkpoint_every)
    _save_model(run, st, what, state is not None, say)
    return run.result
