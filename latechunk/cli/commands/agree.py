"""``latechunk agree``: where strategies cut alike, from one late pass (:func:`latechunk.agree.run_agree`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from latechunk.cli.app import _fail
from latechunk.cli.messages import skipped_line
from latechunk.cli.options import (
    DeviceOpt,
    ModelOpt,
    SentenceWorkersOpt,
    TrustRemoteCodeOpt,
    _sentence_workers,
)
from latechunk.console import visible

#: latechunk.agree.DEFAULT_TOLERANCE for --help, written here so that the start-up does not import latechunk.agree
#: (tests/cli/ checks they agree)
_TOLERANCE_SHOWN = 2
#: the strategies agree compares when --strategies is not given
DEFAULT_AGREE_STRATEGIES = ("heading", "semantic")
_DEFAULT_SHOWN = " ".join(DEFAULT_AGREE_STRATEGIES)


#: the examples under the command's help (the command's epilog, registered by latechunk.cli)
EPILOG = (
    '\b\nExample:\n'
    '  latechunk agree policy.md --strategies "heading semantic" --html agree-view\n'
)


def agree(
    inputs: Annotated[list[Path], typer.Argument(metavar="INPUT", help=".md/.txt, source code, .html files, folders, .jsonl, .parquet or .arrow (id/text), Hugging Face save_to_disk folders.")],
    strategies: Annotated[Optional[list[str]], typer.Option("--strategies", "-s", help=f"Two or more SPECs, in one value split on spaces or repeated (default: \"{_DEFAULT_SHOWN}\"). Every pair is compared.")] = None,
    tolerance: Annotated[Optional[int], typer.Option("--tolerance", help=f"Tokens: two cuts at most this far apart are one cut (430 and 431: the same boundary named from either side); whitespace between two cuts never counts. Default: {_TOLERANCE_SHOWN}.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object (documents, cuts, matched pairs, residuals with their text, totals).")] = False,
    html_dir: Annotated[Optional[Path], typer.Option("--html", help="Write an HTML view here: index.html and one page per document, each strategy's cuts in its own colour, residuals highlighted.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Write --html into a folder that is not empty.")] = False,
    model: ModelOpt = None,
    device: DeviceOpt = "auto",
    sentence_workers: SentenceWorkersOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    trust_remote_code: TrustRemoteCodeOpt = False,
) -> None:
    """Where strategies cut alike: their cuts, matched pairs and residuals (cuts left over, with their text),
    per document and in total, from one late pass. See docs/how-to/check.md."""
    from latechunk.agree import DEFAULT_TOLERANCE, run_agree, summarize, write_html
    from latechunk.io import iter_inputs, missing_inputs_message, require_documents

    specs = [s for v in (strategies or DEFAULT_AGREE_STRATEGIES) for s in v.split()]
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
