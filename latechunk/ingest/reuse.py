"""``embed --reuse OLD``: a fresh run that takes the chunks and vectors of its unchanged documents from an earlier
output folder instead of encoding them again.

The daily update of a corpus whose documents change or go away: an index is append-only (``--append`` adds, it
never replaces or drops), so the index that holds exactly today's corpus is a new one. ``latechunk embed CORPUS
--out NEW --reuse OLD`` builds it as a fresh run would, except that a document whose id, text (sha256) and source
type are those of a document of ``OLD`` is not chunked or encoded: its boundaries (token and char spans, heading
paths) and its vectors are read from ``OLD``'s shards, and its rows are made again from the document as read now
(so a changed ``url``, title origin or ``--metadata-fields`` value is today's). Only new and changed documents go
through the model. The result is an ordinary output folder (``verify`` checks it like any other), the same as a
run without ``--reuse`` up to the encoder's batch composition (a reused vector was encoded in another batch:
measured within 2e-7 per component in float32, about 1e-3 in bfloat16, as between any two runs whose batches
differ).

``OLD`` must have been embedded with the same settings that decide a document's vectors and chunks (model and
its weights, dtype, backend, strategy, mode, macro window and overlap, normalisation, special tokens, long
documents, late pooling, record fields; the index may differ: it is built again from the vectors); otherwise
the run stops before any work, naming the settings that differ.

Module layout: :class:`ReuseStore` (the old folder's documents, read lazily shard by shard), :class:`Reused` (a
document passed through the pipeline untouched), :func:`mark_reused` (the input stream with reused documents
marked).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from latechunk.ingest.files import sha256_text
from latechunk.ingest.folder import diff_settings
from latechunk.output import OutputFolder
from latechunk.provenance import deciding_settings
from latechunk.types import Boundaries, Document, Skipped

__all__ = ["REUSED_REASON", "ReuseStore", "Reused", "deciding_settings", "mark_reused"]

#: the pipeline's "reason" for a reused document (it passes through as an item not to encode); never recorded:
#: :func:`latechunk.ingest.stream._skipped_records` leaves reused items out
REUSED_REASON = "reused from an earlier output folder (embed --reuse)"


@dataclass(frozen=True)
class Reused(Skipped):
    """A document whose chunks and vectors come from the :class:`ReuseStore`: passed through the pipeline as an
    item it does not encode (a :class:`~latechunk.types.Skipped` with :data:`REUSED_REASON`), then written in its
    place among the shard's documents (:meth:`ReuseStore.merge`).

    Attributes:
        document: The document as read now.
        tokens: Its content tokens in ``OLD`` (the pipeline counts them toward a group's ``group_tokens``, so
            reused documents fill shards of the usual size).
    """

    document: Document | None = None
    tokens: int = 0




class ReuseStore:
    """The documents of an earlier output folder, by id, with their chunks and vectors read from its shards.

    Args:
        folder: The earlier output folder (finished: it has a manifest).
        settings: This run's settings (:func:`latechunk.ingest.run_settings`).
        out: This run's output folder (must not be ``folder``: the run writes while it reads).

    Raises:
        ValueError: if ``folder`` is not a finished output folder, is ``out``, or was embedded with settings
            that decide chunks or vectors differently (the message names each).
    """

    def __init__(self, folder: str | Path, settings: dict, out: str | Path) -> None:
        self.folder = OutputFolder(Path(folder))
        if not self.folder.manifest_path.is_file():
            raise ValueError(f"--reuse {folder}: not a finished output folder of `latechunk embed` (no manifest.json)")
        if Path(out).resolve() == Path(folder).resolve():
            raise ValueError(f"--reuse {folder} is the output folder itself: embed into a new folder (--out NEW) "
                             "and swap it in when it is done (README: updating a served index)")
        manifest = self.folder.read_manifest()
        old = self.folder.recorded_settings(manifest)
        if old.get("dedup") is not None:
            raise ValueError(f"--reuse {folder}: it was embedded with --dedup, so its documents lack the chunks "
                             "dropped as near-duplicates of others (which may be gone now): embed without --reuse")
        diff = diff_settings(deciding_settings(old), deciding_settings(settings))
        if diff:
            raise ValueError(f"--reuse {folder}: it was embedded with settings that give other chunks or vectors: "
                             + "; ".join(diff) + " (give the same options, or embed without --reuse)")
        # doc id -> (shard name, first row in the shard, chunks, record), from the shard records in order
        self._where: dict[str, tuple[str, int, int, dict]] = {}
        for name in (s.get("name") for s in manifest.get("shards") or []):
            rec = self.folder.read_json(self.folder.shards_dir / f"{name}.json")
            row = 0
            for d in rec.get("documents") or []:
                self._where.setdefault(str(d["doc_id"]), (str(name), row, int(d["chunks"]), d))
                row += int(d["chunks"])
        self._shard: tuple[str, object, np.ndarray] | None = None
        self.reused = 0

    def __len__(self) -> int:
        return len(self._where)

    def matches(self, doc: Document) -> bool:
        """Whether ``doc`` can be reused: an old document with its id, the sha256 of its text, and its source
        type (a file that became another kind is read another way)."""
        from latechunk.alarms import source_type

        hit = self._where.get(doc.doc_id)
        if hit is None or hit[3].get("sha256") != sha256_text(doc.text):
            return False
        old_type = hit[3].get("source_type")
        return old_type is None or old_type == source_type(doc.doc_id, str(doc.metadata.get("source", "")))

    def tokens(self, doc_id: str) -> int:
        """A document's content tokens as ``OLD`` recorded them (at least 1: every reused document weighs)."""
        return max(1, int(self._where[doc_id][3].get("tokens") or 0))

    def take(self, doc: Document) -> tuple[Boundaries, np.ndarray, dict]:
        """The old boundaries, (chunks, dim) float32 vectors and record extras (``tokens``, ``unknown_chars``) of
        a document that :meth:`matches`."""
        from latechunk.alarms import source_type

        name, row, n, rec = self._where[doc.doc_id]
        if self._shard is None or self._shard[0] != name:
            table = self.folder.read_shard_table(name)
            vectors = np.load(self.folder.shards_dir / f"{name}.npy", mmap_mode="r", allow_pickle=False)
            self._shard = (name, table, vectors)
        _, table, vectors = self._shard
        part = table.slice(row, n).to_pydict()
        b = Boundaries(doc.doc_id,
                       np.array([part["token_start"], part["token_end"]], dtype=np.int32).T.reshape(n, 2),
                       np.array([part["char_start"], part["char_end"]], dtype=np.int32).T.reshape(n, 2),
                       tuple(tuple(h or ()) for h in part["heading_path"]))
        extra = {"source_type": source_type(doc.doc_id, str(doc.metadata.get("source", "")))}
        extra.update({key: rec[key] for key in ("tokens", "unknown_chars") if key in rec})
        extra["reused"] = True  # the manifest's document record says where its vectors came from
        self.reused += 1
        return b, np.array(vectors[row:row + n], dtype=np.float32), extra

    def merge(self, items, docs, bounds, vecs: np.ndarray, extra: list[dict]):
        """A shard's documents with its reused ones put back in input order.

        Args:
            items: The group's input items, in order (reused ones as :class:`Reused`).
            docs: The encoded documents, in input order.
            bounds: Their boundaries.
            vecs: Their (rows, dim) float32 vectors, in document then chunk order.
            extra: Their records' extra keys.

        Returns:
            ``(docs, bounds, vecs, extra)`` with every reused document in its place.
        """
        rows = np.concatenate([[0], np.cumsum([len(b) for b in bounds])]).astype(np.int64)
        out_d, out_b, out_v, out_e, i = [], [], [], [], 0
        for item in items:
            if isinstance(item, Reused):
                b, v, e = self.take(item.document)
                out_d.append(item.document), out_b.append(b), out_v.append(v), out_e.append(e)
            elif i < len(docs) and item is docs[i]:
                out_d.append(docs[i]), out_b.append(bounds[i]), out_v.append(vecs[rows[i]:rows[i + 1]])
                out_e.append(extra[i] if i < len(extra) else {})
                i += 1
        dim = vecs.shape[1]
        v = np.concatenate(out_v).astype(np.float32, copy=False) if out_v else np.zeros((0, dim), np.float32)
        return out_d, out_b, v, out_e


def mark_reused(items: Iterator, store: ReuseStore) -> Iterator:
    """The input stream with each document that ``store`` holds unchanged replaced by a :class:`Reused` marker
    (the pipeline then passes it through without tokenizing or encoding it).

    Args:
        items: Input items (documents and the reader's skipped items), in order.
        store: The earlier folder's documents.

    Returns:
        The same items in the same order, unchanged documents as :class:`Reused` (weighing their old tokens).
    """
    for item in items:
        if isinstance(item, Document) and store.matches(item):
            yield Reused(item.doc_id, REUSED_REASON, str(item.metadata.get("source", "")), item,
                         store.tokens(item.doc_id))
        else:
            yield item
