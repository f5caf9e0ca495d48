"""What the Python API takes and gives: the input items (:data:`DocumentLike`: a ``str``, an ``(id, text)`` pair or
a :class:`~latechunk.types.Document`, made Documents one way for :class:`~latechunk.api.LateChunker` and
:class:`~latechunk.api.Index`), and the results: :class:`Chunk` (a chunk with its vector), :class:`Hit` (a search
result), :class:`Context` (hits widened to their context) and :class:`AddResult` (what ``Index.add`` did).

Importing this module loads neither torch nor FAISS (``from latechunk import Chunk, Hit`` stays light). Every
name here is importable from :mod:`latechunk.api` (and the public ones from ``latechunk``). Tests:
``tests/api/test_api.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from latechunk.types import Document, Skipped

DocumentLike = Any
"""What :meth:`LateChunker.map` and :meth:`Index.add` take per document: a ``str``, an ``(id, text)`` pair or a
:class:`~latechunk.types.Document`."""


@dataclass(frozen=True, eq=False)
class Chunk:
    r"""One chunk of a document with its vector.

    Attributes:
        text: The chunk text, exactly ``document_text[char_start:char_end]``.
        doc_id: The document's id.
        chunk_index: Its place in the document (0, 1, ...).
        char_start / char_end: Half-open character span in the document text (Python ``str`` indices).
        token_start / token_end: Half-open token span in the document's one tokenization (special tokens and
            the document prompt included: position 0 is ``[CLS]``).
        heading_path: Markdown heading titles above the chunk, outermost first (``()`` where none).
        strategy: The canonical SPEC of the strategy that cut it (as in ``chunks.parquet``).
        mode: ``"late"``, ``"naive"``, ``"contextual"`` (naive over ``header + "\n\n" + text``) or ``"fused"``
            (late + naive, each unit-normalised, summed: :func:`latechunk.pipeline.fused_vectors`).
        embedding: (dim,) float32, read-only: the chunk vector (L2-normalised unless ``normalize=False``).
        metadata: The document's metadata (``source``, ``title``, ...; a copy per chunk).
    """

    text: str
    doc_id: str
    chunk_index: int
    char_start: int
    char_end: int
    token_start: int
    token_end: int
    heading_path: tuple[str, ...]
    strategy: str
    mode: str
    embedding: np.ndarray
    metadata: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Hit:
    """One search result (see :meth:`Index.search`).

    Attributes:
        score: Inner product of the query vector and the chunk vector (cosine for normalised vectors; rescored
            cosine for a ``ubinary`` index).
        vector_id: The chunk's vector id = its row in ``chunks.parquet``.
        doc_id / chunk_index / char_start / char_end / token_start / token_end / heading_path / text / strategy:
            The chunk's record (as :class:`Chunk`; spans in characters and tokens, half-open).
        title / title_from / section / header / source / url: What a citation of the chunk names (the chunk
            table's :data:`~latechunk.output.SOURCE_COLUMNS`): the document's title and its origin, the heading
            path as text (``"Setup > Linux"``), the contextual header (``"[Guide > Setup > Linux]"``), the
            document's path as read, and its URL (front matter or JSONL ``url``). A folder written before these
            columns gives ``section`` and ``source`` and None for the others; ``url`` is None when the document
            has none.
        metadata: The record fields its document kept (``embed --metadata-fields``), or None.
        chunk_id: The chunk's stable id (:func:`latechunk.provenance.chunk_id`, a UUID): its row's id in a
            vector store ``latechunk export`` wrote, the same in every folder built from the same document and
            settings.
    """

    score: float
    vector_id: int
    doc_id: str
    chunk_index: int
    char_start: int
    char_end: int
    token_start: int
    token_end: int
    heading_path: tuple[str, ...]
    text: str
    strategy: str
    title: str | None = None
    title_from: str | None = None
    section: str | None = None
    header: str | None = None
    source: str | None = None
    url: str | None = None
    metadata: dict | None = None
    chunk_id: str | None = None

    @property
    def citation(self) -> str:
        """Where to cite the chunk: its document's ``url`` when it has one, else its ``source`` (``""`` when
        neither is known)."""
        return self.url or self.source or ""


@dataclass(frozen=True)
class Context:
    r"""The context a generator should read around one or more hits of one document (:meth:`Index.search` with
    ``expand``; :mod:`latechunk.contexts`): the hits' section, neighbouring chunks or document, reassembled from
    the chunk table's exact slices, hits whose contexts overlap or touch merged into one.

    Attributes:
        score: The best score of its hits.
        doc_id: The document.
        expand: ``"section"``, ``"neighbors:N"`` or ``"document"``.
        chunk_start / chunk_end: Chunk indices it covers, half-open.
        char_start / char_end: Characters of the document it covers, half-open.
        spans: The merged char spans ``((start, end), ...)`` whose characters ``text`` holds verbatim; between
            two of them (characters no chunk kept) ``text`` holds ``"\n"`` for a one-character gap, else
            ``"\n\n"``.
        text: The context's text.
        section: The best hit's heading path as text.
        hits: The hits it holds, best first (their ``title``, ``source``, ``url`` are the document's).
    """

    score: float
    doc_id: str
    expand: str
    chunk_start: int
    chunk_end: int
    char_start: int
    char_end: int
    spans: tuple[tuple[int, int], ...]
    text: str
    section: str
    hits: tuple[Hit, ...]


@dataclass(frozen=True)
class AddResult:
    """What :meth:`Index.add` did.

    Attributes:
        added: Ids of the documents embedded, in input order.
        skipped: The documents not embedded, each with its reason (already in the index with the same id and
            text sha256, a duplicate id, empty text, ...), in input order; its ``source`` is its position in the
            list given to :meth:`Index.add` (``"documents[2]"``).
        chunks: Chunks (= vectors) added to the index.
    """

    added: tuple[str, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    chunks: int = 0


def _as_document(item: DocumentLike, pos: int, auto_id) -> Document:
    """One input item as a Document; ``auto_id(pos, text)`` names a plain string."""
    if isinstance(item, Document):
        doc = item
    elif isinstance(item, str):
        doc = Document(auto_id(pos, item), item, {})
    elif isinstance(item, (tuple, list)) and len(item) == 2:
        doc_id, text = item
        if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
            raise TypeError(f"documents[{pos}]: the id of an (id, text) pair must be a str or an int, got "
                            f"{type(doc_id).__name__}")
        if not isinstance(text, str):
            raise TypeError(f"documents[{pos}] (id {doc_id!r}): text must be a str, got {type(text).__name__}")
        if not str(doc_id).strip():  # before Document() refuses it without saying which item it was
            raise _BlankId(f"documents[{pos}]: the id {doc_id!r} is blank")
        doc = Document(str(doc_id), text, {})
    else:
        raise TypeError(f"documents[{pos}]: expected a str, an (id, text) pair or a latechunk.Document, got "
                        f"{type(item).__name__}")
    if not doc.doc_id.strip():
        raise _BlankId(f"documents[{pos}]: the id {doc.doc_id!r} is blank")
    return doc


class _BlankId(ValueError):
    """A document whose id is blank: skipped with its reason (:data:`BLANK_ID_REASON`), never a stop."""


#: The skip reason of a document given with a blank id (its source is its position, ``documents[i]``).
BLANK_ID_REASON = "blank id (an id must be a non-blank string or an integer)"


def _position_id(pos: int, text: str) -> str:
    return str(pos)


def _text_id(pos: int, text: str) -> str:
    from latechunk.ingest.files import sha256_text

    return f"text-{sha256_text(text)[:16]}"


#: how to pass one text to each API that takes an iterable (Index.add said "chunker(text)", which adds nothing)
_ONE_TEXT_HINT = {"Index.add": "index.add([text])", "LateChunker.map": "chunker.map([text]), or chunker(text)"}


def _check_iterable(documents, what: str) -> None:
    if isinstance(documents, (str, bytes, Document)):
        raise TypeError(f"{what} takes an iterable of documents (str, (id, text) or Document), got one "
                        f"{type(documents).__name__}; for one text, give a list of one: {_ONE_TEXT_HINT[what]}")
