"""Appending to a finished output folder: ``latechunk embed NEW --out DIR --append`` and ``latechunk.Index.add``.

An append embeds new input items with the folder's own settings (``run.json``'s; any difference is refused,
naming it), writes them as new shards after the folder's last one, continuing its input positions and running
digest, and assembles ``index.faiss``, ``chunks.parquet`` and ``manifest.json`` again from every shard
(:func:`~latechunk.ingest.assemble.assemble`, as ``--resume`` does), so the folder reads as one run over the
inputs in order: the first run's, then each append's. A document whose id is already in the folder is not
embedded again but skipped with its reason: ``already in the index (same id and text sha256)`` (kept in the shard
records and counted in the manifest's ``counts.already_indexed``, not listed in its ``skipped``, so that a folder
re-appended in full does not grow its manifest by the corpus each time), or a duplicate id (the folder's documents
and skipped items, as the reader's first-occurrence-wins rule), listed.

What the manifest records of an append: its inputs are appended to ``inputs`` and ``inputs_from_out`` (in order;
``latechunk verify`` re-reads them all, so ``verify --inputs`` takes every input in that order), and ``appends``
lists each one (inputs, input items ``[start, end)``, shards ``[first, end)``, documents embedded and skipped,
when it finished, versions). run.json keeps the first run's settings. Documents given in Python
(:func:`write_documents`) are first written to ``DIR/appended/NNNNN.jsonl`` (``id``/``text``, and a title and url
where the Document's metadata has them), an input like any other, so that ``verify`` can re-read and hash them.

Under ``--dedup`` (a setting of the folder's run, so the append gives it too; :meth:`latechunk.Index.add
<latechunk.api.Index.add>` repeats it from run.json) the new chunks are checked against every chunk already in
the folder (the kept set rebuilt from its shards) and against each other, in input order.

An append that is interrupted leaves the last manifest as the folder's state: the next append (or the same one
again) removes the shards the manifest does not list and carries on. One writer at a time: an append holds the
folder's writer lock (:func:`~latechunk.ingest.folder.writer_lock`), and a second writer fails at once. An append
that embeds no document leaves the folder as it was (no shard; no skipped entries added).

Tests: ``tests/api/test_api.py`` (``Index.add``, ``embed --append``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from latechunk.config import EmbedConfig, ModelConfig, RecordFields
from latechunk.ingest.assemble import ALREADY_INDEXED_REASON, assemble
from latechunk.ingest.files import commit, sha256_text, tmp_path, write_atomic, write_json
from latechunk.ingest.folder import (
    APPENDED_DIR,
    MANIFEST_OWN_KEYS,
    diff_settings,
    manifest_shards,
    writer_lock,
)
from latechunk.io import iter_inputs
from latechunk.output import OutputFolder
from latechunk.provenance import versions
from latechunk.types import Document, Skipped

__all__ = ["APPENDED_DIR", "CHANGED_SOURCE_REASON", "SKIPPED_BEFORE_REASON", "AppendResult", "append", "append_settings_diff", "check_append_options",
           "config_from_settings", "write_documents"]


@dataclass(frozen=True)
class AppendResult:
    """What one append did.

    Attributes:
        manifest: The folder's new manifest (also in ``DIR/manifest.json``).
        documents: The embedded documents' records (``doc_id``, ``chunks``, ``sha256``, ``source``), in input
            order.
        skipped: This append's skipped items (``doc_id``, ``reason``, ``source``), in input order: documents
            already in the folder, and whatever the reader or pipeline skipped.
        chunks: Chunks (= vectors) added.
        added: False when the append embedded no document and left the folder unchanged (``manifest`` is the
            folder's as it was).
    """

    manifest: dict
    documents: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    chunks: int = 0
    added: bool = True


_APPEND_HINT = ("An append takes every setting from the folder's run.json: leave out the options that differ, or "
                "embed into a new folder")


def append_settings_diff(old: Mapping, new: Mapping) -> list[str]:
    """How an append's settings differ from the folder's (``run.json``), beyond what may differ.

    ``inputs_from_out`` may differ (an append has its own inputs), and ``model.name`` where both record the
    same non-empty weight hash (the same model named another way: a folder path instead of its alias).
    A model block that records no ``backend`` ran :class:`~latechunk.config.ModelConfig`'s default (torch: run.json
    records the backend only when it is another, and older folders not at all), so the difference is named with it.
    ``index.renormalize`` is left out: it follows ``normalize`` (:class:`~latechunk.config.EmbedConfig`), which is
    compared (and named) itself.

    Args:
        old: The folder's settings (run.json's ``settings``).
        new: The append's settings (:func:`latechunk.ingest.run_settings`, or :meth:`EmbedConfig.to_dict
            <latechunk.config.EmbedConfig.to_dict>`).

    Returns:
        One line per differing setting (``"strategy was 'fixed:size=256', now 'recursive:max_tokens=256'"``).
    """
    a, b = dict(old), dict(new)
    a.pop("inputs_from_out", None)
    b.pop("inputs_from_out", None)
    ma, mb = dict(a.get("model") or {}), dict(b.get("model") or {})
    if ma.get("sha256") and ma.get("sha256") == mb.get("sha256"):
        mb["name"] = ma.get("name")
    for m in (ma, mb):
        m["backend"] = m.get("backend") or ModelConfig.backend
    a["model"], b["model"] = ma, mb
    for d in (a, b):
        if isinstance(d.get("index"), dict):
            d["index"] = {k: v for k, v in d["index"].items() if k != "renormalize"}
    return diff_settings(a, b)


def _read_settings(out: Path) -> tuple[dict, dict]:
    """A finished folder's manifest and run.json settings, or a ValueError saying why it is not one."""
    if not out.is_dir():
        raise ValueError(f"--append: {out} is not a folder; embed into it first (without --append)")
    folder = OutputFolder(out)
    manifest = folder.read_manifest()
    try:
        settings = folder.read_run().get("settings", {})
    except ValueError as err:
        raise ValueError(f"{out}: {err}; --append needs the folder's run.json") from None
    return manifest, settings


def _check_remote_code(old: Mapping, config: EmbedConfig) -> None:
    """Refuse an append without ``trust_remote_code`` into a folder embedded with it: it is asked for again,
    never taken from run.json (:func:`config_from_settings` leaves it off unless given)."""
    if (old.get("model") or {}).get("trust_remote_code") and not config.model.trust_remote_code:
        raise ValueError(f"{config.out} was embedded with --trust-remote-code (its model runs its own Python code to "
                         "load): pass --trust-remote-code to --append too (in Python: Index.load(..., "
                         "trust_remote_code=True)); it is never taken from run.json")


def _refuse_diff(out: Path, diff: list[str]) -> None:
    """Refuse an append whose settings differ from the folder's run (``diff``: :func:`append_settings_diff`)."""
    if diff:
        raise ValueError(f"--append into {out} with settings that differ from its run (run.json): "
                         + "; ".join(diff) + f". {_APPEND_HINT}")


def check_append_options(config: EmbedConfig, *, force: bool = False, resume: bool = False,
                         world_size: int = 1) -> None:
    """What ``embed --append`` can check before the model loads: the flags, and the settings the options give
    against the folder's run.json (all but the model's facts, which :func:`append` checks once it is loaded).

    The folder's run is read back as its config (:meth:`EmbedConfig.from_dict
    <latechunk.config.EmbedConfig.from_dict>` with ``recorded=True``) and given the append's own: how the model
    runs (device, batch budget, ``compile``, sentence workers, index ``gpu``: never settings), the model's name
    (the same weights may be named by their folder: :func:`append` compares their hash once loaded) and, where
    the append leaves it to the device (None), the dtype (compared once resolved); any other difference is refused.

    Args:
        config: The append's config.
        force: ``--force`` (excludes ``--append``).
        resume: ``--resume`` (excludes ``--append``).
        world_size: Processes of the run (an append runs in one).

    Raises:
        ValueError: naming the conflicting flag, the folder that is not a finished output (or whose run.json
            this version cannot read back), or each setting that differs from the folder's.
    """
    if force or resume:
        raise ValueError("--append excludes --force and --resume: it adds to a finished output folder")
    if world_size > 1:
        raise ValueError(f"--append runs in one process ($WORLD_SIZE is {world_size})")
    _, old = _read_settings(Path(config.out))
    _check_remote_code(old, config)
    recorded = EmbedConfig.from_dict(old, out=config.out, inputs=config.inputs, recorded=True)
    m, replace = config.model, dataclasses.replace
    own = {"name": m.name, "device": m.device, "batch_tokens": m.batch_tokens, "compile": m.compile,
           **({"dtype": None} if m.dtype is None else {})}
    expected = replace(recorded, model=replace(recorded.model, **own),
                       pipeline=replace(recorded.pipeline, sentence_workers=config.pipeline.sentence_workers),
                       index=replace(recorded.index, gpu=config.index.gpu))
    if expected != config:
        _refuse_diff(Path(config.out), append_settings_diff(expected.to_dict(), config.to_dict()))


def config_from_settings(settings: Mapping, inputs: Iterable[str | os.PathLike], out: str | os.PathLike, *,
                         model: str | None = None, device: str = "auto", sentence_workers: int = 0,
                         trust_remote_code: bool = False) -> EmbedConfig:
    """The :class:`~latechunk.config.EmbedConfig` that repeats a folder's run (its ``run.json`` settings) over
    other inputs: what :meth:`latechunk.Index.add <latechunk.api.Index.add>` appends with.

    Args:
        settings: run.json's ``settings``.
        inputs: The new inputs.
        out: The output folder.
        model: The model to load (default the recorded ``model.name``); e.g. the recorded folder path.
        device: ``auto``, ``cpu``, ``cuda``, ``cuda:N`` (never part of the settings).
        sentence_workers: Sentence-segmentation processes (never changes the output).
        trust_remote_code: Run the model's own Python code: the caller's choice, never taken from run.json (a
            folder embedded with it refuses an append without it, :func:`append`).

    Returns:
        The config (``force`` and ``resume`` off): :meth:`EmbedConfig.from_dict
        <latechunk.config.EmbedConfig.from_dict>` with ``recorded=True``, the options above replaced.

    Raises:
        ValueError: if a setting is missing or invalid (the message names it).
    """
    return EmbedConfig.from_dict(settings, out=out, inputs=list(inputs), recorded=True).with_overrides(
        model=model, device=device, sentence_workers=sentence_workers, trust_remote_code=trust_remote_code)


def _kept_metadata(doc: Document, fields: RecordFields) -> dict:
    """The metadata fields of a document given in Python that a folder with ``--metadata-fields`` keeps:
    ``doc.metadata["metadata"]`` (as :func:`latechunk.io.iter_inputs` reads a record), else the named fields among
    ``doc.metadata``'s own keys; JSON-ready (:func:`latechunk.io.metadata_json`)."""
    from latechunk.io import metadata_json

    if not fields.metadata:
        return {}
    given = doc.metadata.get("metadata")
    if given is None:
        given = {} if fields.all_metadata else {k: doc.metadata[k] for k in fields.metadata if k in doc.metadata}
    if not isinstance(given, Mapping):
        raise TypeError(f"document {doc.doc_id!r}: metadata['metadata'] must be a mapping, got {type(given).__name__}")
    kept, reason = metadata_json(fields.metadata_of(dict(given)) if not fields.all_metadata else dict(given))
    if reason:
        raise TypeError(f"document {doc.doc_id!r}: {reason}")
    return kept


def write_documents(out: str | os.PathLike, documents: Iterable[Document]) -> tuple[Path, int]:
    """Write documents given in Python as the next ``DIR/appended/NNNNN.jsonl`` (one ``{"id", "text"}`` line
    each, under the folder's ``--id-field``/``--text-field``/``--title-field`` names where it set them, with the
    document's ``metadata["title"]`` and ``metadata["url"]`` where it has them, and the fields the folder keeps
    (``--metadata-fields``: ``metadata["metadata"]``, else the named keys of ``metadata``); ASCII-escaped
    JSON, so any text reads back the same), an input an append can read and ``verify`` can re-read: each
    document is read as ``embed`` reads a JSONL record (a title heads the text and is the chunks' title).
    ``NNNNN`` counts the folder's appends (one more than its manifest's ``appends``); a file left by an append
    that never finished is replaced.

    Args:
        out: The output folder.
        documents: The documents (``doc_id``, ``text``, and a ``title`` or ``url`` in ``metadata``; other
            metadata only as the folder's ``--metadata-fields`` keep it).

    Returns:
        ``(path, lines written)``.

    Raises:
        ValueError: if the folder has no manifest (see :meth:`OutputFolder.read_manifest
            <latechunk.output.OutputFolder.read_manifest>`).
        TypeError: for a ``title`` or ``url`` that is not a str (a title may be a number), or metadata JSON
            cannot hold, naming the document.
        ValueError: for a metadata field named as the folder's id, text, title or url field.
        OSError: if the file cannot be written.
    """
    folder = OutputFolder(Path(out))
    manifest = folder.read_manifest()
    # written under the folder's own field names (--text-field body: "body"), which every reader of it uses
    fields = RecordFields.from_dict((manifest.get("settings") or {}).get("record_fields") or {})
    names = {"id": fields.ids[0], "text": fields.text, "title": fields.title, "url": "url"}
    records = []
    for d in documents:
        rec = {names["id"]: d.doc_id, names["text"]: d.text}
        for key in ("title", "url"):
            v = d.metadata.get(key)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (str, int, float) if key == "title" else str):
                raise TypeError(f"document {d.doc_id!r}: metadata[{key!r}] must be a str"
                                f"{' or a number' if key == 'title' else ''}, got {type(v).__name__}")
            rec[names[key]] = v
        for key, v in _kept_metadata(d, fields).items():  # --metadata-fields: read back as the folder keeps them
            if key in rec:
                raise ValueError(f"document {d.doc_id!r}: metadata field {key!r} is the folder's "
                                 f"{next(k for k, n in names.items() if n == key)} field")
            rec[key] = v
        records.append(rec)
    path = folder.path / APPENDED_DIR / f"{len(manifest.get('appends', [])) + 1:05d}.jsonl"
    path.parent.mkdir(exist_ok=True)
    n = 0
    tmp = tmp_path(path)
    with open(tmp, "w", encoding="ascii") as fh:
        for rec in records:
            fh.write(json.dumps(rec) + "\n")
            n += 1
    commit(tmp, path)
    return path, n


def _overlapping_input(out: Path, manifest: dict, inputs) -> str:
    """Why an appended input would embed documents the folder holds again under other ids, or ``""``.

    A file's id is its path relative to its input (a file given alone: its name). A folder inside a folder the
    index already lists, a file deeper than directly inside one, or a folder holding a listed input would give
    the same files new ids (``sub/c.md`` read from the listed folder, ``c.md`` from its subfolder), so the
    "already in the index" check could not see them: refused, as a first run refuses such inputs. Allowed: the
    same folder again; a file directly inside a listed folder (the same id either way); tables (``.jsonl``,
    ``.parquet``, ``.arrow``, ``save_to_disk`` folders), whose ids are their records' own; paths under a hidden
    folder, which the reader never walks; and the folder's own ``appended/*.jsonl`` (``Index.add``). A listed
    input whose recorded place is gone (moved) is not checked.
    """
    from latechunk.io import TABLE_SUFFIXES, hf_dataset_kind

    home = out.resolve()

    def place_of(p: Path) -> Path:  # a symlinked file is read where its link lies: resolve its folder only
        p = Path(os.path.abspath(p))
        return p.parent.resolve() / p.name if p.is_file() else p.resolve()

    def is_table(p: Path) -> bool:
        return (p.is_file() and p.suffix.lower() in TABLE_SUFFIXES) or (p.is_dir() and bool(hf_dataset_kind(p)))

    def walked(inner: Path, outer: Path) -> bool:
        """Whether reading folder ``outer`` reads ``inner`` (no hidden folder on the way)."""
        if inner == outer or not inner.is_relative_to(outer):
            return False
        folders = inner.relative_to(outer).parts[:-1] if inner.is_file() else inner.relative_to(outer).parts
        return not any(part.startswith(".") for part in folders)

    listed = []
    given = manifest.get("inputs") or []
    for i, rel in enumerate(manifest.get("inputs_from_out") or []):
        cand = out / rel
        if not cand.exists():
            continue
        place = place_of(cand)
        if place.is_relative_to(home) or is_table(place):
            continue
        listed.append((place, given[i] if i < len(given) else str(cand)))
    for x in inputs:
        new = place_of(Path(x))
        if new.is_relative_to(home) or is_table(new):
            continue
        for old, shown in listed:
            if old.is_dir() and walked(new, old) and not (new.is_file() and new.parent == old):
                how = "its name alone" if new.is_file() else f"paths relative to {x}"
                return (f"--append input {x} is inside the input folder {shown} this index already lists: its "
                        f"documents would be embedded again under other ids ({how}); append {shown} "
                        "itself (the documents already in the index are skipped)")
            if new.is_dir() and walked(old, new) and not (old.is_file() and old.parent == new):
                return (f"--append input {x} holds the input {shown} this index already lists: its documents "
                        f"would be embedded again under other ids (relative to {x}); append the new files or "
                        "folders alone, or embed into a new folder")
    return ""


#: The start of the skip reason of an appended document whose id the index holds with another text.
CHANGED_SOURCE_REASON = "duplicate doc_id: already in the index with another text"
#: The start of the skip reason of an appended document whose id the index lists as skipped (an empty file then).
SKIPPED_BEFORE_REASON = "duplicate doc_id: listed as skipped in the index when first met"


def _screen(items: Iterator[Document | Skipped], known: dict[str, str], skipped: dict[str, str]
            ) -> Iterator[Document | Skipped]:
    """The new items, with each document whose id the folder already holds turned into a Skipped."""
    for item in items:
        if isinstance(item, Document):
            source = str(item.metadata.get("source", ""))
            sha = known.get(item.doc_id)
            if sha is not None:
                if sha == sha256_text(item.text):
                    reason = ALREADY_INDEXED_REASON
                else:
                    reason = (f"{CHANGED_SOURCE_REASON} (sha256 {sha[:12]}…); an index is append-only: embed into "
                              "a new folder to replace it")
                yield Skipped(item.doc_id, reason, source)
                continue
            if item.doc_id in skipped:
                yield Skipped(item.doc_id, f"{SKIPPED_BEFORE_REASON} ({skipped[item.doc_id]}); an index is "
                                           "append-only: embed the inputs into a new folder, or into this one with "
                                           "--force, to include it", source)
                continue
        yield item



def append(config: EmbedConfig, encoder, *, progress: bool = False) -> AppendResult:
    """Embed ``config.inputs`` into the finished output folder ``config.out`` as new shards, and assemble the
    folder again (see the module doc), holding the folder's writer lock (:func:`~latechunk.ingest.folder.
    writer_lock`) throughout.

    An append that embeds no document (every item already in the folder, a duplicate id, or skipped by the
    reader or pipeline) changes nothing: its shards are removed again, the manifest stays as it was (its
    ``skipped`` does not grow), and the result lists the items skipped with their reasons and ``added`` False.

    Args:
        config: The append: its inputs and output folder, and settings that must equal the folder's
            (``force``/``resume`` off).
        encoder: The :class:`~latechunk.encoder.Encoder` (the folder's model).
        progress: Show a progress bar in bytes of document text.

    Returns:
        The :class:`AppendResult`.

    Raises:
        FolderLocked: (a ValueError) at once, when another process is writing the folder.
        ValueError: if ``out`` is not a finished output folder (no manifest or run.json), its shards do not match
            its manifest, the settings differ from its run.json (naming each difference), ``force``/``resume``
            is set, or an input is missing.
        RuntimeError: if the shards do not add up (a bug).
        OSError: if a file cannot be written.
    """
    if not Path(config.out).is_dir():
        _read_settings(Path(config.out))  # the error for a missing folder, before the lock would create it
    with writer_lock(config.out):
        return _append_locked(config, encoder, progress)


def _append_locked(config: EmbedConfig, encoder, progress: bool) -> AppendResult:
    """:func:`append`, its lock held."""
    from latechunk.ingest import run_settings
    from latechunk.ingest.stream import DedupState, ShardInput, stream, write_group

    t0 = time.time()
    out = Path(config.out)
    if config.force or config.resume:
        raise ValueError("--append excludes --force and --resume: it adds to a finished output folder")
    OutputFolder(out).finish_commit(repair=True)  # a killed commit: finished, or dropped (this append rebuilds)
    manifest, old = _read_settings(out)
    folder = OutputFolder(out)
    settings = run_settings(config, encoder)
    _check_remote_code(old, config)
    _refuse_diff(out, append_settings_diff(old, settings))
    overlap = _overlapping_input(out, manifest, config.inputs)
    if overlap:
        raise ValueError(overlap)
    records = manifest_shards(folder, manifest)
    n0 = len(records)
    start = records[-1]["inputs"][1] if records else 0
    digest = records[-1]["inputs_digest"] if records else ""
    known = {d["doc_id"]: d.get("sha256", "") for d in manifest.get("documents", [])}
    skipped_before = {s["doc_id"]: s.get("reason", "") for s in manifest.get("skipped", [])}
    items = _screen(iter_inputs(config.inputs, config.fields), known, skipped_before)
    new: list[dict] = []
    # --dedup (a setting of the folder's run): the new chunks are checked against every chunk already indexed
    dedup = None if config.dedup is None else DedupState.from_shards(folder, records, encoder.dim, config.dedup)

    def write(s: ShardInput) -> None:
        rec = write_group(folder, config, encoder.dim, s, dedup)
        records.append(rec)
        new.append(rec)
        write_json(folder.progress_path, {"shards": s.k + 1, "inputs_consumed": s.end,
                                          "chunks": sum(r["rows"] for r in records),
                                          "seconds": round(time.time() - t0, 3)})

    progress_before = folder.progress_path.read_bytes() if folder.progress_path.is_file() else None

    def drop_new_shards() -> None:  # the folder as its manifest left it
        for f in folder.shards_dir.iterdir():
            k = folder.shard_number(f.name)
            if f.is_file() and (f.name.endswith(".tmp") or k is None or k >= n0):
                f.unlink()
        if progress_before is not None:
            write_atomic(folder.progress_path, lambda tmp: tmp.write_bytes(progress_before))

    try:
        _, end, _ = stream(config, encoder, items, start, digest, n0, None, write, progress=progress, bar_start=0)
    except Exception:  # an error (not Ctrl-C: the next append cleans up after that) leaves no shard behind
        drop_new_shards()
        raise
    skipped = [s for r in new for s in r["skipped"]]
    if not any(r["documents"] for r in new):  # nothing embedded: leave the folder as it was
        drop_new_shards()
        return AppendResult(manifest, [], skipped, 0, added=False)
    out_abs = out.resolve()
    rel = [os.path.relpath(Path(p).resolve(), out_abs) for p in config.inputs]
    documents = [d for r in new for d in r["documents"]]
    entry = {"inputs": [str(p) for p in config.inputs], "inputs_from_out": rel, "items": [start, end],
             "shards": [n0, len(records)], "documents_embedded": len(documents), "documents_skipped": len(skipped),
             "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "versions": versions()}
    header = {k: v for k, v in manifest.items() if k not in MANIFEST_OWN_KEYS}
    header["inputs"] = list(manifest.get("inputs", [])) + entry["inputs"]
    header["appends"] = list(manifest.get("appends", [])) + [entry]
    assembled = dict(old)
    assembled["inputs_from_out"] = list(manifest.get("inputs_from_out") or old.get("inputs_from_out") or []) + rel
    earlier = float((manifest.get("seconds") or {}).get("total", 0.0))
    try:
        result = assemble(out, records, assembled, config.index, encoder.dim, header, t0 - earlier)
    except Exception:  # e.g. an index type that cannot be trained: the manifest still lists only the old shards
        if len(OutputFolder(out).read_manifest().get("shards") or []) == n0:
            drop_new_shards()
        raise
    return AppendResult(result, documents, skipped, sum(r["rows"] for r in new))
