"""What the commands print on stderr about a run's inputs: skipped items (one line each, then a count), the notes
of a manifest (parse alarms, unknown tokens, degraded text, ignored front matter, dedup), an append's changed,
emptied and vanished documents, and ``embed --strict``'s exit."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import typer

from latechunk.cli.app import STRICT_EXIT_CODE, _fail
from latechunk.console import visible

#: skipped items printed one per line; the rest are counted (all of them are in the manifest)
_MAX_SKIPPED_SHOWN = 50

def _check_strict(skipped: list[dict], where: Path) -> None:
    """``embed --strict``: exit :data:`STRICT_EXIT_CODE` when ``skipped`` (skip records) holds a document that was
    read and not embedded; entries never read as documents (:func:`latechunk.io.is_not_read`) do not count."""
    from latechunk.io import is_not_read

    n = sum(1 for s in skipped if not is_not_read(str(s.get("reason", ""))))
    if n:
        _fail(f"--strict: {n:,} input document(s) were skipped (each is listed above and in {where}'s skipped list, "
              "with its reason); the output is written without them", code=STRICT_EXIT_CODE)

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
