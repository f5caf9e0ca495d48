"""``latechunk verify``'s source checks: where the inputs the manifest lists are now (:func:`_places`, ``--inputs``),
which roots to read once each and how many items they should hold (:func:`_runs_of_roots`), and the inputs read
again: text hashes, chunk texts as exact slices, titles, headers, urls and citations as the source gives them now.

Part of :mod:`latechunk.verify`; tests: ``tests/verify/test_verify.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from latechunk.ingest.files import sha256_text
from latechunk.output import OutputFolder, source_metadata
from latechunk.verify.problems import _Problems
from latechunk.verify.shards import _RowReader


def _source_roots(out: Path, manifest: dict, inputs: Sequence[os.PathLike] | None) -> list[Path]:
    if inputs:
        return [Path(p) for p in inputs]
    roots = []
    given = manifest.get("inputs", [])
    for i, rel in enumerate(manifest.get("inputs_from_out", [])):
        cand = out / rel
        if cand.exists():
            roots.append(cand)
        elif i < len(given):
            roots.append(Path(given[i]))
        else:
            roots.append(cand)
    if not roots:
        roots = [Path(p) for p in given]
    return roots


def _root_key(root: Path) -> str:
    return os.path.normcase(os.path.abspath(os.path.realpath(root)))


def _places(folder: Path, manifest: dict, inputs: Sequence[os.PathLike] | None
            ) -> tuple[list[Path], list[str], str | None]:
    """Where each input the manifest lists is now, the identity of each (its recorded place), or a problem.

    Without ``inputs``: the recorded places (:func:`_source_roots`). With ``inputs`` (the sources moved): one path
    per listed input in order, or one per *distinct* listed input (in order of first appearance; an input appended
    again is listed again), in either case leaving out the inputs inside the output folder (``appended/*.jsonl`` of
    ``Index.add``, which move with it), or one path per listed input, those included.

    Returns:
        ``(places, keys, problem)``: one place and one identity key per listed input; ``problem`` (then
        ``places`` is the given paths) when the number of ``inputs`` fits none of these.
    """
    recorded = [folder / rel for rel in manifest.get("inputs_from_out") or []] or \
        [Path(p) for p in manifest.get("inputs", [])]
    keys = [_root_key(r) for r in recorded]
    now = _source_roots(folder, manifest, None)
    if not inputs:
        return now, keys, None
    given = [Path(p) for p in inputs]
    if len(keys) != len(now):  # an older manifest without inputs_from_out: the given paths as they are
        return given, [_root_key(p) for p in given], None
    inside = _root_key(folder) + os.sep
    outer = [i for i, k in enumerate(keys) if not k.startswith(inside)]
    distinct = list(dict.fromkeys(keys[i] for i in outer))
    places = list(now)
    if len(given) in (len(keys), len(outer)):  # one place per listing: the places given say which are one input
        for i, p in zip(range(len(keys)) if len(given) == len(keys) else outer, given):
            places[i] = p
        return places, [_root_key(p) for p in places], None
    if len(given) == len(distinct):
        to = dict(zip(distinct, given))
        for i in outer:
            places[i] = to[keys[i]]
        return places, keys, None
    typed = manifest.get("inputs") or []
    names = ", ".join(str(typed[i]) if i < len(typed) else str(recorded[i]) for i in outer)
    return given, [_root_key(p) for p in given], (
        f"--inputs gave {len(given)} path(s) but the manifest lists {len(outer)} input(s) outside the folder "
        f"({names}, as given when embedded): give one per listed input, in order (the same path again for an "
        f"input appended again)" + (f", or one per distinct input ({len(distinct)})" if len(distinct) != len(outer)
                                    else "")
        + (f", or all {len(keys)} with the folder's own appended files" if len(keys) != len(outer) else ""))


def _runs_of_roots(manifest: dict, places: list[Path], keys: list[str] | None = None, home: Path | None = None
                   ) -> tuple[list[Path], int | None]:
    """The roots to read once each, and the item count they should hold now.

    An ``--append`` of an input the folder already lists (``embed DIR --append`` after DIR gained files) lists that
    root twice: the first run consumed what DIR held then, the append what it holds now (the documents already in
    the index skipped as such). Reading DIR twice would count every item twice, so each root is read once (first
    place kept) and a run whose every root a later run lists again is *superseded*: its items are no longer
    counted.

    Args:
        manifest: The folder's manifest (``inputs``, ``appends`` with their ``inputs`` and ``items``,
            ``counts.documents_in``).
        places: Where each listed input is now (:func:`_places`).
        keys: The identity of each listed input (default: its place's).
        home: The output folder: its own ``appended/*.jsonl`` never count as inside another root (the reader
            of a folder holding it does not walk an output folder).

    Returns:
        ``(roots, expected)``; ``expected`` is ``counts.documents_in`` when no root repeats, less the items of the
        superseded runs when some do, and ``None`` (no count to compare; every item is still checked) when a
        repeated root belongs to a run that is not wholly superseded (a run of ``a`` and ``b`` followed by an
        append of ``a`` alone: how many of the first run's items came from ``a`` is not recorded), when one
        root lies inside another (a file of a folder embedded before, appended on its own: the folder's items
        now include it), or when the manifest lacks the records.
    """
    total = manifest.get("counts", {}).get("documents_in")
    appends = manifest.get("appends") or []
    keys = [_root_key(p) for p in places] if keys is None else keys
    first: dict[str, Path] = {}
    for k, p in zip(keys, places):
        first.setdefault(k, p)  # each input once, at its first place
    roots = list(first.values())
    real = [_root_key(r) for r in roots]
    inside = _root_key(home) + os.sep if home is not None else None
    real = [k for k in real if inside is None or not k.startswith(inside)]
    if any(b.startswith(a + os.sep) for a in real for b in real):
        return roots, None
    if len(first) == len(keys):
        return roots, total
    sizes = [len(a.get("inputs") or []) for a in appends]
    if sum(sizes) > len(keys) or total is None:
        return roots, None  # an older manifest: no count
    runs = [len(keys) - sum(sizes)] + sizes
    try:
        consumed = [(appends[0]["items"][0] if appends else total)] + [a["items"][1] - a["items"][0] for a in appends]
    except (KeyError, IndexError, TypeError):  # an append entry without its item range
        return roots, None
    bounds = [sum(runs[:r]) for r in range(len(runs) + 1)]
    expected = total
    for r in range(len(runs)):
        mine = keys[bounds[r]:bounds[r + 1]]
        later = set(keys[bounds[r + 1]:])
        if mine and all(k in later for k in mine):
            expected -= consumed[r]
        elif any(k in later for k in mine):
            return roots, None  # part of this run is read again later, part not: its share is not recorded
    return roots, expected


def _check_sources(folder: OutputFolder, manifest: dict, documents: list, skipped: list, inputs, n_rows,
                   P: _Problems) -> None:
    from latechunk.io import is_not_read
    from latechunk.pipeline import is_pipeline_skip
    from latechunk.types import Skipped

    places, keys, problem = _places(folder.path, manifest, inputs)
    if problem:
        P.add("source", problem)
        return
    roots, expected = _runs_of_roots(manifest, places, keys, folder.path)
    missing = [str(r) for r in roots if not r.exists()]
    if missing:
        P.add("source", f"source input(s) not found: {', '.join(missing)} (give their current place with --inputs)")
        return
    by_id = {}
    for i, d in enumerate(documents):
        by_id.setdefault(d["doc_id"], i)
    skipped_ids = {s["doc_id"] for s in skipped}
    skip_reasons: dict[str, list[str]] = {}
    for s_ in skipped:
        skip_reasons.setdefault(s_["doc_id"], []).append(str(s_.get("reason", "")))
    # an item skipped at embedding under an id a later item was embedded with (an empty record, then one with
    # text): skipped then, skipped now, nothing changed
    skipped_as = {(s["doc_id"], s.get("source", ""), s.get("reason", "")) for s in skipped}
    reader = _RowReader(folder, ["doc_id", "chunk_index", "char_start", "char_end", "text", "heading_path", "title",
                                 "title_from", "header", "url", "metadata"]) if n_rows is not None else None
    # each document's first row in chunks.parquet (rows are in manifest order); sources read once per root come
    # in the root's order, which an append of the same root interleaves with the first run's documents
    first_row = np.concatenate([[0], np.cumsum([int(d["chunks"]) for d in documents])]).astype(np.int64)
    seen: set[str] = set()
    n_items = 0
    now_skipped: dict[str, str] = {}  # embedded ids whose source reads as skipped, as it was recorded once
    from latechunk.config import RecordFields

    fields = RecordFields.from_dict((manifest.get("settings") or {}).get("record_fields") or {})
    for item in _iter_sources(roots, P, fields):
        if isinstance(item, Skipped) and item.doc_id not in skipped_ids and is_not_read(item.reason):
            continue  # never opened (an output folder or .docx added since): nothing embedded depends on it
        n_items += 1
        if isinstance(item, Skipped):
            if (item.doc_id in by_id and item.doc_id not in seen and not item.reason.startswith("duplicate doc_id")
                    and (item.doc_id, item.source, item.reason) not in skipped_as):
                P.add("source", f"{item.doc_id!r} was embedded but its source is now skipped: {item.reason}")
                seen.add(item.doc_id)
            elif item.doc_id in by_id and item.doc_id not in seen and not item.reason.startswith("duplicate doc_id"):
                # skipped so once (an empty record before one with text under its id; or a later --append that
                # found the embedded document's source emptied): a problem only if no document follows under the id
                now_skipped.setdefault(item.doc_id, item.reason)
            elif item.doc_id not in skipped_ids and item.doc_id not in by_id:
                P.add("source", f"source item {item.doc_id!r} ({item.source}) is not in the manifest")
            continue
        i = by_id.get(item.doc_id)
        if i is None:
            if item.doc_id not in skipped_ids:
                P.add("source", f"source document {item.doc_id!r} ({item.metadata.get('source', '')}) is not in the manifest "
                                "(added after embedding?)")
            elif read := [r for r in skip_reasons.get(item.doc_id, [])
                          if not r.startswith("duplicate doc_id") and not is_pipeline_skip(r)]:
                # the reader skipped it then (empty, binary, unreadable, a bad record) and it reads as a document
                # now: a change after embedding (a document the pipeline skipped reads as a document now as then)
                P.add("source", f"{item.doc_id!r} was skipped at embedding ({read[0]}) but its source now reads as "
                                "a document: its text is in no vector (an index is append-only: embed into a new "
                                "folder to include it)")
            continue
        seen.add(item.doc_id)
        rec = documents[i]
        same = sha256_text(item.text) == rec.get("sha256")
        if not same:
            P.add("source", f"source of {item.doc_id!r} ({rec.get('source', '')}) changed after embedding: "
                            f"sha256 {sha256_text(item.text)[:12]}… != recorded {str(rec.get('sha256'))[:12]}…")
        if reader is None:
            continue
        rows = reader.take_at(int(first_row[i]), int(rec["chunks"]))
        if same and rows is not None:
            for cs, ce, text, ci in zip(rows["char_start"].to_pylist(), rows["char_end"].to_pylist(),
                                        rows["text"].to_pylist(), rows["chunk_index"].to_pylist()):
                if item.text[cs:ce] != text:
                    P.add("rows", f"chunk {ci} of {item.doc_id!r} is not the exact slice text[{cs}:{ce}] of its source")
                    break
            _check_citations(item, rows, P)
    for d in documents:
        if d["doc_id"] in seen:
            continue
        if d["doc_id"] in now_skipped:
            P.add("source", f"{d['doc_id']!r} was embedded but its source is now skipped: {now_skipped[d['doc_id']]}")
        else:
            P.add("source", f"source of {d['doc_id']!r} ({d.get('source', '')}) is gone")
    if expected is not None and n_items != expected:
        P.add("source", f"the inputs now hold {n_items} items but the manifest accounts for {expected}")


def _check_citations(doc, rows, P: _Problems) -> None:
    """The rows' title, title_from, header, url and metadata against the source document read again (rows of a
    folder written before these columns hold None there and are not checked)."""
    from latechunk.titles import contextual_header

    want = source_metadata(doc)
    for ci, hp, title, origin, header, url, meta in zip(*(rows[c].to_pylist() for c in (
            "chunk_index", "heading_path", "title", "title_from", "header", "url", "metadata"))):
        if origin is None:
            continue
        got = {"title": title, "title_from": origin, "url": url, "header": header, "metadata": meta}
        exp = {**{k: want[k] for k in ("title", "title_from", "url", "metadata")},
               "header": contextual_header(want["title"], hp or [])}
        bad = [f"{k} {got[k]!r} (source gives {exp[k]!r})" for k in got if got[k] != exp[k]]
        if bad:
            P.add("rows", f"chunk {ci} of {doc.doc_id!r}: " + ", ".join(bad))
            return


def _iter_sources(roots, P: _Problems, fields=None) -> Iterator:
    from latechunk.io import iter_inputs

    try:
        yield from iter_inputs(roots, fields)
    except ValueError as err:
        P.add("source", f"cannot read the sources: {err}")
