"""``latechunk train``: fine-tune a model for late chunking (:func:`latechunk.train.train`).

Every option's default is :class:`~latechunk.train.TrainConfig`'s (read from its signature: the one definition).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Optional

import typer

from latechunk.cli.app import _fail
from latechunk.cli.options import (
    DeviceOpt,
    MacroWindowOpt,
    MacroWindowOverlapOpt,
    ModelOpt,
    TrustRemoteCodeOpt,
    deprecated_option,
    given_on_command_line,
    renamed_value,
)
from latechunk.train.checkpoint import DEFAULT_CHECKPOINT_EVERY
from latechunk.train.config import DEFAULT_DTYPE, DEFAULT_WARMUP, TrainConfig

#: TrainConfig's defaults, by keyword
_DEFAULTS = {name: p.default for name, p in inspect.signature(TrainConfig.__init__).parameters.items()}


#: the examples under the command's help (the command's epilog, registered by latechunk.cli)
EPILOG = (
    '\b\nExamples:\n'
    '  latechunk train --dataset xquad --out models/minilm-late --strategy fixed:size=64 --macro-window 256\n'
    '  latechunk train --ict my_docs/ --out models/minilm-ict\n'
    '  latechunk train --dataset xquad --out models/minilm-late --resume   (a killed run goes on)\n'
)


def train(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", "-o", help="The model folder to write (new or empty): a sentence-transformers folder that --model loads in embed, compare and LateChunker.")],
    dataset: Annotated[Optional[str], typer.Option("--dataset", "-d", help="Queries with answer spans, any format compare reads: chroma, xquad, a Chroma folder, a SQuAD .json. Never evaluate on what you trained on (compare warns when its model was).")] = None,
    ict: Annotated[Optional[list[str]], typer.Option("--ict", metavar="CORPUS", help="Train without labels on your own documents (files/folders as embed reads; repeatable): inverse cloze, a sentence held out of its passage is the query and the chunk where it stood the target.")] = None,
    model: ModelOpt = None,
    strategy: Annotated[str, typer.Option("--strategy", "-s", help="Chunking SPEC whose chunks are trained on (not semantic). Small chunks are where late chunking gains most.")] = _DEFAULTS["strategy"],
    macro_window: MacroWindowOpt = None,
    macro_window_overlap: MacroWindowOverlapOpt = None,
    epochs: Annotated[int, typer.Option("--epochs", help="Passes over the training queries.")] = _DEFAULTS["epochs"],
    lr: Annotated[float, typer.Option("--lr", help=f"Peak AdamW learning rate (linear warm-up over the first {DEFAULT_WARMUP:.0%} of steps, then linear decay to 0).")] = _DEFAULTS["lr"],
    batch_size: Annotated[int, typer.Option("--batch-size", help="Queries per step; every chunk held whole by the step's macro windows is a candidate (in-batch and in-sequence negatives).")] = _DEFAULTS["batch_size"],
    naive_weight: Annotated[float, typer.Option("--naive-weight", help="Weight of the naive InfoNCE term (each target chunk encoded on its own), so naive mode stays good; 0: late term only.")] = _DEFAULTS["naive_weight"],
    fused_weight: Annotated[float, typer.Option("--fused-weight", help="Weight of a fused InfoNCE term (the target chunks' late + naive vectors, each unit-normalised, summed); 0: none. Measured once: fused SpanRecall@5 -0.9 points (results/fused.md).")] = _DEFAULTS["fused_weight"],
    temperature: Annotated[float, typer.Option("--temperature", help="InfoNCE temperature: cosine similarity / temperature (0.05 = sentence-transformers' scale 20).")] = _DEFAULTS["temperature"],
    ict_queries: Annotated[int, typer.Option("--ict-queries", help="Inverse-cloze queries drawn from --ict CORPUS.")] = _DEFAULTS["ict_queries"],
    max_queries: Annotated[Optional[int], typer.Option("--max-queries", help="Train on at most N queries (after the seeded shuffle). Default: all.")] = _DEFAULTS["max_queries"],
    seed: Annotated[int, typer.Option("--seed", help="Seed of the shuffle, dropout and the inverse-cloze draw.")] = _DEFAULTS["seed"],
    device: DeviceOpt = "auto",
    dtype: Annotated[str, typer.Option("--dtype", help="auto, float32 or bfloat16: the dtype the forward and backward are autocast to (weights, optimiser state and loss stay float32; auto: bfloat16 on CUDA and bf16-capable CPUs), recorded in latechunk_train.json. Old name: --precision.")] = DEFAULT_DTYPE,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
    trust_remote_code: TrustRemoteCodeOpt = False,
    checkpoint_every: Annotated[int, typer.Option("--checkpoint-every", min=0, help="Write the run's state to OUT/.checkpoint every N steps and at each epoch's end, replacing the last (removed when the run ends); 0: never.")] = DEFAULT_CHECKPOINT_EVERY,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run whose checkpoint is in --out (give the same options): it ends with the model an uninterrupted run makes.")] = False,
    old_window: Annotated[Optional[int], deprecated_option("train", "--window")] = None,
    old_window_overlap: Annotated[Optional[int], deprecated_option("train", "--window-overlap")] = None,
    old_precision: Annotated[Optional[str], deprecated_option("train", "--precision")] = None,
) -> None:
    """Fine-tune a model for late chunking: each query pulled toward the late-pooled vector of the chunk holding
    its answer, from answer spans (--dataset) or your own documents (--ict). See docs/how-to/train.md."""
    from latechunk.train import train as run_train

    macro_window = renamed_value("train", "--window", macro_window, old_window)
    macro_window_overlap = renamed_value("train", "--window-overlap", macro_window_overlap, old_window_overlap)
    dtype = renamed_value("train", "--precision", dtype if given_on_command_line(ctx, "dtype") else None,
                          old_precision) or dtype
    try:
        config = TrainConfig(out=str(out), dataset=dataset, ict=tuple(ict) if ict else None, model=model,
                             strategy=strategy, macro_window=macro_window, macro_window_overlap=macro_window_overlap,
                             epochs=epochs, lr=lr, batch_size=batch_size, naive_weight=naive_weight,
                             fused_weight=fused_weight, temperature=temperature, ict_queries=ict_queries,
                             max_queries=max_queries, seed=seed, device=device, dtype=dtype,
                             trust_remote_code=trust_remote_code)
        result = run_train(config, progress=not quiet, log=lambda m: typer.echo(m, err=True),
                           checkpoint_every=checkpoint_every, resume=resume)
    except (ValueError, TypeError, FileNotFoundError) as err:
        _fail(str(err))
    typer.echo(f"model: {result.out} ({result.n_examples} queries x {config.epochs} epochs, {result.steps} steps, "
               f"{result.seconds:.1f} s); use it with --model {result.out}")
