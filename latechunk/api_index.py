"""The :class:`Index` of the Python API: an output folder of ``latechunk embed``, searched as ``latechunk search``
searches it (the query encoded by the model recorded in the manifest, with its query prompt;
:func:`latechunk.index.search_index`), its hits widened to their contexts (:mod:`latechunk.contexts`), and
:meth:`Index.add` appending to it (:mod:`latechunk.ingest.append`, the Python side of
``latechunk embed --append``). torch, FAISS and pyarrow are imported only inside the methods that need them.

:class:`Index` is importable from :mod:`latechunk.api` and ``latechunk``. Tests: ``tests/api/test_api.py``.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from latechunk.api_types import (
    BLANK_ID_REASON,
    AddResult,
    Context,
    DocumentLike,
    Hit,
    _as_document,
    _BlankId,
    _check_iterable,
    _text_id,
)
from latechunk.types import Skipped

if TYPE_CHECKING:
    from latechunk.encoder import Encoder

def _caller_positions(text: str, jsonl_name: str, positions: Sequence[int] | None = None) -> str:
    """``text`` (a skipped record's source or reason) with each place in this add's document file
    ``DIR/appended/NNNNN.jsonl`` (``00001.jsonl:7``) as the caller's position (``documents[6]``; line ``L`` is
    ``positions[L - 1]`` when some documents were not written): the file is removed when the add embeds
    nothing."""
    def caller(m) -> str:
        line = int(m.group(1)) - 1
        return f"documents[{positions[line] if positions is not None and line < len(positions) else line}]"

    return re.sub(rf"(?<![\w.]){re.escape(jsonl_name)}:(\d+)", caller, text)


def recorded_model_message(folder: str | os.PathLike, name: str | None, err: Exception | str) -> str:
    """What ``search`` and :class:`Index` say when the model an output folder records (its manifest's model path,
    else name) does not load: where it came from and how to give its new place (a trained model's folder moved).

    Args:
        folder: The output folder.
        name: The recorded model path or name.
        err: Why it did not load.

    Returns:
        One line.
    """
    return (f"the model {folder} was built with ({name}, recorded in its manifest.json) does not load: {err}. If it "
            "moved, give its new place: latechunk search --model PATH (Index.load(..., model=PATH))")


class Index:
    """An output folder of ``latechunk embed``: search it, add documents to it.

    Load one with :meth:`Index.load`. The query model is the one the folder was built with (its manifest's model
    path, else its name), loaded on first use with the recorded dtype, input limit and query prompt.

    Attributes:
        path: The folder.
        manifest: Its ``manifest.json``.
    """

    def __init__(self, path: Path, faiss_index, table, manifest: dict, *, device: str = "auto",
                 model: str | None = None, trust_remote_code: bool = False) -> None:
        self.path = Path(path)
        self.manifest = manifest
        self._faiss = faiss_index
        self._table = table
        self._device = device
        self._model = model
        self._trust_remote_code = trust_remote_code
        self._encoder: Encoder | None = None
        self._folder_encoder: Encoder | None = None  # add()'s when the queries use another model
        self._ids: tuple[str, dict[str, str]] | None = None  # (vectors_key, {doc_id: text sha256}) for chunk ids

    @classmethod
    def load(cls, path: str | os.PathLike, device: str = "auto", *, model: str | os.PathLike | None = None,
             trust_remote_code: bool = False) -> Index:
        """Open an output folder of ``latechunk embed`` (its ``index.faiss``, ``chunks.parquet`` and
        ``manifest.json``).

        Args:
            path: The folder.
            device: Where the query model runs: ``"auto"`` (CUDA when present), ``"cpu"``, ``"cuda"``, ...
                (positional or keyword).
            model: Another model for the queries, a hub id or a local folder (default: the folder's). Checked
                here (a path must exist; a hub id must be cached or reachable), loaded on the first
                :meth:`search`. :meth:`add` never uses it: it embeds with the folder's own model.
            trust_remote_code: Run the model repository's own Python code: needed for a folder embedded with
                ``--trust-remote-code`` (a model such as jina-embeddings-v2), never taken from the folder.

        Returns:
            The :class:`Index` (the model is loaded on the first :meth:`search` or :meth:`add`).

        Raises:
            ValueError: if ``path`` does not exist or is not a folder, a file is missing (an unfinished run, the
                message says so: ``latechunk embed ... --resume`` finishes it) or unreadable, the index and the
                chunk table disagree, or ``model`` does not resolve (:func:`latechunk.models.resolve_model_path`).
        """
        from latechunk.output import read_output

        p = Path(path)
        if not p.exists():
            raise ValueError(f"{p} does not exist (give an output folder of `latechunk embed`)")
        if not p.is_dir():
            raise ValueError(f"{p} is not a folder (give an output folder of `latechunk embed`)")
        faiss_index, table, manifest = read_output(p)
        if model is not None:
            from latechunk.models import resolve_model_path

            try:
                resolve_model_path(model)
            except ValueError as err:
                raise ValueError(f"Index.load(model={str(model)!r}): {err}") from None
        return cls(p, faiss_index, table, manifest, device=device, model=None if model is None else str(model),
                   trust_remote_code=trust_remote_code)

    def __len__(self) -> int:
        """Vectors in the index (= chunks)."""
        return int(self._faiss.ntotal)

    def __repr__(self) -> str:
        return f"Index({str(self.path)!r}, vectors={len(self)}, model={self.model_name!r}, strategy={self.strategy!r})"

    @property
    def faiss_index(self):
        """The folder's ``faiss.Index`` (``faiss.IndexBinary`` under ``--precision ubinary``), as read: vector id i
        is row i of :attr:`table`."""
        return self._faiss

    @property
    def table(self):
        """The chunk table (``chunks.parquet`` as a ``pyarrow.Table``): row i describes vector id i."""
        return self._table

    @property
    def dim(self) -> int:
        """The dimension of the vectors as the index holds them (``faiss_index.d``): the model's (the manifest's
        ``dim``), or N under ``--truncate-dim N``; what a query vector must have after
        :func:`latechunk.index.query_transform`."""
        return int(self._faiss.d)

    @property
    def model_name(self) -> str:
        """The folder's model, as recorded (``"all-MiniLM-L6-v2"`` for the default)."""
        return str(self.manifest.get("model", {}).get("name", ""))

    @property
    def strategy(self) -> str:
        """The folder's strategy SPEC."""
        s = self.manifest.get("strategy")
        return str(s.get("spec", "")) if isinstance(s, dict) else str(self.manifest.get("settings", {}).get("strategy", ""))

    @property
    def encoder(self) -> Encoder:
        """The query (and :meth:`add`) encoder, loaded on first use: the folder's model (or ``model`` given to
        :meth:`load`) with the recorded dtype, input limit and query prompt. Warns when its weights differ from
        the recorded ones.

        Raises:
            ValueError: if the model does not load.
        """
        if self._encoder is None:
            self._encoder = self._load_recorded(self._model_to_load()) if self._model is None else \
                self._load_encoder(self._model)
        return self._encoder

    def _load_recorded(self, name: str | None) -> Encoder:
        """:meth:`_load_encoder` of the folder's own model; a model that no longer loads (a trained model's folder
        moved or deleted) is said to come from the manifest, with the way to give its new place."""
        sm = self.manifest.get("settings", {}).get("model", {})
        if sm.get("trust_remote_code") and not self._trust_remote_code:
            raise ValueError(f"{self.path} was embedded with --trust-remote-code (its model, {self.model_name}, runs "
                             "its own Python code to load): pass --trust-remote-code to search it too (in Python: "
                             "Index.load(..., trust_remote_code=True))")
        try:
            return self._load_encoder(name)
        except ValueError as err:
            from latechunk.models import needs_remote_code

            if needs_remote_code(err):
                raise
            raise ValueError(recorded_model_message(self.path, name, err)) from err

    def _load_encoder(self, name: str | None) -> Encoder:
        """An encoder of ``name`` with the folder's recorded dtype, input limit, query prompt and batch budget;
        warns when its weights differ from the recorded ones."""
        from latechunk.encoder import Encoder

        m = self.manifest.get("model", {})
        sm = self.manifest.get("settings", {}).get("model", {})
        enc = Encoder(name, device=self._device, dtype=sm.get("dtype") or m.get("dtype"),
                      max_length=m.get("max_length"), query_prompt=m.get("query_prompt"),
                      trust_remote_code=self._trust_remote_code)
        if m.get("sha256") and enc.model_hash and enc.model_hash != m["sha256"]:
            warnings.warn(f"the model's weights differ from the ones {self.path} was built with", stacklevel=3)
        return enc

    def _add_encoder(self) -> Encoder:
        """:meth:`add`'s encoder: the folder's own model (the query encoder when no other ``model`` was given)."""
        if self._model is None:
            return self.encoder
        if self._folder_encoder is None:
            try:
                self._folder_encoder = self._load_recorded(self._folder_model())
            except ValueError:  # moved: the model given to load() serves when its weights are the recorded ones
                sha = self.manifest.get("model", {}).get("sha256")
                given = self.encoder
                if not (sha and given.model_hash == sha):
                    raise
                self._folder_encoder = given
        return self._folder_encoder

    def _model_to_load(self) -> str:
        if self._model is not None:
            return self._model
        return self._folder_model()

    def _folder_model(self) -> str:
        """The folder's model: its recorded folder when that still exists, else its recorded name."""
        m = self.manifest.get("model", {})
        path = m.get("path") or ""
        return path if path and Path(path).is_dir() else m.get("name")

    def search(self, query: str | Sequence[str], k: int = 5, *, expand: str | None = None,
               nprobe: int | None = None,
               where: Mapping | None = None) -> list[Hit] | list[list[Hit]] | list[Context] | list[list[Context]]:
        """The ``k`` chunks nearest to a query (inner product), best first; with ``expand``, their contexts.

        The query is encoded as ``latechunk search`` does: the folder's model with its query prompt,
        normalised as the chunk vectors were, and transformed as the index stores them (``--truncate-dim``).

        Args:
            query: One query, or a list of queries.
            k: Results per query (>= 1; fewer when the index holds fewer vectors).
            expand: None: the hits. ``"section"``, ``"neighbors:N"`` or ``"document"``: each hit widened to the
                context a generator should read, hits of one document whose contexts overlap or touch merged
                into one (:func:`latechunk.contexts.expand_hits`), so fewer than ``k`` contexts may come back.
            nprobe: An IVF index (``--index IVF1024,PQ32``, ...): inverted lists probed per query (more: slower
                and closer to exact; clipped to ``nlist``). None: the index's own, ``min(16, nlist)`` as
                assembled (:data:`latechunk.index.DEFAULT_NPROBE`; the manifest's ``index.nprobe``).
            where: Only chunks that meet every condition: ``{"lang": "en", "tags": "birds"}`` on the metadata
                ``embed --metadata-fields`` kept (a value equals the field's, as text or number; a list field
                holds it), or on a chunk-table column (:data:`latechunk.output.WHERE_COLUMNS`: ``{"doc_id":
                "finance.md"}``, ``{"heading_path": "Rivers"}``: one of its headings); ``"metadata.NAME"`` names a
                metadata field whose name is a column's. None: all chunks (:func:`latechunk.output.allowed_rows`).

        Returns:
            ``list[Hit]`` for one query, ``list[list[Hit]]`` for a list; with ``expand``, :class:`Context` s in
            their place, best first. ``[]`` per query for an empty index (no model is loaded then); fewer than
            ``k`` when fewer chunks meet ``where``.

        Raises:
            ValueError: on ``k < 1``, a bad ``expand``, an ``nprobe`` below 1 or for an index that is not IVF, an
                empty query (or one of invisible marks only) or one with a lone surrogate, a model that does not load, query vectors whose dimension does not fit the index
                (another model), or a ``where`` field that is neither a column nor a metadata field of any chunk.
            TypeError: if ``query`` is neither a str nor a list of str (``None``, bytes), or a query is not a str.
        """
        single = isinstance(query, str)
        if expand is not None:
            from latechunk.contexts import parse_expand

            parse_expand(expand, "expand=")
        rows = self.search_rows(query, k, nprobe=nprobe, where=where)
        results = [[self._hit(r) for r in q_rows] for q_rows in ([rows] if single else rows)]
        if expand is not None:
            results = [self.expand(hits, expand) for hits in results]
        return results[0] if single else results

    def search_rows(self, query: str | Sequence[str], k: int = 5, *, nprobe: int | None = None,
                    where: Mapping | None = None) -> list[dict] | list[list[dict]]:
        """:meth:`search`'s hits as the chunk table's rows (what ``latechunk search --json`` prints): one dict per
        hit with ``rank`` (1-based), ``score`` (float, inner product), ``vector_id`` (int, the row) and the row's
        columns (:data:`latechunk.output.RECORD_COLUMNS`), best first.

        Args:
            query: One query, or a list of queries.
            k: Results per query (>= 1).
            nprobe: IVF lists probed per query (:meth:`search`); None: the index's own.
            where: Conditions on metadata fields or columns (:meth:`search`); None: all chunks.

        Returns:
            ``list[dict]`` for one query, ``list[list[dict]]`` for a list; ``[]`` per query for an empty index
            (no model is loaded then).

        Raises:
            ValueError / TypeError: as :meth:`search`.
        """
        from latechunk.index import query_problem

        single = isinstance(query, str)
        if not single and (not isinstance(query, Iterable) or isinstance(query, (bytes, bytearray, Mapping))):
            raise TypeError(f"query must be a str or a list of str, got {type(query).__name__}")
        queries = [query] if single else list(query)
        for i, q in enumerate(queries):
            if not isinstance(q, str):
                raise TypeError(f"query {i} must be a str, got {type(q).__name__}")
            problem = query_problem(q)
            if problem:
                raise ValueError(f"query {i} {problem}" if not single else f"the query {problem}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be an integer >= 1, got {k!r}")
        if nprobe is not None:
            from latechunk.index import check_nprobe

            check_nprobe(self._faiss, nprobe)
        allowed = None
        if where:
            from latechunk.output import WHERE_COLUMNS, allowed_rows, metadata_fields, parse_where

            conditions = parse_where(where)
            known = metadata_fields(self._table)
            unknown = [f for f in conditions if f not in WHERE_COLUMNS and f.removeprefix("metadata.") not in known]
            if unknown:  # a typo gave an empty result and exit 0 (a trial)
                raise ValueError(f"--where {', '.join(unknown)}: no chunk of {self.path} has such a field ("
                                 + (f"its metadata fields: {', '.join(known)}" if known else "it keeps no metadata: "
                                    "embed --metadata-fields NAMES keeps record fields")
                                 + f"; columns: {', '.join(WHERE_COLUMNS)})")
            allowed = allowed_rows(self._table, conditions)
        if len(self) == 0 or not queries or (allowed is not None and not len(allowed)):
            results: list[list[dict]] = [[] for _ in queries]
        else:
            from latechunk.config import IndexConfig
            from latechunk.index import query_transform, search_index

            xq = self.encoder.encode_query(queries, normalize=self.manifest.get("normalize", True))
            xq = query_transform(xq, IndexConfig.from_dict(self.manifest.get("index", {})))
            if xq.shape[1] != self._faiss.d:
                raise ValueError(f"the model gives {xq.shape[1]}-dim query vectors but the index holds "
                                 f"{self._faiss.d}-dim ones; search with the model it was built with "
                                 f"({self.model_name})")
            D, I = search_index(self._faiss, xq, k, nprobe=nprobe, allowed=allowed)
            from latechunk.output import search_records

            results = [search_records(self._table, D[q], I[q]) for q in range(len(queries))]
            for rows in results:
                for r in rows:
                    r["chunk_id"] = self._chunk_id(r)
        return results[0] if single else results

    def expand(self, hits: Sequence[Hit], expand: str) -> list[Context]:
        """Hits of this index widened to their contexts (what :meth:`search` does with ``expand``).

        Args:
            hits: Hits of this index (from :meth:`search`), any order.
            expand: ``"section"``, ``"neighbors:N"`` or ``"document"``.

        Returns:
            The :class:`Context` s, best first; hits of one document whose contexts overlap or touch share one.

        Raises:
            ValueError: on a bad ``expand``, or a hit that is not this index's.
        """
        from dataclasses import asdict

        from latechunk.contexts import expand_hits

        records = [{**asdict(h), "hit": h} for h in hits]
        if expand.strip() == "section" and records and not self.strategy.startswith("heading") and \
                not any(h.heading_path for h in hits):
            import warnings

            # as `latechunk search` notes it (a trial: the Python API said nothing)
            warnings.warn(f"this index's strategy ({self.strategy}) records no heading paths, so expand='section' "
                          "gives each hit's whole document; expand='neighbors:N' gives N chunks on each side",
                          UserWarning, stacklevel=2)
        return [Context(score=c["score"], doc_id=c["doc_id"], expand=c["expand"], chunk_start=c["chunk_start"],
                        chunk_end=c["chunk_end"], char_start=c["char_start"], char_end=c["char_end"],
                        spans=tuple((a, b) for a, b in c["spans"]), text=c["text"], section=c["section"],
                        hits=tuple(r["hit"] for r in c["hits"]))
                for c in expand_hits(self._table, records, expand)]

    @staticmethod
    def _hit(r: dict) -> Hit:
        return Hit(score=r["score"], vector_id=r["vector_id"], doc_id=r["doc_id"], chunk_index=r["chunk_index"],
                   char_start=r["char_start"], char_end=r["char_end"], token_start=r["token_start"],
                   token_end=r["token_end"], heading_path=tuple(r["heading_path"] or ()), text=r["text"],
                   strategy=r["strategy"], title=r["title"], title_from=r["title_from"], section=r["section"],
                   header=r["header"], source=r["source"], url=r["url"], metadata=r.get("metadata"),
                   chunk_id=r.get("chunk_id"))

    def _chunk_id(self, row: dict) -> str:
        """A hit's :func:`latechunk.provenance.chunk_id` (the id ``export`` gives its row in a vector store)."""
        if self._ids is None:
            from latechunk.output import OutputFolder
            from latechunk.provenance import vectors_key

            settings = OutputFolder(self.path).recorded_settings(self.manifest) or None
            docs = {str(d.get("doc_id")): str(d.get("sha256") or "") for d in self.manifest.get("documents") or []
                    if isinstance(d, dict)}
            self._ids = (vectors_key(self.manifest, settings), docs)  # the export's key: the same ids
        from latechunk.provenance import chunk_id_of_row

        key, docs = self._ids
        return chunk_id_of_row(key, row, docs.get(str(row["doc_id"])))

    def add(self, documents: Iterable[DocumentLike], *, progress: bool = False) -> AddResult:
        """Embed new documents into the folder with its own settings, incrementally: new shards after the last
        one, then ``index.faiss``, ``chunks.parquet`` and ``manifest.json`` assembled again from every shard
        (``latechunk verify`` passes; :meth:`search` finds the new chunks). The Python side of
        ``latechunk embed NEW --out DIR --append`` (:mod:`latechunk.ingest.append`).

        The documents are first written to ``DIR/appended/NNNNN.jsonl`` (``id``, ``text``, and a Document's
        ``metadata["title"]`` and ``metadata["url"]``, read as ``embed`` reads a JSONL record: the title heads
        the text and is its chunks' title; other metadata is not kept), an input of the folder like its others, so that ``verify`` re-reads and hashes them. The
        vectors come from the folder's own model, whatever ``model`` :meth:`load` was given for the queries
        (when the folder's model moved, ``model`` serves if its weights are the recorded ones).
        ``add`` holds the folder's writer lock (:func:`latechunk.ingest.folder.writer_lock`): one writer at a
        time; another process writing the folder makes it fail at once. An ``add`` that embeds no document
        leaves the folder as it was (no shard, no document file, the manifest unchanged). This handle reads the
        folder again afterwards; another :class:`Index` of the same folder (in this or another process) keeps the
        index it loaded until it is loaded again (:meth:`load`).

        Args:
            documents: An iterable of ``str`` (id ``"text-"`` + the first 16 hex digits of the text's sha256, so
                adding the same text again adds nothing), ``(id, text)`` pairs or
                :class:`~latechunk.types.Document`.
            progress: Show a progress bar (bytes of text).

        Returns:
            The :class:`AddResult`: ids added, and every document skipped with its reason. A document whose id
            and text sha256 are already in the folder is skipped (``already in the index``); one whose id is
            there with another text, or listed as skipped, is skipped as a duplicate id (an index is
            append-only). An empty ``documents`` changes nothing.

        Raises:
            TypeError / ValueError: on a bad item (as :meth:`LateChunker.map`), a folder whose shards do not
                match its manifest, a run.json whose settings this version cannot repeat, or the folder's model
                not loading.
            latechunk.ingest.folder.FolderLocked: (a ValueError) when another process is writing the folder.
            OSError: if a file cannot be written.
        """
        _check_iterable(documents, "Index.add")
        docs, positions, blank = [], [], []
        for pos, d in enumerate(documents):
            try:
                docs.append(_as_document(d, pos, _text_id))
                positions.append(pos)
            except _BlankId:
                blank.append(Skipped(f"documents[{pos}]", BLANK_ID_REASON, f"documents[{pos}]"))
        if not docs:
            return AddResult(skipped=tuple(blank))
        from latechunk.ingest.append import append, config_from_settings, write_documents
        from latechunk.ingest.folder import writer_lock
        from latechunk.output import OutputFolder, read_output

        settings = OutputFolder(self.path).read_run().get("settings", {})
        with writer_lock(self.path):  # the document file and the append: one writer
            encoder = self._add_encoder()
            jsonl, _ = write_documents(self.path, docs)
            try:
                config = config_from_settings(settings, [jsonl], self.path, model=self._folder_model(),
                                              device=self._device, trust_remote_code=self._trust_remote_code)
                result = append(config, encoder, progress=progress)
            except BaseException:
                jsonl.unlink(missing_ok=True)  # the manifest never lists it
                raise
            if not result.added:
                jsonl.unlink(missing_ok=True)
            self._faiss, self._table, self.manifest = read_output(self.path)
            self._ids = None
        skipped = [Skipped(s["doc_id"], _caller_positions(s["reason"], jsonl.name, positions),
                           _caller_positions(s.get("source", ""), jsonl.name, positions)) for s in result.skipped]
        order = {f"documents[{p}]": p for p in range(len(positions) + len(blank))}
        skipped = sorted(skipped + blank, key=lambda x: order.get(x.source, -1))  # in input order
        return AddResult(added=tuple(d["doc_id"] for d in result.documents), skipped=tuple(skipped),
                         chunks=result.chunks)
