"""The ``latechunk`` command line: embed, search, chunk, strategies (and compare, verify).

Run ``latechunk COMMAND --help`` for each command's options.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shlex
import shutil
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Annotated, Optional

import typer

from latechunk.config import DEFAULT_GROUP_TOKENS, DEFAULT_STRATEGY
from latechunk.console import format_hits, snippet, visible  # noqa: F401  (snippet: kept importable here)

app = typer.Typer(
    help=(
        "Late chunking: encode each document once, pool one vector per chunk from its token states.\n\n"
        "Typical use: `latechunk embed docs/ --out idx` then `latechunk search idx \"question\"`."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help text is printed as written: "[title > section path]" is text, not a rich tag
    context_settings={"help_option_names": ["-h", "--help"]},
)



def _version_callback(value: bool) -> None:
    if value:
        import latechunk

        typer.echo(f"latechunk {latechunk.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version_callback, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Late chunking: encode each document once, pool one vector per chunk from its token states."""


def _fail(msg: str, code: int = 2) -> None:
    typer.secho(f"error: {msg}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


#: ``embed --strict``'s exit status when an input document was skipped (the output is written all the same);
#: 1 stays "nothing was embedded", 2 a bad option or input, 130 Ctrl-C
STRICT_EXIT_CODE = 3


def _check_strict(skipped: list[dict], where: Path) -> None:
    """``embed --strict``: exit :data:`STRICT_EXIT_CODE` when ``skipped`` (skip records) holds a document that was
    read and not embedded; entries never read as documents (:func:`latechunk.io.is_not_read`) do not count."""
    from latechunk.io import is_not_read

    n = sum(1 for s in skipped if not is_not_read(str(s.get("reason", ""))))
    if n:
        _fail(f"--strict: {n:,} input document(s) were skipped (each is listed above and in {where}'s skipped list, "
              "with its reason); the output is written without them", code=STRICT_EXIT_CODE)


ModelOpt = Annotated[
    Optional[str],
    typer.Option("--model", "-m", help="Hugging Face model id or local folder. Default: bundled all-MiniLM-L6-v2 (offline)."),
]
DeviceOpt = Annotated[str, typer.Option("--device", help="auto (CUDA when present), cpu, cuda, cuda:N.")]
TrustRemoteCodeOpt = Annotated[bool, typer.Option("--trust-remote-code", help="Run the model repository's own Python code (only for models that need it, such as jina-embeddings-v2; never implied by a folder or a file).")]
CompileOpt = Annotated[bool, typer.Option("--compile", help="Run the model through torch.compile (TorchInductor; --backend torch): each new batch shape compiles on its first forward (tens of seconds on a CPU), then runs faster where the eager forward is the bottleneck: 0.99-1.15x the eager speed on an fp32 CPU in four runs, 0.97-1.01x in bf16 on an AVX-512 BF16 CPU (results/peers.md); it pays on large corpora only (not yet measured on a GPU). Same vectors to float rounding (fp32: about 1e-7; bf16: about 2e-3 per component, cosine > 0.9999), so not a setting of the output: embed does not record it in run.json (compare notes it in results.json and counts the compile in the first late system's seconds). A failed compile warns and runs eager.")]
SentenceWorkersOpt = Annotated[
    Optional[int],
    typer.Option("--sentence-workers", help="Processes that segment sentences (pysbd) ahead of the split, for "
                 "recursive, heading, sentence_window and semantic; 0: in the main process. Same output either way. "
                 "Default: one per CPU core less one (max 16), 0 below 4 cores."),
]


MacroWindowOpt = Annotated[
    Optional[int],
    typer.Option("--macro-window", "--window", help="Macro-window size in tokens, frame included (at least the "
                 "frame + 16). Documents longer than this are encoded in consecutive macro windows (sharing "
                 "--macro-window-overlap tokens; default 0, chosen by measurement: results/map.md). Default: the "
                 "model's sentence-transformers max_seq_length (the length it was trained on; 256 for the bundled "
                 "all-MiniLM-L6-v2), else its input limit."),
]
LatePoolingOpt = Annotated[
    Optional[str],
    typer.Option("--late-pooling", help="mean: late mode with a model whose own pooling is not mean (CLS, last "
                 "token, max): mean-pool its token states anyway. Late chunking is defined for mean-pooled models, "
                 "so without this flag such a model is refused in late mode (its pooling is read from its "
                 "sentence-transformers files)."),
]
MacroWindowOverlapOpt = Annotated[
    Optional[int],
    typer.Option("--macro-window-overlap", "--window-overlap", help="Content tokens shared by consecutive macro "
                 "windows. Default: 0 (each token encoded once, except that a long document's last window is moved back to be "
                 "full, so its start repeats tokens of the window before: 0.2% more content tokens on the Chroma corpora; measured: "
                 "results/map.md)."),
]


def _sentence_workers(n: int | None, world_size: int = 1) -> int:
    """``--sentence-workers`` checked (exit 2 on a negative value) and resolved: the option's value, or the
    default (one per core less one, max 16; 0 below 4 cores) shared among the processes of a multi-process run."""
    from latechunk.sentences import default_workers

    if n is not None and n < 0:
        _fail(f"--sentence-workers must be >= 0 (0: segment in the main process), got {n}")
    if n is not None:
        return n
    share = default_workers() // world_size
    return share if share > 1 else 0


#: embed's help for an option that run.json records: --resume, --append and --reuse take it from there when not given
_RECORDED = "Recorded in run.json: --resume, --append and --reuse keep it."
_ID_FIELD_HELP = "JSONL field or table column (parquet, Arrow, datasets) holding a record's id. Default: id, else _id, else doc_id."
IdFieldOpt = Annotated[Optional[str], typer.Option("--id-field", metavar="NAME", show_default=False, help=f"{_ID_FIELD_HELP} {_RECORDED}")]
TextFieldOpt = Annotated[Optional[str], typer.Option("--text-field", metavar="NAME", show_default=False, help="Field or column holding a record's text, e.g. body or contents.  [default: text]")]
EncodingErrorsOpt = Annotated[Optional[str], typer.Option("--encoding-errors", metavar="strict|replace", show_default=False, help=f"Bytes that are not UTF-8 in a file, JSONL line or table value: strict skips the item, naming the bytes' offsets; replace reads it with U+FFFD in their place and lists it in manifest.json's degraded. {_RECORDED}  [default: strict]")]
MetadataFieldsOpt = Annotated[Optional[str], typer.Option("--metadata-fields", metavar="NAMES|all", show_default=False, help=f"JSONL fields, table columns or markdown front-matter keys kept with each chunk, comma-separated (lang,tags,date), or all (every field but the id, text, title and url): the chunk table's metadata column (JSON), search --json, Index.search hits and export; search --where NAME=VALUE filters on them. {_RECORDED}  [default: none]")]
TitleFieldOpt = Annotated[Optional[str], typer.Option("--title-field", metavar="NAME", show_default=False, help="Field or column holding a record's optional title (put before its text, and the chunks' title).  [default: title]")]
# chunk's own help for the options it shares with embed: chunk writes chunk records, no folder, manifest or run.json
ChunkIdFieldOpt = Annotated[Optional[str], typer.Option("--id-field", metavar="NAME", show_default=False, help=f"{_ID_FIELD_HELP} It becomes the doc_id of each of the record's chunks.")]
ChunkEncodingErrorsOpt = Annotated[Optional[str], typer.Option("--encoding-errors", metavar="strict|replace", show_default=False, help="Bytes that are not UTF-8 in a file, JSONL line or table value: strict skips the item (listed on stderr with the bytes' offsets); replace reads it with U+FFFD in their place and chunks it, with a note on stderr (none with --quiet).  [default: strict]")]
ChunkMetadataFieldsOpt = Annotated[Optional[str], typer.Option("--metadata-fields", metavar="NAMES|all", show_default=False, help="JSONL fields, table columns or markdown front-matter keys copied into each chunk record's metadata object, comma-separated (lang,tags,date), or all (every field but the id, text, title and url).  [default: none]")]
ChunkModelOpt = Annotated[Optional[str], typer.Option("--model", "-m", help="The model whose tokenizer counts the tokens (budgets and token spans are in its tokens, as embed counts them): a Hugging Face model id or local folder. Default: bundled all-MiniLM-L6-v2 (offline).")]
ChunkDeviceOpt = Annotated[str, typer.Option("--device", help="Where the semantic strategy runs the model: auto (CUDA when present), cpu, cuda, cuda:N. The other strategies only tokenize.")]
PrecisionOpt = Annotated[Optional[str], typer.Option("--precision", show_default=False, help="How index.faiss stores the vectors (the shards keep float32): float32, float16 (faiss SQfp16), int8 (faiss SQ8, per-dimension ranges calibrated on the corpus) or ubinary (1 bit per dimension, Hamming search then float rescoring; --index flat only). sentence-transformers' quantize_embeddings semantics.  [default: float32]")]
TruncateDimOpt = Annotated[Optional[int], typer.Option("--truncate-dim", help="Index only the first N dimensions of every vector (Matryoshka models), renormalised when vectors are normalised; queries get the same. Default: all.")]


def _check_index_dim(index_config, facts) -> None:
    """``--truncate-dim`` (and ubinary's multiple of 8) and the ``--index`` factory string against the model's
    dimension from its ``config.json`` (``hidden_size``), before torch loads; silent where the file does not state
    it (checked again once loaded).

    Raises:
        ValueError: if the dimension does not fit.
    """
    try:
        cfg = json.loads((Path(facts.path) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError):
        return
    dim = cfg.get("hidden_size") or cfg.get("d_model")
    if isinstance(dim, int) and dim > 0:
        index_config.index_dim(dim)
        from latechunk.index import check_factory  # faiss only, no torch

        check_factory(index_config, dim)  # IVF0, IDMap, refine wrappers, no inner product: refused before encoding


@app.command()
def embed(
    inputs: Annotated[list[Path], typer.Argument(metavar="INPUT", help=".md/.txt files, source code (.py/.js/.ts/.go/.rs/.java), .html (as markdown), folders of them, .jsonl (id/text), BEIR corpus.jsonl, .parquet or .arrow (id/text), Hugging Face save_to_disk folders.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder: index.faiss, chunks.parquet, manifest.json.")],
    model: ModelOpt = None,
    strategy: Annotated[Optional[str], typer.Option("--strategy", "-s", show_default=False, help=f"SPEC: name or name:key=value,... (see `latechunk strategies`). With --resume or --append, every option not given is the folder's (run.json).  [default: {DEFAULT_STRATEGY}]")] = None,
    mode: Annotated[Optional[str], typer.Option("--mode", show_default=False, help="late (encode the document once, pool per chunk), naive (encode each chunk alone), contextual (naive, with the chunk's header [title > section path] and a blank line before its text; the stored text stays the exact slice) or fused (late + naive vectors of each chunk, each unit-normalised, summed: both encodings, about 2x late's tokens through the model; on Chroma more recall than either, results/fused.md; with --no-normalize the sum of the two unit vectors, norm up to 2).  [default: late]")] = None,
    device: DeviceOpt = "auto",
    dtype: Annotated[Optional[str], typer.Option(help="float32, bfloat16, float16 (or fp32, bf16, fp16). Default: bfloat16 on CUDA and on CPUs with AMX or AVX-512 BF16 (1.5-2x float32's speed there, equal recall: results/bf16.md), else float32; $LATECHUNK_CPU_DTYPE=float32 sets the CPU default. Recorded in run.json: --resume and --append keep it.")] = None,
    macro_window: MacroWindowOpt = None,
    macro_window_overlap: MacroWindowOverlapOpt = None,
    batch_tokens: Annotated[Optional[int], typer.Option(show_default=False, help="Token budget per forward batch (padded tokens). Never changes a vector, so not a setting of the output: run.json records the number used, but --resume and --append do not take it from there: they use --batch-tokens when given, else their own device's default (a GPU's 16384 for a run begun on a CPU).  [default: 4096 on the CPU, 16384 on a GPU]")] = None,
    backend: Annotated[Optional[str], typer.Option("--backend", help="What runs the model: torch (any device), onnx (ONNX Runtime on the CPU, fp32, token states within 1e-4 of torch; exported once, cached under $LATECHUNK_CACHE/onnx, default ~/.cache/latechunk/onnx) or onnx-int8 (the export dynamically quantized to int8: faster, a small recall cost). ONNX needs pip install 'latechunk[onnx]'. Recorded in run.json: --resume and --append keep it.")] = None,
    compile: CompileOpt = False,
    index: Annotated[Optional[str], typer.Option("--index", show_default=False, help="A faiss index_factory string (Flat, HNSW32, IVF4096,Flat, IVF1024,PQ32, IVF65536,PQ64, ...); aliases: flat (= Flat), hnsw (= HNSW{--hnsw-m}). Inner product; vectors are L2-normalised unless --no-normalize. Checked against the model's dimension before anything is encoded. An IVF index is trained on a seeded sample of the vectors (max(65536, 64*nlist) rows, at most 2^20) and its inverted lists are merged on disk into index.ivfdata, one shard at a time: it may be larger than RAM; search it with --nprobe. With fewer than 39*nlist vectors, nlist becomes n//39 (recorded in the manifest). Every other type (Flat, HNSW32, PQ32) is built in memory. --precision float16/int8 turn Flat storage into SQfp16/SQ8 (Flat, HNSW{M}, IVF{n},Flat); a string with its own codes (PQ, SQ) needs --precision float32; ubinary needs flat. --truncate-dim applies to every type.  [default: flat]")] = None,
    hnsw_m: Annotated[Optional[int], typer.Option(show_default=False, help="With --index hnsw: graph degree M.  [default: 32]")] = None,
    ef_construction: Annotated[Optional[int], typer.Option(show_default=False, help="HNSW: build beam width.  [default: 200]")] = None,
    ef_search: Annotated[Optional[int], typer.Option(show_default=False, help="HNSW: search beam width.  [default: 128]")] = None,
    precision: PrecisionOpt = None,
    truncate_dim: TruncateDimOpt = None,
    normalize: Annotated[Optional[bool], typer.Option("--normalize/--no-normalize", show_default=False, help="L2-normalise chunk vectors (cosine search).  [default: normalize]")] = None,
    include_special: Annotated[Optional[bool], typer.Option("--include-special/--no-include-special", show_default=False, help="Late mode: first/last chunk absorb [CLS]/prefix/[SEP] states.  [default: no-include-special]")] = None,
    long_documents: Annotated[Optional[str], typer.Option("--long-documents", show_default=False, help="windows: encode documents longer than the macro window in consecutive macro windows; skip: skip them (listed with their token count). Never truncated.  [default: windows]")] = None,
    trust_remote_code: Annotated[bool, typer.Option("--trust-remote-code", help="Run the model repository's own code (only for models that need it). Never taken from run.json: --append asks for it again.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output folder.")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted run in --out: every option not given is the run's (run.json), an option given must equal it, except the index options (--index, --precision, --truncate-dim, HNSW settings: the index is built from the shards, so an index that could not be trained is replaced without encoding again); ends with the output of an uninterrupted run.")] = False,
    append: Annotated[bool, typer.Option("--append", help="Add INPUT to the finished output folder --out with its run's settings (run.json; every option not given is the folder's, an option given must equal it): new shards, then index.faiss, chunks.parquet and manifest.json again; documents whose id is already there are skipped (those with the same text counted, others listed). Exits 0 when every input is already in the index (nothing to do), 1 when nothing could be appended for another reason.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars, no unknown-token line and no line on documents read degraded (--encoding-errors replace): the manifest's unknown_tokens and degraded list those documents. Errors and skipped inputs are still printed.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help=f"For CI jobs: exit {STRICT_EXIT_CODE} when any input document was skipped (each listed on stderr and in the manifest's skipped list; the output is written all the same). Entries never read as documents (an unsupported type such as .pdf, a hidden or version-control folder, a symlinked folder) do not count; with --append, neither do documents already in the index. Default: exit 0, the skipped items listed.")] = False,
    group_tokens: Annotated[Optional[int], typer.Option("--group-tokens", hidden=True, show_default=False, help=f"Tokens per pipeline group = per shard (bounds memory).  [default: {DEFAULT_GROUP_TOKENS}]")] = None,
    sentence_workers: SentenceWorkersOpt = None,
    late_pooling: LatePoolingOpt = None,
    dedup: Annotated[Optional[float], typer.Option("--dedup", metavar="THRESHOLD", help="Drop a chunk whose cosine to an earlier kept chunk (input order; chunks of one document too) is >= THRESHOLD (0 < THRESHOLD <= 1; exact FAISS range search); each dropped chunk is listed in manifest.json's dedup with the chunk it duplicates. Recorded in run.json: --resume and --append keep it (--reuse refuses an OLD embedded with it). Default: off.")] = None,
    id_field: IdFieldOpt = None,
    text_field: TextFieldOpt = None,
    title_field: TitleFieldOpt = None,
    metadata_fields: MetadataFieldsOpt = None,
    encoding_errors: EncodingErrorsOpt = None,
    engine: Annotated[str, typer.Option("--engine", help="local: this process (or torchrun ranks); ray: a Ray cluster (pip install 'latechunk[ray]'): CPU tasks segment and split, one encoder actor per GPU (CPU actors without GPUs) writes the same shards, this process assembles. Same output either way.")] = "local",
    ray_address: Annotated[Optional[str], typer.Option("--ray-address", help="--engine ray: auto (the cluster of this machine or $RAY_ADDRESS), HOST:PORT of its head, or ray://HOST:PORT. Default: a new local cluster on this machine.")] = None,
    ray_actors: Annotated[Optional[int], typer.Option("--ray-actors", help="--engine ray: encoder actors. Default: one per GPU of the cluster; without GPUs one per two CPUs.")] = None,
    reuse: Annotated[Optional[Path], typer.Option("--reuse", metavar="OLD", show_default=False, help="An earlier output folder embedded with the same settings: each document whose id and text are unchanged takes its chunks and vectors from OLD instead of the model; only new and changed ones are encoded, and documents gone from INPUT are not in the new folder. Options not given are OLD's (run.json). The daily update of a served index: embed into a new --out, then swap it in (README). Not with --append or --engine ray.")] = None,
) -> None:
    """Chunk and embed documents; write a FAISS index, the chunk table and a manifest.

    The output is written in checksummed shards (DIR/shards), each renamed into place when complete, then
    assembled; after a crash or kill, `--resume` continues where the run stopped. Check a folder with
    `latechunk verify DIR`.

    Several GPUs: `torchrun --nproc-per-node N -m latechunk embed ...` or `accelerate launch -m latechunk embed ...`
    (one process per GPU, from $RANK/$WORLD_SIZE/$LOCAL_RANK): each encodes every N-th shard, rank 0 assembles.
    A Ray cluster: `--engine ray --ray-address auto` (same shards, resumable with --resume either way).

    Example: latechunk embed ../shared/data/chroma_chunking_eval/corpora --out out/chroma --strategy fixed:size=256
    """
    from latechunk.config import EmbedConfig, IndexConfig, ModelConfig, PipelineConfig, RecordFields, dist_env
    from latechunk.models import ModelFacts, resolve_model_path
    from latechunk.output import OutputFolder

    # options not given: embed's defaults, or with --append the folder's run.json settings
    given = {
        "model": model,
        "strategy": strategy,
        "mode": mode,
        "dtype": dtype,
        "macro_window": macro_window,
        "macro_window_overlap": macro_window_overlap,
        "batch_tokens": batch_tokens,
        "index": index,
        "hnsw_m": hnsw_m,
        "ef_construction": ef_construction,
        "ef_search": ef_search,
        "precision": precision,
        "truncate_dim": truncate_dim,
        "normalize": normalize,
        "include_special": include_special,
        "long_documents": long_documents,
        "trust_remote_code": trust_remote_code,
        "group_tokens": group_tokens,
        "late_pooling": late_pooling,
        "dedup": dedup,
        "backend": backend,
        "id_field": id_field,
        "text_field": text_field,
        "title_field": title_field,
        "metadata_fields": None if metadata_fields is None else _metadata_fields(metadata_fields),
        "encoding_errors": encoding_errors,
    }
    # --resume and --append: every option not given is the folder's (run.json), so `--resume` alone continues a run
    run_file = OutputFolder(out).run_path
    if resume and reuse is None and run_file.is_file():  # a --reuse run resumed: it reuses OLD again
        recorded_reuse = None
        with contextlib.suppress(ValueError, OSError):
            recorded_reuse = OutputFolder(out).read_run().get("reuse")
        if isinstance(recorded_reuse, str) and Path(recorded_reuse).is_dir():
            reuse = Path(recorded_reuse)
        elif isinstance(recorded_reuse, str):  # a trial: it went on, silently encoding the whole corpus again
            _fail(f"--resume: {out} is a --reuse run of {recorded_reuse}, which is no longer there; give its new "
                  "place with --resume --reuse OLD (or --force to embed everything again)")
    # --reuse OLD: a new version of OLD, so the options not given are OLD's too (also when --resume finds no
    # run.json: the run was killed before it wrote one)
    o = _resolve_embed_options(given, out if append or (resume and run_file.is_file()) else reuse, resume=resume)
    resumed = resume and OutputFolder(out).run_path.is_file()  # a run to continue (else --resume starts one)
    if resume and force:  # before saying what --resume would do (a trial saw that note, then this refusal)
        _fail("--force (start over) and --resume (continue) exclude each other; give one")
    if resume and not resumed:  # killed before run.json: a new run, said so
        typer.echo(f"--resume: {out} holds no run to continue (no run.json); starting a new run with the options "
                   "given (embed's defaults for the others)", err=True)
    model, strategy, mode, dtype = o["model"], o["strategy"], o["mode"], o["dtype"]
    macro_window, macro_window_overlap, batch_tokens = o["macro_window"], o["macro_window_overlap"], o["batch_tokens"]
    index, hnsw_m, ef_construction, ef_search = o["index"], o["hnsw_m"], o["ef_construction"], o["ef_search"]
    precision, truncate_dim, normalize, include_special = o["precision"], o["truncate_dim"], o["normalize"], \
        o["include_special"]
    long_documents, trust_remote_code, group_tokens = o["long_documents"], o["trust_remote_code"], o["group_tokens"]
    late_pooling, dedup, backend = o["late_pooling"], o["dedup"], o["backend"]
    id_field, text_field, title_field = o["id_field"], o["text_field"], o["title_field"]
    metadata_fields = o["metadata_fields"]
    # validate everything before any work, and all that the options and the model's files can tell before torch
    # is imported or a weight is loaded: each check lives in the config that holds the setting
    try:
        rank, world_size, local_rank = dist_env()
        config = EmbedConfig(
            inputs=tuple(inputs),
            out=out,
            model=ModelConfig(name=model, device=device, dtype=dtype, batch_tokens=batch_tokens,
                              trust_remote_code=trust_remote_code, backend=backend, compile=compile),
            pipeline=PipelineConfig(
                strategies=(strategy,), modes=(mode,), normalize=normalize, include_special=include_special,
                macro_window=macro_window, macro_window_overlap=macro_window_overlap,
                long_documents=long_documents, group_tokens=group_tokens,
                sentence_workers=_sentence_workers(sentence_workers, world_size), late_pooling=late_pooling),
            index=IndexConfig.from_option(index, hnsw_m=hnsw_m, ef_construction=ef_construction, ef_search=ef_search,
                                          precision=precision, truncate_dim=truncate_dim, renormalize=normalize),
            force=force,
            resume=resume,
            dedup=dedup,
            fields=RecordFields(id=id_field, text=text_field, title=title_field, metadata=metadata_fields,
                                encoding_errors=o["encoding_errors"]),
        )
    except ValueError as err:
        _fail(str(err))
    _check_hnsw_options(given, config.index, str(index))
    _check_engine(engine, ray_address, ray_actors, world_size=world_size, append=append, dedup=dedup,
                  sentence_workers=sentence_workers)
    if reuse is not None:
        if dedup is not None and given.get("dedup") is None:  # taken from OLD's run.json
            _fail(f"--reuse {reuse}: it was embedded with --dedup, so its documents lack the chunks dropped as "
                  "near-duplicates of others (which may be gone now): embed without --reuse")
        clash = [name for name, on in (("--append", append), ("--engine ray", engine == "ray"),
                                       ("--dedup", dedup is not None), ("torchrun ($WORLD_SIZE > 1)", world_size > 1))
                 if on]
        if clash:
            _fail(f"--reuse does not combine with {', '.join(clash)} (it writes a fresh folder in one process)")
        if not (reuse / "manifest.json").is_file():
            _fail(f"--reuse {reuse}: not a finished output folder of `latechunk embed` (no manifest.json)")
        if out.resolve() == reuse.resolve():
            _fail(f"--reuse {reuse} is --out itself: embed into a new folder and swap it in when it is done "
                  "(README: updating a served index)")
    if append:  # the folder's settings, as far as the options tell them, before the model loads
        from latechunk.ingest.append import check_append_options

        try:
            check_append_options(config, force=force, resume=resume, world_size=world_size)
        except ValueError as err:
            _fail(str(err))
    # a finished folder: nothing to continue, and nothing in it is touched; with options given, they are checked
    # against its run.json first (below, once the model's facts are known), so a different one is still refused
    finished = _finished_run_note(out) if resume else ""
    if finished and (stray := _interrupted_append(out)):  # a trial was told "--force to start over" here
        _fail(f"--resume: {out} holds a finished run and {stray} shard(s) of an --append that was interrupted; "
              "--resume continues a first run only: run that `latechunk embed NEW --out "
              f"{out} --append` again to finish it (it drops the partial shards and appends again; the folder "
              "serves its last finished state meanwhile)")
    if resumed:  # every setting but the model's facts (known once it loads), against run.json: before any loading
        from latechunk.ingest.folder import check_same_settings

        try:
            old = {k: v for k, v in (OutputFolder(out).read_run().get("settings") or {}).items() if k != "model"}
        except (ValueError, OSError):
            old = None  # unreadable: prepare_output says why
        if old is not None:
            try:
                check_same_settings(old, {k: v for k, v in config.to_dict().items() if k != "model"},
                                    what=f"--resume of {'a finished' if finished else 'an interrupted'} run with "
                                         "settings that differ from it")
            except ValueError as err:
                _fail(str(err))
    if finished and not trust_remote_code and all(v is None for k, v in given.items() if k != "trust_remote_code"):
        typer.echo(finished, err=True)
        return
    if rank == 0 and (append or resume or force):  # another process writing --out: fail before the model loads
        from latechunk.ingest.folder import check_unlocked

        try:
            check_unlocked(out)
        except ValueError as err:
            _fail(str(err))
    strat = config.strategy
    source = getattr(strat, "source", "late")
    try:
        if strat.needs_sentence_vectors and source != "late":
            try:  # a missing sentence-model path fails here, before any work, naming the strategy's setting
                resolve_model_path(source)
            except ValueError as err:
                raise ValueError(f"strategy {strat.spec!r}: its sentence model source={source!r} does not load "
                                 f"(source=late uses the run's own model): {err}") from err
        # the settings that need the model (late pooling, the macro window) against its files: no torch, no weights
        facts = ModelFacts.read(config.model.name)
        config.pipeline.check_model(facts)
        _check_index_dim(config.index, facts)  # --truncate-dim against the model's dimension (config.json)
    except ValueError as err:
        _fail(_recorded_model_hint(str(err), out, (append or resume) and given.get("model") is None))
    # before the model loads; with several processes rank 0 checks the folder (the others find it being filled)
    if rank == 0 and not (resume or append):
        from latechunk.ingest.folder import check_force, check_not_empty

        try:
            check_force(out) if force else check_not_empty(out)
        except ValueError as err:
            _fail(str(err))
    try:  # an input with nothing to embed (an empty folder, only .docx/.pdf files, ...) fails before any work
        from latechunk.io import require_documents

        require_documents(inputs, fields=config.fields)
    except ValueError as err:
        _fail(str(err))
    device = config.model.device
    if world_size > 1 and device in ("auto", "cuda"):
        import torch

        if torch.cuda.is_available():  # one GPU per process: cuda:LOCAL_RANK
            if local_rank >= torch.cuda.device_count():
                _fail(f"$LOCAL_RANK={local_rank} but only {torch.cuda.device_count()} CUDA device(s) are visible")
            device = f"cuda:{local_rank}"
            torch.cuda.set_device(local_rank)
    from latechunk.encoder import Encoder
    from latechunk.index import IndexTrainingError
    from latechunk.ingest import RankError, ingest
    from latechunk.provenance import versions

    try:
        encoder = Encoder.from_config(config.model, device=device)
        plan = config.pipeline.check_model(encoder.facts)  # the same check, now with the tokenizer as loaded
        from latechunk.index import new_index

        new_index(config.index, encoder.dim)  # a factory string faiss cannot build fails here, before any output
    except ValueError as err:  # a model that does not load, a macro window that does not fit it, a bad --index
        _fail(_recorded_model_hint(str(err), out, (append or resume) and given.get("model") is None))

    header = {
        "model": encoder.describe(plan),
        "strategy": {"spec": strat.spec, **strat.to_dict()},
        "inputs": [str(p) for p in inputs],
        "versions": versions(),
    }
    if finished:
        from latechunk.ingest import run_settings
        from latechunk.ingest.folder import check_same_settings
        from latechunk.output import OutputFolder

        try:
            check_same_settings(OutputFolder(out).read_run().get("settings", {}), run_settings(config, encoder),
                                what="--resume of a finished run with settings that differ from it", may_change=())
        except ValueError as err:
            hint = (f" (another index for a finished folder: latechunk reindex {out} --index/--precision/"
                    "--truncate-dim ...)" if "index." in str(err) else "")
            _fail(str(err) + hint)
        typer.echo(finished, err=True)
        return
    if append:
        _append(config, encoder, quiet, strict)
        return
    try:
        if engine == "ray":
            from latechunk.ingest.ray_engine import ingest_ray

            manifest = ingest_ray(config, encoder, header=header, address=ray_address, actors=ray_actors,
                                  progress=not quiet)
        else:
            manifest = ingest(config, encoder, progress=not quiet and rank == 0, header=header, rank=rank,
                              world_size=world_size, reuse=reuse)
    except IndexTrainingError as err:  # everything is encoded: the shards hold it, only the index failed
        _fail(f"{err}. The encoded shards are kept in {out / 'shards'}: run the same command with --resume and "
              "--index Flat (or HNSW32) to build another index from them without encoding again")
    except ValueError as err:
        _fail(str(err))
    except RankError as err:
        _fail(f"rank {rank} of {world_size}: {err}", code=1)
    if manifest is None:
        typer.echo(f"rank {rank} of {world_size} ({encoder.device}): shards written into {out / 'shards'}; rank 0 assembles")
        return
    c = manifest["counts"]
    typer.echo(
        f"embedded {_documents_line(c['documents_embedded'], c['documents_in'], manifest['skipped'])} -> {c['chunks']} chunks "
        f"({config.mode}, {strat.spec}, {c['tokens_encoded']} tokens encoded, {manifest['seconds']['total']:.1f} s"
        f"{'; the whole run, its interrupted part included' if resumed else ''}) into {out}"
    )
    named = [] if config.fields.all_metadata else list(config.fields.metadata)
    if named and c["chunks"]:  # a mistyped field name kept nothing: say so (a trial saw only nulls)
        import pyarrow.parquet as pq

        from latechunk.output import metadata_fields

        seen = metadata_fields(pq.read_table(out / "chunks.parquet", columns=["metadata"]))
        missing = [f for f in named if f not in seen]
        if missing:
            typer.secho(f"warning: no embedded record has the field(s) {', '.join(missing)} that --metadata-fields "
                        f"names (fields kept: {', '.join(seen) or 'none'})", fg=typer.colors.YELLOW, err=True)
    if reuse is not None:
        n_reused = sum(1 for d in manifest.get("documents", []) if d.get("reused"))
        typer.echo(f"reused {n_reused:,} unchanged document(s) from {reuse}; encoded "
                   f"{c['documents_embedded'] - n_reused:,} new or changed one(s)")
    _print_skipped(manifest["skipped"], out / "manifest.json")
    _print_ingest_notes(manifest, out / "manifest.json", quiet=quiet)
    if c["documents_embedded"] == 0:  # every input had a document, but none was embedded (duplicates, too long)
        _fail(f"no document was embedded from {', '.join(str(p) for p in inputs)} (the reasons are above and in "
              f"{out / 'manifest.json'}'s skipped list)", code=1)
    if strict:
        _check_strict(manifest["skipped"], out / "manifest.json")


#: ``embed``'s option defaults (the options default to None, so that ``--append`` can tell an option given from
#: one not given and take the folder's run.json value for the latter)
_EMBED_DEFAULTS = {
    "model": None,
    "strategy": DEFAULT_STRATEGY,
    "mode": "late",
    "dtype": None,
    "macro_window": None,
    "macro_window_overlap": None,
    "batch_tokens": None,
    "index": "flat",
    "hnsw_m": 32,
    "ef_construction": 200,
    "ef_search": 128,
    "precision": "float32",
    "truncate_dim": None,
    "normalize": True,
    "include_special": False,
    "long_documents": "windows",
    "trust_remote_code": False,
    "group_tokens": DEFAULT_GROUP_TOKENS,
    "late_pooling": None,
    "dedup": None,
    "backend": "torch",
    "id_field": None,
    "text_field": "text",
    "title_field": "title",
    "metadata_fields": (),
    "encoding_errors": "strict",
}


def _metadata_fields(value: str) -> tuple[str, ...]:
    """``--metadata-fields`` as :attr:`latechunk.types.RecordFields.metadata`: ``"lang, tags"`` -> ``("lang",
    "tags")``; ``all`` -> :data:`latechunk.types.ALL_METADATA`; ``""`` -> ``()`` (none)."""
    from latechunk.types import ALL_METADATA

    names = tuple(n.strip() for n in value.split(",") if n.strip())
    return ALL_METADATA if [n.lower() for n in names] == list(ALL_METADATA) else names  # ALL, All: all


def _finished_run_note(out: Path) -> str:
    """What ``embed --resume`` says of a finished output folder (one with a manifest.json: the assembly writes it
    last), which it leaves as it is; ``""`` when ``out`` holds no finished run (a resume then continues it)."""
    from latechunk.output import OutputFolder

    folder = OutputFolder(out)
    if not folder.manifest_path.is_file():
        return ""
    try:
        counts = folder.read_manifest().get("counts", {}) or {}
        what = f"{counts.get('documents_embedded', '?')} documents, {counts.get('chunks', '?')} chunks"
    except (ValueError, OSError) as err:  # damaged: verify says what is wrong
        what = f"its manifest.json does not read: {err}"
    return (f"--resume: {out} holds a finished run ({what}); there is nothing to continue and the folder is left as "
            f"it is. To add documents: latechunk embed NEW --out {out} --append; to check it: latechunk verify {out}; "
            "to start over: --force")


def _interrupted_append(out: Path) -> int:
    """Shard files of a finished folder beyond the ones its manifest lists: an ``--append`` (or ``Index.add``)
    that was interrupted; 0 when none (or the folder is not finished)."""
    from latechunk.output import SHARD_FILE, OutputFolder

    folder = OutputFolder(out)
    try:
        listed = {s.get("name") for s in folder.read_manifest().get("shards") or []}
        names = {f.name.removesuffix(".tmp").split(".")[0] for f in folder.shards_dir.iterdir()
                 if SHARD_FILE.fullmatch(f.name.removesuffix(".tmp"))}
    except (ValueError, OSError):
        return 0
    return len(names - listed)


def _resolve_embed_options(given: dict, append_to: Path | None, resume: bool = False) -> dict:
    """``embed``'s options: each given one as given; the others ``embed``'s defaults, or with ``--append`` and
    ``--resume`` the folder's run.json settings (model: with ``--append`` the manifest's model folder when it
    still exists, else the recorded name or path; with ``resume`` the recorded name or path, which the run's
    settings diff compares). A folder without a readable run.json gives the defaults (``--append`` and
    ``--resume`` then fail on it, saying why)."""
    values = dict(_EMBED_DEFAULTS)
    if append_to is not None:
        from latechunk.output import OutputFolder

        folder = OutputFolder(append_to)
        try:
            s = folder.read_run().get("settings", {}) or {}
        except (ValueError, OSError):
            s = {}
        try:  # an interrupted run (--resume) has no manifest yet
            recorded = folder.read_manifest().get("model", {}) if s and not resume else {}
        except (ValueError, OSError):
            recorded = {}
        if s:
            m, ix = s.get("model") or {}, s.get("index") or {}
            path = recorded.get("path") or ""
            from latechunk.models import DEFAULT_MODEL

            # the bundled model by its name (the folder's path would be recorded as the model's name: a trial saw
            # a --reuse folder's manifest, and so its exports, name the model by a site-packages path)
            name = m.get("name")
            values.update(
                model=name if name == DEFAULT_MODEL else path if path and Path(path).is_dir() else name,
                strategy=s.get("strategy"),
                mode=s.get("mode"), dtype=m.get("dtype"), macro_window=s.get("macro_window"),
                macro_window_overlap=s.get("macro_window_overlap"),
                index=ix.get("factory", "flat"), ef_construction=ix.get("ef_construction", 200),
                ef_search=ix.get("ef_search", 128), precision=ix.get("precision", "float32"),
                truncate_dim=ix.get("truncate_dim"), normalize=s.get("normalize", True),
                include_special=s.get("include_special", False), long_documents=s.get("long_documents", "windows"),
                group_tokens=s.get("group_tokens", DEFAULT_GROUP_TOKENS), late_pooling=s.get("late_pooling"),
                dedup=s.get("dedup"), backend=m.get("backend", "torch"),
                **{f"{k}_field": v for k, v in (s.get("record_fields") or {}).items() if k in ("id", "text", "title")},
                metadata_fields=tuple((s.get("record_fields") or {}).get("metadata") or ()),
                encoding_errors=(s.get("record_fields") or {}).get("encoding_errors", "strict"))
    return {k: v if v is not None else values[k] for k, v in given.items()}


def _check_engine(engine: str, address: str | None, actors: int | None, *, world_size: int, append: bool,
                  dedup: float | None, sentence_workers: int | None) -> None:
    """``--engine`` and its options checked before the model loads (exit 2 naming the option); ``ray`` must import."""
    if engine not in ("local", "ray"):
        _fail(f"--engine must be local or ray, got {engine!r}")
    if engine == "local":
        if address is not None or actors is not None:
            _fail("--ray-address and --ray-actors apply to --engine ray")
        return
    clash = [name for name, on in (("torchrun/accelerate ($WORLD_SIZE > 1)", world_size > 1), ("--append", append),
                                   ("--dedup", dedup is not None), ("--sentence-workers", sentence_workers is not None))
             if on]
    if clash:
        _fail(f"--engine ray does not combine with {', '.join(clash)} (Ray runs the processes and segments "
              "sentences in its CPU stage; --dedup and --append run in one process)")
    if actors is not None and actors < 1:
        _fail(f"--ray-actors must be >= 1, got {actors}")
    from latechunk.ingest.ray_engine import import_ray

    try:
        import_ray()
    except ImportError as err:
        _fail(str(err))
    if address == "auto":  # no running cluster fails now, instead of Ray waiting for one that never comes
        try:
            from ray._private.services import canonicalize_bootstrap_address  # how ray.init resolves "auto"
        except ImportError:  # a Ray without this helper: ray.init reports it later
            canonicalize_bootstrap_address = None
        if canonicalize_bootstrap_address is not None:
            try:
                address = canonicalize_bootstrap_address("auto") or None
            except ConnectionError as err:
                _fail(f"--ray-address auto: no running Ray cluster found on this machine and $RAY_ADDRESS is not "
                      f"set ({err}); start one with `ray start --head`, or give HOST:PORT of its head")
    if address and address != "auto":  # a mistyped or unreachable head fails now, before --force empties DIR
        import socket

        hostport = address.removeprefix("ray://")
        host, _, port = hostport.rpartition(":")
        if not host or not port.isdigit():
            _fail(f"--ray-address must be auto, HOST:PORT or ray://HOST:PORT, got {address!r}")
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
        except OSError as err:
            _fail(f"--ray-address {address}: cannot connect to {host}:{port} ({err.strerror or err}); is the head "
                  "node running (`ray start --head`) and is the port open?")


def _append(config, encoder, quiet: bool, strict: bool = False) -> None:
    """``embed --append``: add the inputs to the finished folder and print what was added and skipped; with
    ``strict``, exit :data:`STRICT_EXIT_CODE` when a document was skipped (not one already in the index)."""
    from latechunk.index import IndexTrainingError
    from latechunk.ingest.append import append

    try:
        res = append(config, encoder, progress=not quiet)
    except IndexTrainingError as err:
        _fail(f"{err}. Nothing was appended (the folder is as it was); `latechunk reindex {config.out} --index Flat` "
              "(or HNSW32) gives the folder an index type that can be built, then append again")
    except ValueError as err:
        _fail(str(err))
    from latechunk.ingest.assemble import ALREADY_INDEXED_REASON

    # the documents already in the index, one line (a re-appended folder of 100k unchanged files printed 50 lines
    # and a count); the manifest counts them (counts.already_indexed) and lists the others
    already = sum(1 for s in res.skipped if s.get("reason") == ALREADY_INDEXED_REASON)
    others = [s for s in res.skipped if s.get("reason") != ALREADY_INDEXED_REASON]
    if not res.added:  # nothing embedded: the folder is as it was, and records none of the skipped items
        _print_skipped(others, None)
        if already:
            typer.secho(f"skipped {already:,} document(s) already in the index (same id and text)",
                        fg=typer.colors.YELLOW, err=True)
        _warn_changed(res.skipped, {d["doc_id"] for d in res.manifest.get("documents", [])}, config.out)
        _warn_vanished(config, res)
        from latechunk.io import is_not_read

        # an up-to-date folder appended again (a daily cron job): success, nothing to do, though it holds a .pdf
        if all(is_not_read(str(s.get("reason", ""))) for s in others):
            typer.echo(f"nothing new to append to {config.out}: all {already:,} input document(s) are already in "
                       "the index; the folder is unchanged")
            return
        _fail(f"nothing appended to {config.out}: none of the {len(res.skipped)} input item(s) was embedded "
              "(the reasons are above); the folder is unchanged", code=1)
    c = res.manifest["counts"]
    typer.echo(f"appended {_documents_line(len(res.documents), len(res.documents) + len(res.skipped), res.skipped)} -> {res.chunks} "
               f"chunks into {config.out} (now {c['chunks']} chunks from {c['documents_embedded']} documents)")
    _print_skipped(others, config.out / "manifest.json")
    if already:
        typer.secho(f"skipped {already:,} document(s) already in the index (same id and text; counted in the "
                    "manifest's counts.already_indexed)", fg=typer.colors.YELLOW, err=True)
    _warn_changed(res.skipped, {d["doc_id"] for d in res.manifest.get("documents", [])}, config.out)
    _warn_vanished(config, res)
    # this append's documents only: the earlier ones' notes were printed when they were embedded
    _print_ingest_notes(res.manifest, config.out / "manifest.json", only={d["doc_id"] for d in res.documents},
                        quiet=quiet)
    if strict:
        _check_strict(others, config.out / "manifest.json")


def _recorded_model_hint(message: str, out: Path, recorded: bool) -> str:
    """``message`` (a model that does not load), with where the model came from when it is the folder's recorded
    one (``--append``/``--resume`` without ``--model``) and it no longer exists: a moved model folder."""
    if recorded and "does not exist" in message:
        return (f"{message} (the model {out}'s run.json records; if it moved, give its new place: --model PATH, "
                "the same model)")
    return message


def _warn_vanished(config, res) -> None:
    """On stderr, in bold: the indexed documents an append's inputs no longer hold, when those inputs are every
    input the folder was embedded from (the daily snapshot appended again): deleted documents, which search
    still returns (an index is append-only)."""
    out = Path(config.out)
    recorded_rel = res.manifest.get("inputs_from_out") or []
    recorded = {(out / p).resolve() for p in recorded_rel}
    given = {Path(p).resolve() for p in config.inputs}
    # the same inputs, or (a folder copied or moved to another depth: its relative inputs no longer resolve) inputs
    # of the same names
    same = recorded <= given or {Path(p).name for p in recorded_rel} <= {Path(p).name for p in config.inputs}
    if not recorded or not same:  # other inputs: documents of the rest are not expected here
        return
    seen = {str(d["doc_id"]) for d in res.documents} | {str(s["doc_id"]) for s in res.skipped}
    gone = [str(d["doc_id"]) for d in res.manifest.get("documents", []) if str(d["doc_id"]) not in seen]
    if gone:
        shown = ", ".join(visible(d) for d in gone[:5]) + (f" and {len(gone) - 5} more" if len(gone) > 5 else "")
        typer.secho(f"warning: {len(gone)} indexed document(s) are no longer in the inputs: {shown}; search still "
                    "returns them (an index is append-only): embed the inputs into a new folder with --reuse "
                    f"{out} (only new and changed documents are encoded) and swap it in (README: updating a served "
                    "index)", fg=typer.colors.YELLOW, bold=True, err=True)


def _warn_changed(skipped: list[dict], indexed: set[str] | None = None, out: Path | str = "DIR") -> None:
    """On stderr, in bold: the documents of an append skipped because the index holds their id with another text
    (changed sources, easy to miss among the skipped lines: the index still answers from their old text); those
    the index holds but that now read as nothing (emptied: ``indexed``, the folder's document ids), and those that
    were skipped when first met and read as documents now."""
    from latechunk.ingest.append import CHANGED_SOURCE_REASON, SKIPPED_BEFORE_REASON
    from latechunk.ingest.assemble import ALREADY_INDEXED_REASON

    def shown_ids(ids: list[str]) -> str:
        return ", ".join(visible(d) for d in ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")

    emptied = [str(s["doc_id"]) for s in skipped if indexed and str(s["doc_id"]) in indexed
               and not str(s["reason"]).startswith(("duplicate doc_id", ALREADY_INDEXED_REASON))]
    if emptied:  # a trial: an emptied file was one ordinary skipped line, and search kept its old text
        typer.secho(f"warning: {len(emptied)} indexed document(s) now read as nothing and were left as they were: "
                    f"{shown_ids(emptied)}; search still returns their old text (an index is append-only; verify "
                    f"reports them): embed the inputs into a new folder with --reuse {out} (only new and changed "
                    "documents are encoded; README: updating a served index) to drop them",
                    fg=typer.colors.YELLOW, bold=True, err=True)
    before = [str(s["doc_id"]) for s in skipped if str(s["reason"]).startswith(SKIPPED_BEFORE_REASON)]
    if before:
        typer.secho(f"warning: {len(before)} document(s) were skipped when first met (listed in the manifest) and "
                    f"were not added now: {shown_ids(before)}; an index is append-only: embed the inputs into a new "
                    f"folder with --reuse {out} to include them", fg=typer.colors.YELLOW, bold=True,
                    err=True)

    changed = [str(s["doc_id"]) for s in skipped if str(s["reason"]).startswith(CHANGED_SOURCE_REASON)]
    if changed:
        shown = ", ".join(visible(d) for d in changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        typer.secho(f"warning: {len(changed)} document(s) have an id the index already holds with another text and "
                    f"were not added: {shown}. If they are edited versions of indexed documents, search still "
                    "returns the old text (an index is append-only; verify reports the changed sources): embed the "
                    f"inputs into a new folder with --reuse {out} (only new and changed documents are encoded; "
                    "README: updating a served index) to index the new text. If they are "
                    "other files that share an id (a file's id is its path relative to its input folder, so "
                    "A/README.md and B/README.md are both README.md), rename them before appending, or embed the "
                    "folders' common parent into a new folder (the ids then keep their folder names)",
                    fg=typer.colors.YELLOW, bold=True, err=True)


def _check_hnsw_options(given: dict, index_config, index_option: str) -> None:
    """Refuse HNSW options given for an index they do not set (they were ignored: `--ef-search 64` with the flat
    default was recorded nowhere): ``--ef-construction``/``--ef-search`` need an HNSW index, ``--hnsw-m`` the
    alias ``--index hnsw`` (``HNSW16`` names its own M)."""
    beams = [f"--{k.replace('_', '-')}" for k in ("ef_construction", "ef_search") if given.get(k) is not None]
    if beams and not index_config.is_hnsw:
        _fail(f"{' and '.join(beams)} {'set' if len(beams) > 1 else 'sets'} an HNSW index, but the index is "
              f"{index_config.factory}; give --index hnsw "
              "(or HNSW{M}) with them, or leave them out")
    if given.get("hnsw_m") is not None and index_option.strip().lower() != "hnsw":
        _fail(f"--hnsw-m sets M of --index hnsw, but the index is {index_config.factory}"
              + (" (its M is in the string)" if index_config.is_hnsw else "")
              + "; give --index hnsw with it, or leave it out")


def unknown_tokens_line(unknown: list[dict], where: Path | str) -> str:
    """The one line ``embed`` prints for the documents with text read as the tokenizer's unknown token (a trial
    got one 250-character line per document): how many documents, their characters in all, where each is listed.

    Args:
        unknown: Manifest ``unknown_tokens`` entries (``doc_id``, ``unknown_chars``: characters).
        where: The manifest that lists them.

    Returns:
        The line; ``""`` when ``unknown`` is empty.
    """
    if not unknown:
        return ""
    chars = sum(int(u.get("unknown_chars", 0)) for u in unknown)
    return (f"unknown tokens: {len(unknown):,} document(s) with {chars:,} character(s) in all read as the "
            f"tokenizer's unknown token, in no vector (long words such as URLs, or characters outside its "
            f"vocabulary): each is listed in {where} (unknown_tokens)")


def _print_ingest_notes(manifest: dict, where: Path, only: set[str] | None = None, quiet: bool = False) -> None:
    """On stderr, plain text: each parse alarm of the manifest, one line for the documents with text read as the
    unknown token (:func:`unknown_tokens_line`) and one for those read degraded (``--encoding-errors replace``;
    neither with ``quiet``: the manifest lists them), the documents whose front matter was ignored
    (at most :data:`_MAX_SKIPPED_SHOWN`, then a count; of the documents in ``only`` when given: an append's own),
    and how many chunks ``--dedup`` dropped."""
    for a in manifest.get("alarms", []):
        typer.echo(visible(a["message"]), err=True)
    unknown = [u for u in manifest.get("unknown_tokens", []) if only is None or u["doc_id"] in only]
    if unknown and not quiet:
        typer.echo(unknown_tokens_line(unknown, where), err=True)
    degraded = [d for d in manifest.get("degraded", []) if only is None or d["doc_id"] in only]
    if degraded and not quiet:  # --encoding-errors replace; under --quiet the manifest's degraded lists them
        typer.echo(f"degraded: {len(degraded):,} document(s) read with U+FFFD for bytes that are not UTF-8: each is "
                   f"listed in {where} (degraded)", err=True)
    odd = [d for d in manifest.get("documents", [])
           if d.get("front_matter_problem") and (only is None or d["doc_id"] in only)]
    for doc in odd[:_MAX_SKIPPED_SHOWN]:
        typer.echo(visible(f"note: {doc['doc_id']}: {doc['front_matter_problem']}"), err=True)
    if len(odd) > _MAX_SKIPPED_SHOWN:
        typer.echo(f"front matter: ... and {len(odd) - _MAX_SKIPPED_SHOWN} more document(s) (all in {where}, "
                   "documents[].front_matter_problem)", err=True)
    ix = manifest.get("index") or {}
    if ix.get("built") and ix.get("nlist_requested") and ix.get("nlist") != ix.get("nlist_requested"):
        # reindex says it; embed said nothing (a trial found it in the manifest only)
        n = ix.get("ntotal")
        typer.echo(f"index: {ix.get('factory')} built as {ix['built']}: {n if n is None else format(n, ',')} vectors give fewer "
                   f"than 39 per list for {ix['nlist_requested']} lists (faiss's k-means minimum), so nlist is "
                   f"{ix.get('nlist')}", err=True)
    d = manifest.get("dedup")
    if d:
        typer.echo(f"dedup: {d['chunks_dropped']} chunk(s) dropped as near-duplicates (cosine >= {d['threshold']}) "
                   f"of earlier kept chunks; each is listed with the chunk it duplicates in {where}", err=True)
        if d.get("chunks_with_uncovered_text"):
            typer.secho(f"warning: {d['chunks_with_uncovered_text']} of them, like a chunk of their own document, "
                        "held text no kept chunk holds "
                        f"({d['uncovered_chars']:,} non-blank characters in {d['documents_with_uncovered_text']} "
                        "document(s)), which search can no longer find: neighbouring chunks' late vectors are "
                        "alike, more so when chunks overlap; a higher --dedup threshold keeps them "
                        "(manifest dedup.dropped[].uncovered_chars)", fg=typer.colors.YELLOW, err=True)


#: skipped items printed one per line; the rest are counted (all of them are in the manifest)
_MAX_SKIPPED_SHOWN = 50


def _documents_line(embedded: int, items: int, skipped: list[dict]) -> str:
    """``"E/N documents"`` of a run's summary (``items`` input items, ``skipped`` their skipped records): N counts
    the documents read (embedded or skipped), not the input entries never opened as documents (an unsupported
    file, a symlinked, version-control or latechunk output folder: :func:`latechunk.io.is_not_read`), which follow
    as a count; all of them are in the skipped list."""
    from latechunk.io import is_not_read

    not_read = sum(1 for s in skipped if is_not_read(str(s.get("reason", ""))))
    line = f"{embedded}/{items - not_read} documents"
    if not_read:
        line += f" ({not_read} input {'entry' if not_read == 1 else 'entries'} not read as documents, listed with the skipped items on stderr)"
    return line


def skipped_line(doc_id: str, reason: str, source: str | None = None) -> str:
    """``skipped ID: REASON``, with the item's place when it says more than its id (a JSONL line, a table row:
    ``skipped 3 (records/kb.jsonl:3): no 'text' field``)."""
    where = f" ({visible(str(source))})" if source and str(source) != doc_id else ""
    return f"skipped {visible(doc_id)}{where}: {reason}"


def _print_skipped(skipped: list[dict], where: Path | str | None) -> None:
    """Print each skipped item (doc id: reason) on stderr, at most :data:`_MAX_SKIPPED_SHOWN`, then a count: where
    they are all listed or, with ``where=None`` (nothing records them: an append that embedded nothing), the
    rest's reasons counted."""
    for s in skipped[:_MAX_SKIPPED_SHOWN]:
        typer.secho(skipped_line(str(s["doc_id"]), str(s["reason"]), s.get("source")), fg=typer.colors.YELLOW,
                    err=True)
    _print_unshown(skipped[_MAX_SKIPPED_SHOWN:], where)


def _print_unshown(rest: list[dict], where: Path | str | None) -> None:
    """The skipped items past the first :data:`_MAX_SKIPPED_SHOWN`: where they are listed, else their reasons
    counted by kind (``chunk`` records them nowhere)."""
    if rest and where is not None:
        typer.secho(f"... and {len(rest)} more skipped items (all listed in {where})", fg=typer.colors.YELLOW,
                    err=True)
    elif rest:
        kinds = Counter(re.split(r"[:(']", str(s["reason"]), maxsplit=1)[0].strip() for s in rest)
        typer.secho(f"... and {len(rest)} more skipped items: "
                    + "; ".join(f"{n} {kind}" for kind, n in kinds.most_common()), fg=typer.colors.YELLOW, err=True)


@app.command()
def verify(
    out: Annotated[Path, typer.Argument(metavar="DIR", help="A folder written by `latechunk embed`.")],
    inputs: Annotated[Optional[list[Path]], typer.Option("--inputs", "-i", help="Where the source inputs are now, repeated for each input in the order they were embedded (--inputs a --inputs b), or once per distinct input; the folder's own appended/*.jsonl need not be given (default: the paths recorded in the manifest).")] = None,
    no_sources: Annotated[bool, typer.Option("--no-sources", help="Skip re-reading and hashing the source documents.")] = False,
) -> None:
    """Check an output folder: index against chunk table against manifest against shards and source files.

    Prints each problem found and exits 1 if there is any, 0 when everything agrees. Checks: every vector against
    its shard (within the index's storage precision), every row of chunks.parquet against its manifest record
    and, unless --no-sources, against its source document read again (exact slices, changed, gone or new
    sources); shard hashes; stray temp files of a write that never finished; for IVF indexes, that sampled rows
    sit in their list and find themselves (self-recall@10, checked for Flat/SQ codes, reported for lossy PQ).
    """
    from latechunk.verify import verify_output

    if not out.exists():  # as search and Index.load say it
        _fail(f"{out} does not exist (give an output folder of `latechunk embed`)")
    if not out.is_dir():
        _fail(f"{out} is not a folder (give an output folder of `latechunk embed`)")
    try:
        problems, summary = verify_output(out, inputs=inputs, check_sources=not no_sources)
    except ValueError as err:
        _fail(str(err))
    for p in problems:
        typer.secho(f"problem: {p}", fg=typer.colors.RED)
    if problems:
        typer.secho(f"{len(problems)} problem(s) in {out}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1)
    typer.echo(f"ok: {summary}")


@app.command()
def reindex(
    out: Annotated[Path, typer.Argument(metavar="DIR", help="A finished output folder of `latechunk embed`.")],
    index: Annotated[Optional[str], typer.Option("--index", show_default=False, help="The new faiss index_factory string or alias, as embed's --index (flat, hnsw, HNSW32, IVF1024,Flat, ...). Default: the folder's.")] = None,
    hnsw_m: Annotated[Optional[int], typer.Option(show_default=False, help="With --index hnsw: its graph degree M (32 when not given; an HNSW16 folder reindexed without --index keeps its M).")] = None,
    ef_construction: Annotated[Optional[int], typer.Option(show_default=False, help="HNSW: build beam width. Default: the folder's (200 for a folder without HNSW).")] = None,
    ef_search: Annotated[Optional[int], typer.Option(show_default=False, help="HNSW: search beam width. Default: the folder's (128 for a folder without HNSW).")] = None,
    precision: Annotated[Optional[str], typer.Option("--precision", show_default=False, help="float32, float16, int8 or ubinary, as embed's --precision. Default: the folder's.")] = None,
    truncate_dim: Annotated[Optional[int], typer.Option("--truncate-dim", show_default=False, help="Keep the first N dimensions (Matryoshka models), as embed's --truncate-dim; 0: every dimension. Default: the folder's.")] = None,
    gpu: Annotated[str, typer.Option("--index-gpu", help="Build a flat float32 index on GPU FAISS: auto (when present), on, off.")] = "auto",
) -> None:
    """Build an output folder's FAISS index again with other settings, from the vectors its shards keep.

    No document is read and no model loaded: trying HNSW instead of flat, int8 instead of float32 or fewer
    dimensions costs the index build, not the encoding. Options not given keep the folder's settings; the new
    ones go into run.json and the manifest (under `reindexed` too), so search, verify, export and --append use
    them. With no option it builds a missing or damaged index.faiss again, and it removes the temp files of a
    killed write. Example: `latechunk reindex out/chroma --index hnsw --precision int8`.
    """
    from latechunk.config import IndexConfig
    from latechunk.ingest.reindex import reindex as run_reindex
    from latechunk.output import OutputFolder

    if not out.is_dir():
        _fail(f"{out} is not a folder (give an output folder of `latechunk embed`)")
    try:
        old = IndexConfig.from_dict(OutputFolder(out).read_manifest().get("index") or {})
    except (ValueError, OSError) as err:
        _fail(str(err) if str(out) in str(err) else f"{out}: {err}")
    factory = old.factory if index is None else index
    given = {"hnsw_m": hnsw_m, "ef_construction": ef_construction, "ef_search": ef_search}
    try:
        new = IndexConfig.from_option(
            factory, hnsw_m=32 if hnsw_m is None else hnsw_m,
            ef_construction=old.ef_construction if ef_construction is None else ef_construction,
            ef_search=old.ef_search if ef_search is None else ef_search, gpu=gpu,
            precision=old.precision if precision is None else precision,
            truncate_dim=old.truncate_dim if truncate_dim is None else (truncate_dim or None))
    except ValueError as err:
        _fail(str(err))
    _check_hnsw_options(given, new, factory)
    import time

    t0 = time.perf_counter()
    try:
        manifest, before, built = run_reindex(out, new)
    except ValueError as err:
        _fail(str(err))

    def label(d: dict) -> str:  # the string faiss built where it differs (an IVF's lists cut to the vectors)
        built_as = f" (built as {d['built']})" if d.get("built") and d.get("built") != d["factory"] else ""
        return (f"{d['factory']}{built_as} {d.get('precision', 'float32')}"
                + (f" @{d['truncate_dim']} dims" if d.get("truncate_dim") else "")
                + (f" ef_construction {d['ef_construction']} ef_search {d['ef_search']}" if "ef_search" in d else ""))

    now = manifest["index"]
    if not built:
        typer.echo(f"{out} already has this index ({label(before)}), whole: nothing to do")
        return
    same = IndexConfig.from_dict(now).to_dict() == before
    typer.echo(f"reindexed {out}: {label(before)} -> {label(now)}"
               + (" (the same settings: index.faiss was missing or damaged)" if same else "")
               + f" ({now.get('ntotal', 0)} vectors, {time.perf_counter() - t0:.1f} s); search, verify, export and "
               "--append use it")


@app.command()
def search(
    out: Annotated[Path, typer.Argument(metavar="DIR", help="A folder written by `latechunk embed`.")],
    query: Annotated[str, typer.Argument(metavar="QUERY", help="The query text (embedded with the model's query prompt).")],
    k: Annotated[int, typer.Option("-k", help="Number of results.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list of results, best first (each chunk's spans, heading path, title, section, header, source, url, chunk_id (its row id in an export); with --expand, the contexts: span(s), text and the hits each holds).")] = False,
    device: DeviceOpt = "auto",
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="Model for the query. Default: the model the index was built with (from its manifest).")] = None,
    expand: Annotated[Optional[str], typer.Option("--expand", metavar="section|neighbors:N|document", help="Give each hit's context for a generator instead of the chunk alone: its heading section, N chunks on each side, or the document, reassembled from the chunk table; hits of one document whose contexts overlap or touch are merged (best score kept, hits listed).")] = None,
    nprobe: Annotated[Optional[int], typer.Option("--nprobe", show_default=False, help="IVF indexes (--index IVF1024,PQ32, ...): inverted lists probed per query; more is slower and closer to exact (nlist: every list). An error for other index types.  [default: the index's: min(16, nlist)]")] = None,
    where: Annotated[Optional[list[str]], typer.Option("--where", metavar="FIELD=VALUE", show_default=False, help="Only chunks whose FIELD equals VALUE (as text, or as a number; a list field: any of its items): a field of the metadata embed --metadata-fields kept (lang=en; metadata.NAME for one named like a column), or a column: doc_id, source, title, url, section, header, heading_path (one of the chunk's headings). Repeat for several conditions, all of which must hold.")] = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
) -> None:
    """Search an index: per hit, its rank, doc id, char span and score on one line, then its heading path and a
    snippet around the query's words (with --expand: of its context). Text is printed as written (brackets
    included); on a terminal the snippet is wrapped to its width, piped every field stays on one line.

    \b
    Examples:
      latechunk search out/docs "how do I set the cache folder" -k 3
      latechunk search out/docs "cache folder" --expand section --json | jq -r '.[0].text'
      latechunk search out/notes "heron" --where lang=en --where tags=birds
    """  # noqa: D301  (\b: click's marker for a paragraph it must not rewrap, the examples)
    from latechunk.api import Index
    from latechunk.output import parse_where

    try:
        conditions = parse_where(where)
    except ValueError as err:
        _fail(str(err))
    from latechunk.index import check_nprobe, query_problem

    if k < 1:
        _fail(f"-k must be >= 1, got {k}")
    problem = query_problem(query)
    if problem:
        _fail(f"the query {problem}")
    if expand is not None:
        from latechunk.contexts import expand_hits, parse_expand

        try:
            parse_expand(expand)
        except ValueError as err:
            _fail(str(err))
    if model is not None:  # checked as the command line names it (Index.load names its own argument)
        from latechunk.models import resolve_model_path

        try:
            resolve_model_path(model)
        except ValueError as err:
            _fail(str(err))
    try:  # the folder's index, chunk table and manifest; the query model loads on the first search
        idx = Index.load(out, device, model=model, trust_remote_code=trust_remote_code)
    except ValueError as err:
        _fail(str(err))
    manifest, table = idx.manifest, idx.table
    try:
        check_nprobe(idx.faiss_index, nprobe)
    except ValueError as err:
        _fail(str(err))
    if len(idx) == 0:  # nothing to search: say why, give the empty result, load no model
        c = manifest.get("counts", {})
        typer.secho(f"{out} holds 0 vectors ({c.get('documents_embedded', 0)} documents embedded, "
                    f"{c.get('documents_skipped', 0)} skipped: see {out / 'manifest.json'}): no results",
                    fg=typer.colors.YELLOW, err=True)
        if as_json:
            typer.echo("[]")
        return
    try:  # the query as the chunks were embedded: the recorded model, dtype, prompt, normalisation, truncation
        results = idx.search_rows(query, k, nprobe=nprobe, where=conditions)
    except ValueError as err:
        _fail(str(err))
    if conditions and not results:
        from latechunk.output import WHERE_COLUMNS, metadata_fields

        known = metadata_fields(table)
        on_metadata = any(f not in WHERE_COLUMNS for f in conditions)  # columns only: no metadata advice (a trial)
        typer.echo(f"note: no chunk of {out} meets --where {' '.join(f'{f}={v}' for f, v in conditions.items())}"
                   + ("" if not on_metadata else f" (its metadata fields: {', '.join(known)})"), err=True)
    if expand is not None:  # the rows around each hit, within its document
        results = expand_hits(table, results, expand)
        if expand.strip() == "section":
            spec = str((manifest.get("strategy") or {}).get("spec", "") if isinstance(manifest.get("strategy"), dict)
                       else manifest.get("strategy") or "")
            if results and not spec.startswith("heading") and not any(r.get("section") for r in results):
                # a trial: under the default recursive strategy every "section" was the whole document
                typer.echo(f"note: this index's strategy ({visible(spec) or 'unknown'}) records no heading paths, so "
                           "--expand section gives each hit's whole document; --expand neighbors:N gives N chunks "
                           "on each side of a hit, and `embed --strategy heading` records sections", err=True)
            else:
                for r in results:  # a hit outside every heading: its section is all of the document
                    if not r.get("section") and len(r.get("text") or "") > _LONG_SECTION_CHARS:
                        typer.echo(f"note: context {r['rank']} ({visible(str(r['doc_id']))}) is the whole document, "
                                   f"{len(r['text']):,} characters: its chunks have no heading path, so a section is "
                                   "the document; --expand neighbors:N gives N chunks on each side of a hit", err=True)
    if as_json:
        typer.echo(json.dumps(results, ensure_ascii=False, indent=2))
        return
    # plain text, never rich markup: chunk text, query and doc ids are printed as written (issue 16); wrapped to
    # the terminal's width on a terminal, one line per field when piped (no width taken from the terminal then)
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    for line, emphasis in format_hits(results, query, expand=expand, width=width):
        if emphasis:
            typer.secho(line, bold=True)  # bold on a terminal; click drops the codes when piped
        else:
            typer.echo(line)


#: a section context longer than this (characters) that is a whole document without headings gets a note
_LONG_SECTION_CHARS = 20_000


@app.command()
def chunk(
    inputs: Annotated[list[Path], typer.Argument(metavar="INPUT", help=".md/.txt/.rst, source code, .html files, folders of them, .jsonl (id/text), .parquet or .arrow (id/text), Hugging Face save_to_disk folders: read as embed reads them.")],
    strategy: Annotated[str, typer.Option("--strategy", "-s", help="How documents are cut: SPEC, a name or name:key=value,... (see `latechunk strategies`), e.g. fixed:size=256,overlap=32.")] = DEFAULT_STRATEGY,
    model: ChunkModelOpt = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="The JSONL file to write, one chunk record per line; it appears only when the run is complete (an interrupted or failed run leaves no file and an existing one as it was). Default: stdout.")] = None,
    device: ChunkDeviceOpt = "auto",
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing --out file.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar (shown on a terminal's stderr only) and no note per document read with U+FFFD (--encoding-errors replace). Errors and skipped inputs are still printed.")] = False,
    id_field: ChunkIdFieldOpt = None,
    text_field: TextFieldOpt = None,
    title_field: TitleFieldOpt = None,
    metadata_fields: ChunkMetadataFieldsOpt = None,
    encoding_errors: ChunkEncodingErrorsOpt = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
) -> None:
    """Cut documents into chunks and write one JSON record per chunk (JSONL), streamed document by document:
    doc_id, chunk_index, its char span (char_start, char_end) and token span (token_start, token_end), text,
    heading_path, title, source, metadata and more. Nothing is embedded and no index is written (that is
    `embed`); needs the model's tokenizer only, except `semantic`.

    Give files, folders (read as `embed` reads them: every supported file under them, doc ids relative to the
    folder) or both, all in one call: the tokenizer loads once, so a folder costs about one start-up, not one per
    file. Every input not chunked is listed on stderr with its reason (an unsupported type, an empty file, a
    repeated doc id), then a summary line. Documents are tokenized exactly as `embed` tokenizes them (the model's
    document prompt included), so the token spans of a chunk are the same in both commands.

    \b
    Examples:
      latechunk chunk docs/ --strategy heading --out chunks.jsonl
      latechunk chunk README.md docs/guides/ notes.txt -s fixed:size=128,overlap=16 | jq -r .text
    """  # noqa: D301  (\b: click's marker for a paragraph it must not rewrap, the examples)
    from latechunk.config import PipelineConfig
    from latechunk.io import iter_inputs, missing_inputs_message, require_documents
    from latechunk.models import ModelSettings, resolve_model_path
    from latechunk.output import chunk_rows, metadata_value
    from latechunk.pipeline import Skipped, chunk_documents, iter_embed
    from latechunk.strategies import get_strategy
    from latechunk.tokenize import DocumentTokenizer

    try:
        from latechunk.config import RecordFields

        fields = RecordFields(id=id_field, text="text" if text_field is None else text_field,
                              title="title" if title_field is None else title_field,
                              metadata=_metadata_fields(metadata_fields or ""),
                              encoding_errors=encoding_errors or "strict")
        strat = get_strategy(strategy)
        missing = [str(p) for p in inputs if not p.exists()]
        if missing:
            raise ValueError(missing_inputs_message(missing))
        if out is not None:
            if out.is_dir():
                raise ValueError(f"--out {out} is a folder; chunk writes one JSONL file (e.g. --out "
                                 f"{out / 'chunks.jsonl'})")
            if not out.parent.is_dir():
                raise ValueError(f"--out {out}: the folder {out.parent} does not exist (chunk writes one JSONL file "
                                 "there)")
            _check_chunk_output(out, inputs, "--out")
            if out.exists() and not force:
                raise ValueError(f"--out {out} exists; pass --force to overwrite it")
        else:
            redirected = _stdout_file()
            if redirected is not None:  # `chunk DIR > DIR/chunks.jsonl`: it would read its own output as input
                try:
                    _check_chunk_output(redirected, inputs, "standard output, redirected to")
                except ValueError as err:
                    raise ValueError(f"{err} (and remove the empty {redirected.name} the shell created)") from None
        require_documents(inputs, fields=fields)  # an input with nothing to chunk fails here, naming it
        if strat.needs_sentence_vectors:
            from latechunk.encoder import Encoder

            encoder = Encoder(model, device=device, trust_remote_code=trust_remote_code)
        else:  # the tokenizer embed uses: the model's tokenizer with its document prompt
            from latechunk.models import DEFAULT_MODEL, needs_remote_code, remote_code_message

            path = resolve_model_path(model)
            try:
                tokenizer = DocumentTokenizer.from_pretrained(path, prefix=ModelSettings.read(path).document_prompt,
                                                              trust_remote_code=trust_remote_code)
            except ValueError as err:
                if trust_remote_code or not needs_remote_code(err):
                    raise
                raise ValueError(remote_code_message(model or DEFAULT_MODEL)) from err
    except (ValueError, OSError) as err:
        _fail(str(err))

    n_skipped = 0
    unshown: list[dict] = []
    bar: _ChunkBar | None = None  # below

    def counted() -> None:  # an input item done (chunked or skipped)
        if bar is not None:
            bar.show(n_docs, n_skipped)

    def skip(doc_id: str, reason: str, source: str | None = None) -> None:  # every item not chunked (as embed's)
        nonlocal n_skipped
        n_skipped += 1
        if n_skipped <= _MAX_SKIPPED_SHOWN:
            typer.secho(skipped_line(doc_id, reason, source), fg="yellow", err=True)
        else:  # counted by kind at the end, as embed prints them
            unshown.append({"doc_id": doc_id, "reason": reason})
        counted()

    def documents():
        for d in iter_inputs(inputs, fields):
            if isinstance(d, Skipped):
                skip(d.doc_id, d.reason, d.source)
            else:
                yield d

    n_chunks = n_docs = 0
    with contextlib.ExitStack() as stack:
        # written to a temporary name and renamed at the end: a failed run never clobbers an existing file
        tmp = out.with_name(out.name + ".tmp") if out else None
        if tmp is not None:  # Ctrl-C or an error: the temporary file goes too (after it is closed, below)
            stack.push(_remove_on_error(tmp))
        fh = stack.enter_context(open(tmp, "w", encoding="utf-8")) if tmp else sys.stdout
        bar = _ChunkBar(inputs, fields, quiet)
        stack.callback(bar.close)

        def emit(doc, b) -> None:
            nonlocal n_chunks, n_docs
            if doc.metadata.get("front_matter_problem"):  # as embed says it (the document is still chunked)
                typer.echo(visible(f"note: {doc.doc_id}: {doc.metadata['front_matter_problem']}"), err=True)
            if doc.metadata.get("degraded") and not quiet:  # read with U+FFFD (--encoding-errors replace)
                typer.echo(visible(f"note: {doc.doc_id}: {doc.metadata['degraded']}"), err=True)
            for row in chunk_rows(doc, b, strat.spec):  # metadata as its object, as search --json prints it
                row["metadata"] = metadata_value(row["metadata"])
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n_docs += 1
            n_chunks += len(b)
            counted()

        try:
            if strat.needs_sentence_vectors:  # streamed per group of documents (late pass, semantic's vectors)
                config = PipelineConfig(strategies=(strat,), modes=("late",))
                for g in iter_embed(iter_inputs(inputs, fields), encoder, config):
                    for d, b in zip(g.documents, g.boundaries[strat.spec]):
                        emit(d, b)
                    for s in g.skipped:
                        skip(s.doc_id, s.reason, s.source)
            else:
                for doc, b, reason in chunk_documents(documents(), strat, tokenizer):
                    if b is None:
                        skip(doc.doc_id, reason, (doc.metadata or {}).get("source"))
                    else:
                        emit(doc, b)
        except BrokenPipeError:  # stdout closed early (`| head`): stop quietly, no traceback (Python's docs recipe:
            # point stdout at devnull so that the interpreter's final flush does not fail again)
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(0) from None
    _print_unshown(unshown, None)
    if n_docs == 0:  # every input had a document, but none was chunked (see the reasons above)
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        _fail(f"no document was chunked from {', '.join(str(p) for p in inputs)} (the reasons are above)", code=1)
    if out:
        os.replace(tmp, out)
    typer.echo(f"{n_chunks} chunks from {n_docs} documents ({n_skipped} skipped) -> {out or 'stdout'}", err=True)


class _ChunkBar:
    """``chunk``'s progress bar, on stderr when it is a terminal (tqdm's ``disable=None``; none with ``--quiet``):
    the input items done, its total counted ahead (:func:`latechunk.io.count_inputs`, as embed counts them), its
    postfix counting the chunked and the skipped ones apart (``"3 chunked, 1 skipped (4/4 items)"``, as embed's:
    :func:`latechunk.ingest.stream.progress_counts`)."""

    def __init__(self, inputs: list[Path], fields, quiet: bool) -> None:
        from tqdm.auto import tqdm

        from latechunk.io import count_inputs

        self.bar = tqdm(unit="item", desc="chunk", file=sys.stderr, disable=True if quiet else None, leave=False)
        self.total = 0
        if not getattr(self.bar, "disable", False):  # nothing is counted for a bar that is not shown
            self.total = count_inputs(inputs, fields)
            self.bar.total = self.total
            self.show(0, 0, advance=0)

    def show(self, chunked: int, skipped: int, advance: int = 1) -> None:
        """The counts so far (documents chunked, input items skipped), with the bar moved ``advance`` items."""
        from latechunk.ingest.stream import progress_counts

        done = chunked + skipped
        self.bar.set_postfix_str(progress_counts(chunked, skipped, 0, done, max(self.total, done),
                                                 done_as="chunked"), refresh=False)
        if advance:
            self.bar.update(advance)  # shows the counts above
        else:
            self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


def _remove_on_error(path: Path):
    """An exit callback for :class:`contextlib.ExitStack` that removes ``path`` when the block ends with an exception
    (``KeyboardInterrupt`` included) and lets the exception go on; on success it leaves ``path`` alone. ``chunk
    --out F`` pushes it for ``F.tmp``: an interrupted run left ``F.tmp`` behind."""

    def on_exit(kind, _err, _tb) -> bool:
        if kind is not None:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
        return False

    return on_exit


def _stdout_file() -> Path | None:
    """The regular file standard output is redirected to (``> FILE``), where the system tells (Linux's
    ``/proc/self/fd/1``); None for a terminal, a pipe, or where it cannot be told."""
    import stat

    try:
        if not stat.S_ISREG(os.fstat(sys.stdout.fileno()).st_mode):
            return None
        link = Path(os.readlink("/proc/self/fd/1"))
    except (OSError, ValueError, AttributeError):  # no fd (a test runner's stdout), no /proc
        return None
    return link if link.is_absolute() and link.is_file() else None


def _check_chunk_output(out: Path, inputs: list[Path], what: str) -> None:
    """Refuse a ``chunk`` output file that is an input file or lies inside an input folder (it would be read as
    documents, now or by the next run over that folder).

    Raises:
        ValueError: naming ``what`` (``--out``, or standard output's redirection) and the input.
    """
    for p in inputs:
        if p.is_file() and out.resolve() == p.resolve():  # with --force it overwrote its own input
            raise ValueError(f"{what} {out} is the input file {p}; write the chunks to another file")
        if p.is_dir() and out.resolve().is_relative_to(p.resolve()):
            raise ValueError(f"{what} {out} is inside the input folder {p}: this run reads it as a document (or "
                             "lists it as skipped) and so does the next run over the folder; write it outside "
                             "the inputs")


@app.command()
def strategies() -> None:
    """List the chunking strategies, what each bets about where a fact ends, and their parameters."""
    from latechunk.strategies import registry
    from latechunk.strategies.base import _fmt

    for name, cls in registry().items():
        typer.secho(f"{name}", bold=True, nl=False)
        typer.echo(f"  — {cls.bet}" if cls.bet else "")
        for f in dataclasses.fields(cls):
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else "required")
            help_ = f.metadata.get("help", "")
            shown = _fmt(default) if default != "required" else default
            typer.echo(f"    {f.name + ' = ' + shown:<30} {help_}")
    typer.echo('\nSPEC syntax: name or name:key=value,key=value   e.g. "fixed:size=256,overlap=32"')


@app.command()
def compare(
    dataset: Annotated[str, typer.Option("--dataset", "-d", help="chroma, xquad (the bundled sets, under $LATECHUNK_DATA), or a path: a Chroma folder (corpora/*.md read as markdown or corpora/*.txt as plain text, and questions_df.csv with columns question, references: a JSON list of {content, start_index, end_index} character spans, and corpus_id: the corpus file's stem; query ids are prefixed with the folder's name), a BEIR folder (corpus.jsonl, queries.jsonl, tab-separated qrels/test.tsv), or a SQuAD v1.1/v2.0 .json (each question's first listed answer is its span; unanswerable questions are left out and counted). Files are UTF-8 unless a byte-order mark names another encoding, as embed reads them. Blank questions, questions without an answer or a relevant document, and repeated rows are left out and counted in the report.")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Report folder (report.md, results.json, per_query.csv, plot.png). Default: compare-<dataset>.")] = None,
    model: ModelOpt = None,
    strategies: Annotated[Optional[list[str]], typer.Option("--strategies", "-s", help="SPEC (repeatable; several SPECs in one value split on spaces, or several words after it). Sweeps: fixed:size=128|256. Default: the five text strategies (fixed, recursive, heading, sentence_window, semantic; code is for source files).")] = None,
    modes: Annotated[str, typer.Option("--modes", help="Comma list of late, naive, contextual (naive with a [title > section path] header), fused (late + naive vectors summed; compared with late and naive where they run).")] = "late,naive",
    k: Annotated[str, typer.Option("--k", "-k", help="Comma list of cut-offs, e.g. 1,5,10.")] = "1,5,10",
    macro_window: Annotated[Optional[str], typer.Option("--window", help="Late macro-window size in tokens; sweep with 128|256|512 (one late pass each). Default: the model's sentence-transformers max_seq_length (256 for all-MiniLM-L6-v2), else its limit.")] = None,
    macro_window_overlap: Annotated[Optional[str], typer.Option("--window-overlap", help="Content tokens shared by consecutive macro windows; sweep with 0|32|64 (one late pass per window and overlap; the report then draws the late - naive map: map.png, frontier.png). Default: 0.")] = None,
    dedup: Annotated[bool, typer.Option("--dedup", help="Drop retrieved chunks overlapping an earlier one of the same document (by char offsets) before scoring.")] = False,
    dedup_threshold: Annotated[Optional[float], typer.Option("--dedup-threshold", metavar="THRESHOLD", help="Also score every system on the index `embed --dedup THRESHOLD` would write (chunks with cosine >= THRESHOLD to an earlier kept chunk dropped), beside the full one, with NearDup@k (share of a query's top k that are near-duplicates of a higher-ranked hit). Default: off.")] = None,
    index: Annotated[str, typer.Option("--index", help="flat (exact inner product), hnsw (HNSW32), or another faiss index_factory string without IVF (Flat, HNSW32, HNSW32,SQ8); the same for every strategy and mode (an IVF index's lists would be fitted to each system's size, so IVF is refused).")] = "flat",
    precision: Annotated[str, typer.Option("--precision", help="Comma list of index precisions (float32, float16, int8, ubinary): each system is indexed once per setting over the same vectors; the report shows each one's recall and index bytes. The first is the main index.")] = "float32",
    truncate_dim: Annotated[Optional[str], typer.Option("--truncate-dim", help="Comma list of dimensions N (Matryoshka truncation, renormalised; 'all' = no truncation), crossed with --precision. Default: all.")] = None,
    doc_depth: Annotated[int, typer.Option(help="Chunks retrieved per query for the document-level run (document = its best chunk).")] = 100,
    device: DeviceOpt = "auto",
    dtype: Annotated[Optional[str], typer.Option("--dtype", help="float32, bfloat16, float16 (or fp32, bf16, fp16), for every system. Default: bfloat16 on CUDA and on CPUs with AMX or AVX-512 BF16, else float32 (as embed). Recorded in the report's model line.")] = None,
    backend: Annotated[str, typer.Option("--backend", help="What runs the model, for every system: torch (any device), onnx (ONNX Runtime on the CPU, fp32, token states within 1e-4 of torch) or onnx-int8 (dynamic int8: compare the two runs' folders to see its recall cost). Recorded in results.json. ONNX needs pip install 'latechunk[onnx]'.")] = "torch",
    compile: CompileOpt = False,
    resamples: Annotated[int, typer.Option(help="Paired bootstrap resamples.")] = 10000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    max_queries: Annotated[Optional[int], typer.Option(help="Score only the first N queries in the dataset's order (quicker scoring; the whole corpus is still embedded). Datasets list their questions document by document (XQuAD article by article), so a small N covers few documents: a smoke test, not a comparison.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Parse the dataset again instead of using the cached parse.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing report folder.")] = False,
    sentence_workers: SentenceWorkersOpt = None,
    late_pooling: LatePoolingOpt = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
    more_strategies: Annotated[Optional[list[str]], typer.Argument(
        metavar="SPEC", show_default=False, help="More SPECs, as typed after --strategies "
        "(`--strategies fixed recursive`).")] = None,
) -> None:
    """Compare strategies and modes (late, naive, contextual, fused) on one dataset with one harness; write a report folder.

    Example: latechunk compare --dataset chroma --strategies "fixed recursive heading sentence_window semantic" --k 5
    """
    from latechunk.eval.harness import CompareConfig, run_compare
    from latechunk.eval.report import print_alarms, print_table

    if more_strategies and not strategies:
        _fail(f"unexpected extra argument(s) {' '.join(more_strategies)!r}: SPECs go after --strategies")
    try:  # --strategies "a b", --strategies a --strategies b and --strategies a b all give [a, b]
        specs = [s for v in (*(strategies or []), *(more_strategies or [])) for s in v.split()]
        config = CompareConfig.from_options(dataset=dataset, model=model, strategies=specs or None, modes=modes, k=k,
                                            window=macro_window, window_overlap=macro_window_overlap, dedup=dedup,
                                            dedup_threshold=dedup_threshold,
                                            index=index, precision=precision, truncate_dim=truncate_dim,
                                            doc_depth=doc_depth, device=device, dtype=dtype, backend=backend,
                                            compile=compile, n_resamples=resamples, seed=seed,
                                            max_queries=max_queries, use_cache=not no_cache,
                                            sentence_workers=_sentence_workers(sentence_workers),
                                            late_pooling=late_pooling, trust_remote_code=trust_remote_code)
    except (ValueError, TypeError) as err:
        _fail(str(err))
    from latechunk.train import same_dataset, trained_on

    if model and (seen := [d for d, p in trained_on(model) if same_dataset(d, p, dataset)]):
        typer.secho(f"warning: the model {model} was trained on {seen[0]} (its latechunk_train.json): these scores "
                    "are on questions it was trained on, not held out; evaluate on another dataset", fg="yellow",
                    err=True)
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


@app.command()
def train(
    out: Annotated[Path, typer.Option("--out", "-o", help="The model folder to write (new or empty): a sentence-transformers folder that --model loads in embed, compare and LateChunker.")],
    dataset: Annotated[Optional[str], typer.Option("--dataset", "-d", help="Queries with answer spans, any format compare reads: chroma, xquad, a Chroma folder, a SQuAD .json (each question's first listed answer is its target). Never evaluate on what you trained on (compare warns when its model was).")] = None,
    ict: Annotated[Optional[list[str]], typer.Option("--ict", metavar="CORPUS", help="Train without labels on your own documents (files/folders as embed reads; repeatable): inverse cloze, a sentence held out of its passage is the query and the chunk where it stood the target.")] = None,
    model: ModelOpt = None,
    strategy: Annotated[str, typer.Option("--strategy", "-s", help="Chunking SPEC whose chunks are trained on (not semantic). Small chunks are where late chunking gains most.")] = "fixed:size=64",
    macro_window: Annotated[Optional[int], typer.Option("--macro-window", "--window", help="Macro-window size in tokens, frame included, as embed's. Default: the model's sentence-transformers max_seq_length (256 for MiniLM), else its input limit.")] = None,
    macro_window_overlap: MacroWindowOverlapOpt = None,
    epochs: Annotated[int, typer.Option("--epochs", help="Passes over the training queries.")] = 1,
    lr: Annotated[float, typer.Option("--lr", help="Peak AdamW learning rate (linear warm-up over the first 10% of steps, then linear decay to 0).")] = 2e-5,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Queries per step; every chunk held whole by the step's macro windows is a candidate (in-batch and in-sequence negatives).")] = 32,
    naive_weight: Annotated[float, typer.Option("--naive-weight", help="Weight of the naive InfoNCE term (each target chunk encoded on its own), so naive mode stays good; 0: late term only.")] = 0.5,
    fused_weight: Annotated[float, typer.Option("--fused-weight", help="Weight of a fused InfoNCE term: the target chunks scored by their late + naive vectors (each unit-normalised, summed), the vector --mode fused serves; 0: none. Measured once (weight 1, XQuAD -> Chroma): fused SpanRecall@5 -0.9 points, the two views come to agree (results/fused.md).")] = 0.0,
    temperature: Annotated[float, typer.Option("--temperature", help="InfoNCE temperature: cosine similarity / temperature (0.05 = sentence-transformers' scale 20).")] = 0.05,
    ict_queries: Annotated[int, typer.Option("--ict-queries", help="Inverse-cloze queries drawn from --ict CORPUS.")] = 1000,
    max_queries: Annotated[Optional[int], typer.Option("--max-queries", help="Train on at most N queries (after the seeded shuffle). Default: all.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the shuffle, dropout and the inverse-cloze draw.")] = 0,
    device: DeviceOpt = "auto",
    precision: Annotated[str, typer.Option("--dtype", help="auto, float32 or bfloat16: the dtype the model's forward and backward are autocast to (weights, optimiser state and loss stay float32). auto: bfloat16 on CUDA and on CPUs with AMX or AVX-512 BF16, else float32 ($LATECHUNK_CPU_DTYPE=float32 or bfloat16 sets the CPU's, as for embed). Recorded in the model folder's latechunk_train.json.")] = "auto",
    old_precision: Annotated[Optional[str], typer.Option("--precision", hidden=True, help="The old name of --dtype (embed's --precision is the index's storage).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
    trust_remote_code: TrustRemoteCodeOpt = False,
    checkpoint_every: Annotated[int, typer.Option("--checkpoint-every", min=0, help="Write the run's state (weights, optimiser, schedule, data order, random generators) to OUT/.checkpoint every N steps and at each epoch's end, replacing the last; 0: never. Removed when the run ends.")] = 50,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run whose checkpoint is in --out (give the same options): it ends with the model an uninterrupted run makes.")] = False,
) -> None:
    """Fine-tune a model for late chunking: queries pulled toward the late-pooled vector of the chunk holding
    their answer (InfoNCE against in-batch and in-sequence negatives; arXiv:2409.04701, arXiv:2505.24782).

    Example: latechunk train --dataset xquad --out models/minilm-late --strategy fixed:size=64 --window 256, then
    latechunk compare --dataset chroma --model models/minilm-late ...

    A run that is killed continues with the same command and --resume (from its last checkpoint).
    """
    from latechunk.train import TrainConfig
    from latechunk.train import train as run_train

    try:
        config = TrainConfig(out=str(out), dataset=dataset, ict=tuple(ict) if ict else None, model=model,
                             strategy=strategy, macro_window=macro_window, window_overlap=macro_window_overlap,
                             epochs=epochs, lr=lr, batch_size=batch_size, naive_weight=naive_weight,
                             fused_weight=fused_weight, temperature=temperature, ict_queries=ict_queries, max_queries=max_queries, seed=seed,
                             device=device, precision=old_precision or precision,
                             trust_remote_code=trust_remote_code)
        result = run_train(config, progress=not quiet, log=lambda m: typer.echo(m, err=True),
                           checkpoint_every=checkpoint_every, resume=resume)
    except (ValueError, TypeError, FileNotFoundError) as err:
        _fail(str(err))
    typer.echo(f"model: {result.out} ({result.n_examples} queries x {config.epochs} epochs, {result.steps} steps, "
               f"{result.seconds:.1f} s); use it with --model {result.out}")


@app.command()
def export(
    out: Annotated[Path, typer.Argument(metavar="DIR", help="A folder written by `latechunk embed`.")],
    to: Annotated[str, typer.Option("--to", "-t", help="lancedb:PATH, qdrant:PATH or chroma:PATH (a local folder; "
                                    "the store's embedded/local client).")],
    collection: Annotated[str, typer.Option("--collection", "-c", help="Table (LanceDB) or collection name, the same rule for every store (Chroma's, the strictest): 3-512 characters of letters, digits, '.', '_', '-', starting and ending with a letter or digit.")] = "latechunk",
    batch_size: Annotated[int, typer.Option("--batch-size", help="Rows read and written per batch.")] = 1024,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a collection of that name that already holds rows.")] = False,
    sync: Annotated[bool, typer.Option("--sync", help="Qdrant, Chroma: bring the collection up to date with DIR in place, matching rows by chunk id: add the chunks it lacks, rewrite those whose fields changed (url, title, metadata), renumber those that only moved (new vector_id/source, vectors not sent again), delete those DIR lacks (last), leave the rest. For a folder rebuilt with `embed --reuse`. Run it again to finish a killed sync or export.")] = False,
    hnsw_ef: Annotated[Optional[int], typer.Option("--hnsw-ef", min=1, help="Chroma only: HNSW ef_search, candidates per query (default: the row count, clamped to 128-1024).")] = None,
    hnsw_m: Annotated[Optional[int], typer.Option("--hnsw-m", min=1, help="Chroma only: HNSW max_neighbors, links per vector (default: 32; Chroma's own: 16).")] = None,
    hnsw_ef_construction: Annotated[Optional[int], typer.Option("--hnsw-ef-construction", min=1, help="Chroma only: HNSW ef_construction (default: 256; Chroma's own: 100).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Export an output folder's vectors and chunk records to LanceDB, Qdrant or Chroma (shard by shard).

    A row's id is its chunk id (a UUID of the model and settings, the document's id and text hash, and the chunk's
    spans: the same chunk gets the same id in every rebuilt folder), with its vector id (row of chunks.parquet),
    doc id, char and token spans, heading path, strategy, text and the sha256 of manifest.json; cosine distance for
    normalised vectors, inner product for --no-normalize ones. Chroma's HNSW index gets settings sized to the
    collection (--hnsw-ef, --hnsw-m, --hnsw-ef-construction change them).
    Query the store with vectors made as the run's: its model with its query prompt, normalised
    (`latechunk.Index.load(DIR).encoder.encode_query(queries)`), cut to --truncate-dim when the run set it.
    An export that fails drops what it made; a killed one leaves a collection the next export names incomplete.
    Example: latechunk export out/chroma --to qdrant:out/qdrant --collection chroma_eval

    Daily update: latechunk embed CORPUS --out new --reuse old && latechunk export new --to qdrant:store --sync
    """
    from latechunk.export import export_folder

    given = {"ef_search": hnsw_ef, "max_neighbors": hnsw_m, "ef_construction": hnsw_ef_construction}
    hnsw = {k: v for k, v in given.items() if v is not None} or None
    if hnsw and not to.strip().lower().startswith("chroma:"):
        _fail(f"--hnsw-ef, --hnsw-m and --hnsw-ef-construction set Chroma's HNSW index, not {to!r}'s (LanceDB and "
              "Qdrant's local mode search exactly)")
    try:
        res = export_folder(out, to, collection=collection, batch_size=batch_size, overwrite=overwrite,
                            progress=not quiet, hnsw=hnsw, sync=sync)
    except (ValueError, ImportError) as err:
        _fail(str(err))
    if res.sync is not None:  # synced into a collection that was there
        c = res.sync
        typer.echo(f"synced {res.store}:{res.path} collection {res.collection!r} with {out}: {c['added']:,} added, "
                   f"{c['rewritten']:,} rewritten, {c['renumbered']:,} renumbered, {c['deleted']:,} deleted, "
                   f"{c['unchanged']:,} unchanged "
                   f"({res.rows:,} vectors now; manifest sha256 {res.manifest_sha256[:12]}"
                   + ("" if not res.hnsw else ", HNSW " + " ".join(f"{k}={res.hnsw.get(k)}" for k in
                                                                  ("max_neighbors", "ef_construction", "ef_search")))
                   + f", {res.seconds:.1f} s)")
        return
    hnsw_note = "" if not res.hnsw else ", HNSW " + " ".join(
        f"{k}={res.hnsw[k]}" for k in ("max_neighbors", "ef_construction", "ef_search"))
    typer.echo(f"exported {res.rows} vectors ({res.dim}-dim, {res.distance}) from {out} to {res.store}:{res.path} "
               f"{'table' if res.store == 'lancedb' else 'collection'} {res.collection!r} "
               f"(manifest sha256 {res.manifest_sha256[:12]}{hnsw_note}, {res.seconds:.1f} s)")


@app.command()
def agree(
    inputs: Annotated[list[Path], typer.Argument(metavar="INPUT", help=".md/.txt, source code, .html files, folders, .jsonl, .parquet or .arrow (id/text), Hugging Face save_to_disk folders.")],
    strategies: Annotated[Optional[list[str]], typer.Option("--strategies", "-s", help="Two or more SPECs, in one value split on spaces or repeated (default: \"heading semantic\"). Every pair is compared.")] = None,
    tolerance: Annotated[Optional[int], typer.Option("--tolerance", help="Tokens: two cuts at most this far apart are one cut (430 and 431: the same boundary named from either side); whitespace between two cuts never counts. Default: 2.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object (documents, cuts, matched pairs, residuals with their text, totals).")] = False,
    html_dir: Annotated[Optional[Path], typer.Option("--html", help="Write an HTML view here: index.html and one page per document, each strategy's cuts in its own colour, residuals highlighted.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Write --html into a folder that is not empty.")] = False,
    model: ModelOpt = None,
    device: DeviceOpt = "auto",
    sentence_workers: SentenceWorkersOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    trust_remote_code: TrustRemoteCodeOpt = False,
) -> None:
    """Where strategies cut alike: each one's cuts, the matched pairs and the residuals, per document and in total.

    A cut is the boundary between two consecutive chunks. The cuts of two strategies are matched one to one,
    greedy by distance, within --tolerance tokens; a cut left over (a residual) is printed with the text around
    it. All strategies come from one late pass (`semantic` pools its sentence vectors from it).

    Example: latechunk agree policy.md --strategies "heading semantic" --html agree-view
    """
    from latechunk.agree import DEFAULT_TOLERANCE, run_agree, summarize, write_html
    from latechunk.io import iter_inputs, missing_inputs_message, require_documents

    specs = [s for v in (strategies or ["heading semantic"]) for s in v.split()]
    tol = DEFAULT_TOLERANCE if tolerance is None else tolerance
    try:
        if tol < 0:
            raise ValueError(f"--tolerance must be >= 0 tokens, got {tol}")
        if len(specs) < 2:
            raise ValueError(f"--strategies needs two or more SPECs to compare, got {specs}")
        from latechunk.config import PipelineConfig

        PipelineConfig(strategies=tuple(specs))  # an unknown or repeated SPEC fails before the model loads
        missing = [str(p) for p in inputs if not p.exists()]
        if missing:
            raise ValueError(missing_inputs_message(missing))
        if html_dir is not None and html_dir.exists():
            if not html_dir.is_dir():
                raise ValueError(f"--html {html_dir} exists and is not a folder")
            if any(html_dir.iterdir()) and not force:
                raise ValueError(f"--html folder {html_dir} is not empty; pass --force to write into it")
        require_documents(inputs)
        from latechunk.encoder import Encoder

        encoder = Encoder(model, device=device, trust_remote_code=trust_remote_code)
        run = run_agree(iter_inputs(inputs), encoder, specs, tol, sentence_workers=_sentence_workers(sentence_workers),
                        progress=not quiet and not as_json)
    except (ValueError, OSError) as err:
        _fail(str(err))
    for s in run.skipped:
        typer.secho(skipped_line(s.doc_id, s.reason, s.source), fg=typer.colors.YELLOW, err=True)
    if not run.documents:
        _fail(f"no document was chunked from {', '.join(str(p) for p in inputs)} (the reasons are above)", code=1)
    if html_dir is not None:
        written = write_html(run, html_dir)
        typer.echo(f"HTML view: {written[0]} ({len(written) - 1} document pages)", err=True)
    if as_json:
        typer.echo(json.dumps(run.to_dict(), ensure_ascii=False, indent=2))
        return

    def flat(s: str) -> str:
        return " ".join(s.split())

    lab = run.labels
    for k, d in enumerate(run.documents):
        counts = ", ".join(f"{lab[s]} {len(run.boundaries[s][k])} chunks" for s in run.strategies)
        typer.secho(f"{visible(d.doc_id)}: {counts}", bold=True)
        for s in run.strategies:
            b = run.boundaries[s][k]
            cuts = [str(int(b.token_spans[i + 1, 0])) for i in range(len(b) - 1)]
            typer.echo(f"  cuts {lab[s]}: {' '.join(cuts) or '(none)'}")
        for ags in run.agreements.values():
            ag = ags[k]
            pairs = " ".join(f"{m.a.token}={m.b.token}" if m.distance == 0 else f"{m.a.token}~{m.b.token}"
                             for m in ag.matched)
            typer.echo(f"  {ag.a} vs {ag.b}: {len(ag.matched)} matched ({ag.exact} exact) {pairs}; residual "
                       f"{ag.a} {len(ag.residual_a)}, {ag.b} {len(ag.residual_b)}")
            for r in (*ag.residual_a, *ag.residual_b):
                who, other = (ag.a, ag.b) if r.side == "a" else (ag.b, ag.a)
                near = "no cut" if r.nearest is None else f"nearest cut {r.nearest} tokens away"
                typer.echo(f"    residual {who} at token {r.cut.label()} (char {r.cut.char_end}; {other}: {near}): "
                           f"…{flat(r.before)} ⟂ {flat(r.after)}…")
    typer.secho(f"total ({len(run.documents)} documents, tolerance {run.tolerance} tokens)", bold=True)
    for (a, b), ags in run.agreements.items():
        t = summarize(ags)
        typer.echo(f"  {lab[a]} vs {lab[b]}: chunks {t['chunks_a']} / {t['chunks_b']}, cuts {t['cuts_a']} / "
                   f"{t['cuts_b']}, matched {t['matched']} ({t['exact']} exact), residual {lab[a]} "
                   f"{t['residual_a']}, {lab[b]} {t['residual_b']}")


def exit_at_once(code: int) -> None:
    """End the process after Ctrl-C without the interpreter's teardown: a trial saw the Ctrl-C message at once and
    the process exit ~2.5 s later under load. What ran then was no thread join or executor shutdown (the
    pipeline's threads are daemons, the sentence workers' pool shuts down without waiting) but CPython's
    finalisation: a full garbage collection and the freeing of every module (torch, transformers, the loaded
    model), ~0.5 s idle and seconds on a loaded machine. What the run keeps is on disk by now (a shard is renamed
    into place when complete; the exception has closed every file on its way up), so this runs the ``atexit``
    callbacks (the sentence workers' pipes are closed and they end, logging is flushed), flushes stdout and stderr,
    and ends the process with ``os._exit(code)``, skipping the rest.

    Args:
        code: The exit status (130 after Ctrl-C).
    """
    import atexit

    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()  # what the interpreter would run first, in the same order
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe (`| head`) has nothing more to take
            stream.flush()
    os._exit(code)


def _option_value(args: list[str], *names: str) -> str | None:
    """The value of option ``names`` in a command line (``--out X`` or ``--out=X``; the last one wins), or None."""
    value = None
    for i, a in enumerate(args):
        for name in names:
            if a == name and i + 1 < len(args):
                value = args[i + 1]
            elif a.startswith(name + "="):
                value = a[len(name) + 1:]
    return value


def _kept_shards(out: Path) -> str:
    """What an interrupted embed kept in ``out``: its complete shards from shard 0 on (sizes checked, hashes not:
    this runs after Ctrl-C), as ``"3 complete shard(s): the first 1,204 input items, 5,321 chunks"``; ``""`` when
    none is complete or the folder cannot be read."""
    try:
        from latechunk.ingest.shards import scan_shards

        records = scan_shards(out, verify_hashes=False)[0]
    except (OSError, ValueError):
        return ""
    if not records:
        return ""
    return (f"{len(records):,} complete shard(s): the first {int(records[-1]['inputs'][1]):,} input items, "
            f"{sum(int(r.get('rows', 0)) for r in records):,} chunks")


_DEFAULT_FORMATWARNING = warnings.formatwarning


def format_warning(message, category, filename, lineno, line=None) -> str:
    """``warnings.formatwarning`` for the console script: latechunk's own warnings as ``warning: MESSAGE`` (no
    source path or code line: they are meant for the user, not a developer); other libraries' as Python prints
    them."""
    package = str(Path(__file__).resolve().parents[1])  # latechunk/, this module being latechunk/cli/app.py
    if str(Path(filename).resolve()).startswith(package):
        return f"warning: {message}\n"
    return _DEFAULT_FORMATWARNING(message, category, filename, lineno, line)


def interrupted_message(args: list[str]) -> str:
    """What the console script says after Ctrl-C, for the command line ``args`` (without the program name): what
    was kept and the exact command that goes on, built here only, so a fresh run and a ``--resume`` run stopped in
    the same state get the same message (a trial got "nothing is kept: --force" from one and "complete shards are
    kept: --resume" from the other).

    ``embed``: its complete shards (:func:`_kept_shards`) and the command with ``--resume`` (and without
    ``--force``), which also starts over when nothing was kept; ``embed --append``: the folder as its last manifest
    left it, and the same command again; a finished folder (a ``--force`` run stopped before it cleared it): the
    same command again; ``train``: its checkpoint and ``--resume``, or without one the command again.

    Args:
        args: The command line after the program name.

    Returns:
        One line, beginning ``interrupted (Ctrl-C)``.
    """
    command = args[0] if args else ""
    out = _option_value(args, "--out", "-o")
    if command not in ("embed", "train") or out is None:
        return "interrupted (Ctrl-C)"
    given = shlex.join(["latechunk", *args])
    resumed = shlex.join(["latechunk", *(a for a in args if a not in ("--resume", "--force")), "--resume"])
    if command == "train":
        from latechunk.train import CHECKPOINT_DIR, CHECKPOINT_FILE

        if (Path(out) / CHECKPOINT_DIR / CHECKPOINT_FILE).is_file():
            return (f"interrupted (Ctrl-C); kept: the run's last checkpoint in {Path(out) / CHECKPOINT_DIR} (every "
                    f"--checkpoint-every steps and at each epoch's end); to continue from it: {resumed}")
        again = shlex.join(["latechunk", *(a for a in args if a != "--resume")])
        return f"interrupted (Ctrl-C); nothing is kept (no checkpoint was written yet); to start again: {again}"
    if "--append" in args:
        return (f"interrupted (Ctrl-C); kept: {out} as its last finished run or append left it (the partial shards "
                f"of this append are dropped when it runs again); to append: {given}")
    if (Path(out) / "manifest.json").is_file():
        return f"interrupted (Ctrl-C); kept: {out} as it was, a finished run (its manifest.json); to run again: {given}"
    kept = _kept_shards(Path(out))
    if kept:
        return f"interrupted (Ctrl-C); kept in {out}: {kept}; to continue: {resumed}"
    shard = _option_value(args, "--group-tokens") or f"{DEFAULT_GROUP_TOKENS:,}"
    return (f"interrupted (Ctrl-C); nothing is kept in {out} (no shard was complete yet: a shard holds about "
            f"{shard} tokens of documents); to start again: {resumed}")
