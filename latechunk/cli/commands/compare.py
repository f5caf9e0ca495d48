"""``latechunk compare``: strategies and modes compared on one dataset with one harness
(:func:`latechunk.eval.harness.run_compare`), a report folder written.

Its options default to None: :meth:`CompareConfig.from_options <latechunk.eval.config.CompareConfig.from_options>`
fills each one not given with the config's default (the one definition; the help strings show them).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from latechunk.cli.app import _fail
from latechunk.cli.options import (
    BackendOpt,
    CompileOpt,
    DeviceOpt,
    LatePoolingOpt,
    ModelOpt,
    SentenceWorkersOpt,
    TrustRemoteCodeOpt,
    _sentence_workers,
    deprecated_option,
    renamed_value,
)
from latechunk.config import DEFAULT_HNSW_M, DEFAULT_INDEX, DEFAULT_PRECISION
from latechunk.eval.config import (
    _OWN as _COMPARE_DEFAULTS,  # CompareConfig's own settings, with their defaults
)
from latechunk.eval.config import DEFAULT_MODES, DEFAULT_STRATEGIES
from latechunk.macro_window import DEFAULT_WINDOW_OVERLAP


def _shown(name: str) -> str:
    """The help's ``[default: ...]`` of a CompareConfig setting, as its option writes it (``1,5,10``)."""
    value = _COMPARE_DEFAULTS[name]
    return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)


#: the examples under the command's help (the command's epilog, registered by latechunk.cli)
EPILOG = (
    '\b\nExample:\n'
    '  latechunk compare --dataset chroma --strategies "fixed recursive heading sentence_window semantic" --k 5\n'
)


