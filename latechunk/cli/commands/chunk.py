"""``latechunk chunk``: cut documents into chunks and write one JSON record per chunk (JSONL), streamed; nothing is
embedded (:func:`latechunk.pipeline.chunk_documents`, or for ``semantic`` :func:`latechunk.pipeline.iter_embed`)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from latechunk.cli.app import _fail
from latechunk.cli.messages import _MAX_SKIPPED_SHOWN, _print_unshown, skipped_line
from latechunk.cli.options import (
    ChunkDeviceOpt,
    ChunkEncodingErrorsOpt,
    ChunkIdFieldOpt,
    ChunkMetadataFieldsOpt,
    ChunkModelOpt,
    TextFieldOpt,
    TitleFieldOpt,
    TrustRemoteCodeOpt,
    _metadata_fields,
)
from latechunk.config import DEFAULT_MODE, DEFAULT_STRATEGY
from latechunk.console import plural, visible

#: the examples under the command's help (the command's epilog, registered by latechunk.cli)
EPILOG = (
    '\b\nExamples:\n'
    '  latechunk chunk docs/ --strategy heading --out chunks.jsonl\n'
    '  latechunk chunk README.md docs/guides/ notes.txt -s fixed:size=128,overlap=16 | jq -r .text\n'
)


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
    """Cut documents into chunk records, one JSON line per chunk (JSONL: doc_id, chunk_index, char_start,
    char_end, token_start, token_end, text, heading_path, ...), with the tokenizer only (semantic runs the
    model); files and folders in one call cost one start-up. See docs/concepts/strategies.md."""
    try:
        fields, strat, source = _prepare(inputs, strategy, model, out, device, force, trust_remote_code,
                                         id=id_field, text=text_field, title=title_field,
                                         metadata=None if metadata_fields is None else _metadata_fields(metadata_fields),
                                         encoding_errors=encoding_errors)
    except (ValueError, OSError) as err:
        _fail(str(err))
    run = _ChunkRun(quiet)
    try:
        run.write(inputs, fields, strat, source, out)
    except BrokenPipeError:  # stdout closed early (`| head`): stop quietly, no traceback (Python's docs recipe:
        # point stdout at devnull so that the interpreter's final flush does not fail again)
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(0) from None
    _print_unshown(run.unshown, None)
    if run.documents == 0:  # every input had a document, but none was chunked (see the reasons above)
        _fail(f"no document was chunked from {', '.join(str(p) for p in inputs)} (the reasons are above)", code=1)
    typer.echo(f"{plural(run.chunks, 'chunk')} from {plural(run.documents, 'document')} ({run.skipped} skipped) "
               f"-> {out or 'stdout'}", err=True)


def _prepare(inputs: list[Path], strategy: str, model: str | None, out: Path | None, device: str, force: bool,
             trust_remote_code: bool, **fields):
    """``chunk``'s settings checked before any work: the record fields (only those given; the others are
    :class:`~latechunk.types.RecordFields`' defaults), the strategy, the inputs, the output file (or standard
    output's redirection), and the encoder (``semantic``) or the model's document tokenizer.

    Returns:
        ``(fields, strategy, encoder or tokenizer)``.

    Raises:
        ValueError: naming what is wrong.
    """
    from latechunk.config import RecordFields, _nested_input
    from latechunk.io import missing_inputs_message, require_documents
    from latechunk.strategies import get_strategy

    fields = RecordFields(**{k: v for k, v in fields.items() if v is not None})
    strat = get_strategy(strategy)
    missing = [str(p) for p in inputs if not p.exists()]
    if missing:
        raise ValueError(missing_inputs_message(missing))
    nested = _nested_input(tuple(inputs))  # embed's check: an input given twice, or inside an input folder
    if nested:
        raise ValueError(nested)
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

        return fields, strat, Encoder(model, device=device, trust_remote_code=trust_remote_code)
    return fields, strat, _document_tokenizer(model, trust_remote_code)


def _document_tokenizer(model: str | None, trust_remote_code: bool):
    """The tokenizer embed uses: the model's tokenizer with its document prompt (a model that needs its own code
    without ``--trust-remote-code`` is refused, naming the flag)."""
    from latechunk.models import (
        DEFAULT_MODEL,
        ModelSettings,
        needs_remote_code,
        remote_code_message,
        resolve_model_path,
    )
    from latechunk.tokenize import DocumentTokenizer

    path = resolve_model_path(model)
    try:
        return DocumentTokenizer.from_pretrained(path, prefix=ModelSettings.read(path).document_prompt,
                                                 trust_remote_code=trust_remote_code)
    except ValueError as err:
        if trust_remote_code or not needs_remote_code(err):
            raise
        raise ValueError(remote_code_message(model or DEFAULT_MODEL)) from err


class _ChunkRun:
    """One ``chunk`` run's output: the chunk records written (to ``--out`` through a temporary file renamed at the
    end, else to stdout), the counts, each skipped item on stderr (the first :data:`_MAX_SKIPPED_SHOWN`, the rest
    counted by kind at the end) and the progress bar."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.chunks = self.documents = self.skipped = 0
        self.unshown: list[dict] = []
        self.bar: _ChunkBar | None = None
        self.fh = None

    def _counted(self) -> None:  # an input item done (chunked or skipped)
        if self.bar is not None:
            self.bar.show(self.documents, self.skipped)

    def skip(self, doc_id: str, reason: str, source: str | None = None) -> None:
        """An item not chunked, said as embed says it."""
        self.skipped += 1
        if self.skipped <= _MAX_SKIPPED_SHOWN:
            typer.secho(skipped_line(doc_id, reason, source), fg="yellow", err=True)
        else:  # counted by kind at the end, as embed prints them
            self.unshown.append({"doc_id": doc_id, "reason": reason})
        self._counted()

    def emit(self, doc, b, spec: str) -> None:
        """A document's chunk records, one JSON line each (metadata as its object, as search --json prints it)."""
        from latechunk.output import chunk_rows, metadata_value

        if doc.metadata.get("front_matter_problem"):  # as embed says it (the document is still chunked)
            typer.echo(visible(f"note: {doc.doc_id}: {doc.metadata['front_matter_problem']}"), err=True)
        if doc.metadata.get("degraded") and not self.quiet:  # read with U+FFFD (--encoding-errors replace)
            typer.echo(visible(f"note: {doc.doc_id}: {doc.metadata['degraded']}"), err=True)
        for row in chunk_rows(doc, b, spec):
            row["metadata"] = metadata_value(row["metadata"])
            self.fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        self.documents += 1
        self.chunks += len(b)
        self._counted()

    def write(self, inputs: list[Path], fields, strat, source, out: Path | None) -> None:
        """Chunk every input and write the records; ``out`` appears only when the run is complete and chunked
        a document (an interrupted or failed run leaves no file, and an existing one as it was)."""
        with contextlib.ExitStack() as stack:
            # written to a temporary name and renamed at the end: a failed run never clobbers an existing file
            tmp = out.with_name(out.name + ".tmp") if out else None
            if tmp is not None:  # Ctrl-C or an error: the temporary file goes too (after it is closed, below)
                stack.push(_remove_on_error(tmp))
            self.fh = stack.enter_context(open(tmp, "w", encoding="utf-8")) if tmp else sys.stdout
            self.bar = _ChunkBar(inputs, fields, self.quiet)
            stack.callback(self.bar.close)
            self._chunk(inputs, fields, strat, source)
        if tmp is not None and self.documents == 0:
            tmp.unlink(missing_ok=True)
        elif tmp is not None:
            os.replace(tmp, out)

    def _chunk(self, inputs: list[Path], fields, strat, source) -> None:
        from latechunk.io import iter_inputs
        from latechunk.pipeline import Skipped, chunk_documents, iter_embed

        if strat.needs_sentence_vectors:  # streamed per group of documents (late pass, semantic's vectors)
            from latechunk.config import PipelineConfig

            config = PipelineConfig(strategies=(strat,), modes=(DEFAULT_MODE,))
            for g in iter_embed(iter_inputs(inputs, fields), source, config):
                for d, b in zip(g.documents, g.boundaries[strat.spec]):
                    self.emit(d, b, strat.spec)
                for s in g.skipped:
                    self.skip(s.doc_id, s.reason, s.source)
            return

        def documents():
            for d in iter_inputs(inputs, fields):
                if isinstance(d, Skipped):
                    self.skip(d.doc_id, d.reason, d.source)
                else:
                    yield d

        for doc, b, reason in chunk_documents(documents(), strat, source):
            if b is None:
                self.skip(doc.doc_id, reason, (doc.metadata or {}).get("source"))
            else:
                self.emit(doc, b, strat.spec)


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