def compare(
    dataset: Annotated[str, typer.Option("--dataset", "-d", help="chroma, xquad (bundled, under $LATECHUNK_DATA), or a path: a Chroma folder (corpora/ and questions_df.csv), a BEIR folder (corpus.jsonl, queries.jsonl, qrels/) or a SQuAD .json. Blank, unanswerable and repeated questions are left out and counted; see docs/how-to/compare.md.")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Report folder (report.md, results.json, per_query.csv, plot.png). Default: compare-<dataset>.")] = None,
    model: ModelOpt = None,
    strategies: Annotated[Optional[list[str]], typer.Option("--strategies", "-s", help=f"SPEC (repeatable; several SPECs in one value split on spaces, or several words after it); sweeps: fixed:size=128|256. Default: the five text strategies ({', '.join(DEFAULT_STRATEGIES)}).")] = None,
    modes: Annotated[Optional[str], typer.Option("--modes", show_default=False, help=f"Comma list of late, naive, contextual (naive with a [title > section path] header) and fused (late + naive vectors summed).  [default: {','.join(DEFAULT_MODES)}]")] = None,
    k: Annotated[Optional[str], typer.Option("--k", "-k", show_default=False, help=f"Comma list of cut-offs.  [default: {_shown('ks')}]")] = None,
    macro_window: Annotated[Optional[str], typer.Option("--macro-window", metavar="TEXT", help="Late macro-window size in tokens; sweep with 128|256|512, one late pass each (old name: --window). Default: the model's max_seq_length (256 for all-MiniLM-L6-v2), else its limit.")] = None,
    macro_window_overlap: Annotated[Optional[str], typer.Option("--macro-window-overlap", metavar="TEXT", help=f"Content tokens shared by consecutive macro windows; sweep with 0|32|64, one late pass per window and overlap, and the report draws the late - naive map (old name: --window-overlap). Default: {DEFAULT_WINDOW_OVERLAP}.")] = None,
    macro_window_align: Annotated[Optional[str], typer.Option("--macro-window-align", metavar="tokens|chunks", show_default=False, help="Where a macro window stops when a document needs several: chunks (at a chunk end of every strategy, so a chunk is pooled from one window) or tokens.  [default: tokens]")] = None,
    dedup_overlap: Annotated[bool, typer.Option("--dedup-overlap", help="Drop a retrieved chunk that overlaps an earlier retrieved chunk of the same document (by char offsets) before scoring. (Old name: --dedup.)")] = _COMPARE_DEFAULTS["dedup"],
    dedup_threshold: Annotated[Optional[float], typer.Option("--dedup-threshold", metavar="THRESHOLD", help="Also score every system on the index `embed --dedup THRESHOLD` would write (near-duplicate chunks dropped), with NearDup@k (share of a query's top k that are near-duplicates of a higher-ranked hit). Default: off.")] = None,
    index: Annotated[Optional[str], typer.Option("--index", show_default=False, help=f"flat (exact inner product), hnsw (HNSW{DEFAULT_HNSW_M}) or another faiss index_factory string without IVF, the same for every system.  [default: {DEFAULT_INDEX}]")] = None,
    precision: Annotated[Optional[str], typer.Option("--precision", show_default=False, help=f"Comma list of index precisions (float32, float16, int8, ubinary): each system is indexed once per setting over the same vectors; the first is the main index.  [default: {DEFAULT_PRECISION}]")] = None,
    truncate_dim: Annotated[Optional[str], typer.Option("--truncate-dim", help="Comma list of dimensions N (Matryoshka truncation, renormalised; 'all' = no truncation), crossed with --precision. Default: all.")] = None,
    doc_depth: Annotated[Optional[int], typer.Option(show_default=False, help=f"Chunks retrieved per query for the document-level run (document = its best chunk).  [default: {_shown('doc_depth')}]")] = None,
    device: DeviceOpt = "auto",
    dtype: Annotated[Optional[str], typer.Option("--dtype", help="float32, bfloat16, float16 (or fp32, bf16, fp16), for every system. Default: bfloat16 on CUDA and on CPUs with AMX or AVX-512 BF16, else float32 (as embed).")] = None,
    backend: BackendOpt = None,
    compile: CompileOpt = False,
    resamples: Annotated[Optional[int], typer.Option(show_default=False, help=f"Paired bootstrap resamples.  [default: {_shown('n_resamples')}]")] = None,
    seed: Annotated[Optional[int], typer.Option(show_default=False, help=f"Bootstrap seed.  [default: {_shown('seed')}]")] = None,
    max_queries: Annotated[Optional[int], typer.Option(help="Score only the first N queries in the dataset's order (the whole corpus is still embedded): a smoke test, not a comparison.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Parse the dataset again instead of using the cached parse.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing report folder.")] = False,
    sentence_workers: SentenceWorkersOpt = None,
    late_pooling: LatePoolingOpt = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
    more_strategies: Annotated[Optional[list[str]], typer.Argument(
        metavar="SPEC", show_default=False, help="More SPECs, as typed after --strategies "
        "(`--strategies fixed recursive`).")] = None,
    old_window: Annotated[Optional[str], deprecated_option("compare", "--window")] = None,
    old_window_overlap: Annotated[Optional[str], deprecated_option("compare", "--window-overlap")] = None,
    old_dedup: Annotated[bool, deprecated_option("compare", "--dedup")] = False,
) -> None:
    """Compare strategies and modes (late, naive, contextual, fused) on one dataset with one harness, paired
    intervals included; write a report folder. See docs/how-to/compare.md."""
    from latechunk.eval.harness import CompareConfig, run_compare
    from latechunk.eval.report import print_alarms, print_table

    words = [s for v in (*(strategies or []), *(more_strategies or [])) for s in v.split()]
    if number := next((w for w in words if _is_number(w)), None):  # `--dedup 0.95`: --dedup takes no value
        _fail(f"--dedup in compare is an overlap filter switch (now --dedup-overlap); for a cosine threshold use "
              f"--dedup-threshold {number}")
    if more_strategies and not strategies:
        _fail(f"unexpected extra argument(s) {' '.join(more_strategies)!r}: SPECs go after --strategies")
    given = {"macro_window": renamed_value("compare", "--window", macro_window, old_window),
             "macro_window_overlap": renamed_value("compare", "--window-overlap", macro_window_overlap,
                                                   old_window_overlap),
             "dedup": renamed_value("compare", "--dedup", dedup_overlap, old_dedup),
             "modes": modes, "k": k, "dedup_threshold": dedup_threshold, "index": index, "precision": precision,
             "truncate_dim": truncate_dim, "doc_depth": doc_depth, "dtype": dtype, "backend": backend,
             "n_resamples": resamples, "seed": seed, "max_queries": max_queries, "late_pooling": late_pooling,
             "macro_window_align": macro_window_align}
    try:  # --strategies "a b", --strategies a --strategies b and --strategies a b all give [a, b]
        specs = words
        config = CompareConfig.from_options(dataset=dataset, model=model, strategies=specs or None, device=device,
                                            compile=compile, use_cache=not no_cache,
                                            sentence_workers=_sentence_workers(sentence_workers),
                                            trust_remote_code=trust_remote_code,
                                            **{k: v for k, v in given.items() if v is not None})
    except (ValueError, TypeError) as err:
        _fail(str(err))
    _warn_trained_on(model, dataset)
    out = out or Path(f"compare-{Path(dataset).name}")
    if out.exists() and not out.is_dir():
        _fail(f"--out {out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        _fail(f"report folder {out} exists and is not empty; pass --force to overwrite it")
    try:
        result = run_compare(config, out_dir=out, progress=not quiet, command=shlex.join(["latechunk", *sys.argv[1:]]))
    except (ValueError, FileNotFoundError, ImportError) as err:  # ImportError: --backend onnx without the extra
        _fail(str(err))
    print_table(result, report=out / "report.md")  # fitted to the terminal; report.md has every column
    print_alarms(result)  # plain text on stderr, as embed prints its alarms
    typer.echo(f"report: {out / 'report.md'} ({result.manifest['seconds']['total']:.1f} s)")


def _is_number(word: str) -> bool:
    """Whether ``word`` (a strategy SPEC as given) reads as a number, as in ``--dedup 0.95``."""
    try:
        float(word)
    except ValueError:
        return False
    return any(c.isdigit() for c in word)  # not nan, inf


def _warn_trained_on(model: str | None, dataset: str) -> None:
    """Warn when the model was trained on this dataset (its latechunk_train.json): its scores are not held out."""
    from latechunk.train import same_dataset, trained_on

    if model and (seen := [d for d, p in trained_on(model) if same_dataset(d, p, dataset)]):
        typer.secho(f"warning: the model {model} was trained on {seen[0]} (its latechunk_train.json): these scores "
                    "are on questions it was trained on, not held out; evaluate on another dataset", fg="yellow",
                    err=True)
