"""Core data types of latechunk: frozen dataclasses, validated on construction.

Units are in the field names: ``char_*`` fields count characters (Python ``str`` indices, Unicode code points),
``token_*`` fields count positions in the one whole-document :class:`Tokenization`, special tokens included
(``[CLS]`` is position 0). Every span is half-open ``[start, end)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

__all__ = ["CHUNKER_MARKDOWN_KEY", "DEFAULT_ID_FIELDS", "RecordFields", "Document", "Span", "Tokenization", "Boundaries", "ChunkVectors", "Skipped", "Mode"]

Mode = Literal["late", "naive", "contextual", "fused"]

#: The metadata key ``LateChunker(markdown=...)`` sets on the documents it is given (never on the chunks it
#: returns); :func:`latechunk.strategies._markdown.is_markdown_input` reads it after the document's own ``markdown``.
CHUNKER_MARKDOWN_KEY = "_latechunk_markdown"


def _as_int32_spans(name: str, value, owner: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.size == 0:
        arr = arr.reshape(0, 2)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{owner}: {name} must have shape (n, 2), got {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{owner}: {name} must be integer, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.int32)
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True)
class Document:
    """One input document.

    Attributes:
        doc_id: Stable identifier; for a file input, its path relative to the input root.
        text: The document text (``str``); every char span indexes into it.
        metadata: Free-form, JSON-serialisable mapping (source path, title, ...).

    Raises:
        TypeError: if ``doc_id`` or ``text`` is not a ``str``.
        ValueError: if ``doc_id`` is empty.
    """

    doc_id: str
    text: str
    metadata: Mapping = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.doc_id, str):
            raise TypeError(f"Document.doc_id must be str, got {type(self.doc_id).__name__}")
        if not self.doc_id:
            raise ValueError("Document.doc_id must be a non-empty string")
        if not isinstance(self.text, str):
            raise TypeError(f"Document {self.doc_id!r}: text must be str, got {type(self.text).__name__}")


@dataclass(frozen=True)
class Span:
    """A half-open ``[start, end)`` range with ``0 <= start < end``, in the unit its field name states
    (``char_span``, ``token_span``).

    Attributes:
        start: First position.
        end: One past the last position.

    Raises:
        ValueError: unless ``0 <= start < end`` (an empty span raises).
    """

    start: int
    end: int

    def __post_init__(self) -> None:
        if not (0 <= self.start < self.end):
            raise ValueError(f"Span needs 0 <= start < end, got [{self.start}, {self.end})")

    def __len__(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, eq=False)
class Tokenization:
    """One whole-document tokenization, made exactly once per document.

    Layout of ``input_ids``: ``lead`` frame tokens (e.g. ``[CLS]`` then the instruction prefix), the document's
    content tokens, then ``trail`` frame tokens (e.g. ``[SEP]``). A macro window re-uses the same frame around a
    slice of content tokens, so each window is a proper model input.

    Attributes:
        input_ids: (n_tokens,), int64. Token ids, frame included.
        offsets: (n_tokens, 2), int32. Character ``[start, end)`` of each token in the document text;
            ``(0, 0)`` for frame (special and prefix) tokens.
        special_tokens_mask: (n_tokens,), bool. True for frame tokens (special tokens and instruction-prefix
            tokens): never inside a chunk's token span.
        n_lead: Number of frame tokens before the content.
        n_trail: Number of frame tokens after the content.

    Raises:
        ValueError: on inconsistent shapes, or a frame that does not match the mask.
    """

    input_ids: np.ndarray
    offsets: np.ndarray
    special_tokens_mask: np.ndarray
    n_lead: int
    n_trail: int

    def __post_init__(self) -> None:
        ids = np.ascontiguousarray(self.input_ids, dtype=np.int64).reshape(-1)
        offs = _as_int32_spans("offsets", self.offsets, "Tokenization")
        mask = np.ascontiguousarray(self.special_tokens_mask, dtype=bool).reshape(-1)
        n = ids.shape[0]
        if offs.shape[0] != n or mask.shape[0] != n:
            raise ValueError(
                f"Tokenization: input_ids ({n}), offsets ({offs.shape[0]}) and special_tokens_mask "
                f"({mask.shape[0]}) must have the same length"
            )
        if self.n_lead < 0 or self.n_trail < 0 or self.n_lead + self.n_trail > n:
            raise ValueError(f"Tokenization: bad frame n_lead={self.n_lead}, n_trail={self.n_trail}, n={n}")
        if not mask[: self.n_lead].all() or not mask[n - self.n_trail :].all() or mask[self.content_start : self.content_end].any():
            raise ValueError("Tokenization: special_tokens_mask must be True exactly on the lead/trail frame")
        for name, arr in (("input_ids", ids), ("special_tokens_mask", mask)):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "offsets", offs)

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    @property
    def content_start(self) -> int:
        """Token position of the first content token."""
        return self.n_lead

    @property
    def content_end(self) -> int:
        """Token position one past the last content token."""
        return len(self) - self.n_trail

    @property
    def n_content(self) -> int:
        """Number of content (non-frame) tokens."""
        return self.content_end - self.content_start


@dataclass(frozen=True, eq=False)
class Boundaries:
    """The chunks of one document: token spans and char spans in one coordinate system.

    Attributes:
        doc_id: The document's id.
        token_spans: (n_chunks, 2), int32. Half-open token positions into the document's :class:`Tokenization`.
        char_spans: (n_chunks, 2), int32. Half-open character offsets; ``text[s:e]`` is the chunk text.
        heading_paths: n_chunks tuples of heading titles, outermost first (``()`` where none).
        contexts: n_chunks strings of extra embedding context (e.g. a table header for a chunk of body rows);
            ``""`` where none. Never part of the chunk text.
        strategy: The spec of the strategy that made these boundaries.

    Raises:
        ValueError: if shapes differ, a span is empty, or the per-chunk tuples have the wrong length.
    """

    doc_id: str
    token_spans: np.ndarray
    char_spans: np.ndarray
    heading_paths: tuple[tuple[str, ...], ...] = ()
    contexts: tuple[str, ...] = ()
    strategy: str = ""

    def __post_init__(self) -> None:
        ts = _as_int32_spans("token_spans", self.token_spans, f"Boundaries({self.doc_id!r})")
        cs = _as_int32_spans("char_spans", self.char_spans, f"Boundaries({self.doc_id!r})")
        n = ts.shape[0]
        if cs.shape[0] != n:
            raise ValueError(f"Boundaries({self.doc_id!r}): {n} token spans but {cs.shape[0]} char spans")
        if n and ((ts[:, 0] < 0).any() or (ts[:, 1] <= ts[:, 0]).any()):
            raise ValueError(f"Boundaries({self.doc_id!r}): every token span needs 0 <= start < end")
        if n and ((cs[:, 0] < 0).any() or (cs[:, 1] <= cs[:, 0]).any()):
            raise ValueError(f"Boundaries({self.doc_id!r}): every char span needs 0 <= start < end")
        hp = tuple(tuple(p) for p in self.heading_paths) if self.heading_paths else ((),) * n
        ctx = tuple(self.contexts) if self.contexts else ("",) * n
        if len(hp) != n or len(ctx) != n:
            raise ValueError(f"Boundaries({self.doc_id!r}): heading_paths/contexts must have {n} entries")
        object.__setattr__(self, "token_spans", ts)
        object.__setattr__(self, "char_spans", cs)
        object.__setattr__(self, "heading_paths", hp)
        object.__setattr__(self, "contexts", ctx)

    def __len__(self) -> int:
        return int(self.token_spans.shape[0])

    def texts(self, text: str) -> list[str]:
        """The chunk texts: ``[text[s:e] for s, e in char_spans]``.

        Args:
            text: The document's text (the one the char spans index).

        Returns:
            ``len(self)`` strings, in chunk order.
        """
        return [text[s:e] for s, e in self.char_spans.tolist()]


@dataclass(frozen=True, eq=False)
class ChunkVectors:
    """Chunk vectors of many documents, packed.

    Attributes:
        vectors: (total_chunks, dim), float32. Row i is chunk i.
        doc_ids: n_docs document ids, in order.
        chunk_index: (total_chunks,), int32. Index of each chunk inside its document.
        cu_chunks: (n_docs + 1,), int32. Cumulative chunk counts; document j owns rows
            ``cu_chunks[j]:cu_chunks[j+1]`` (the packed-offsets idea of flash-attn ``cu_seqlens``, faiss ``lims``).
        mode: ``"late"``, ``"naive"``, ``"contextual"`` (naive encoding with a contextual header) or ``"fused"``
            (late + naive, each unit-normalised).
        normalized: Whether rows are L2-normalised.

    Raises:
        ValueError: on inconsistent shapes or a non-finite vector.
    """

    vectors: np.ndarray
    doc_ids: tuple[str, ...]
    chunk_index: np.ndarray
    cu_chunks: np.ndarray
    mode: Mode
    normalized: bool = True

    def __post_init__(self) -> None:
        v = np.asarray(self.vectors)
        if v.ndim != 2:
            raise ValueError(f"ChunkVectors.vectors must be 2-D (total_chunks, dim), got shape {v.shape}")
        v = np.ascontiguousarray(v, dtype=np.float32)
        ci = np.ascontiguousarray(self.chunk_index, dtype=np.int32).reshape(-1)
        cu = np.ascontiguousarray(self.cu_chunks, dtype=np.int32).reshape(-1)
        ids = tuple(self.doc_ids)
        if cu.shape[0] != len(ids) + 1 or cu[0] != 0 or cu[-1] != v.shape[0] or (np.diff(cu) < 0).any():
            raise ValueError("ChunkVectors: cu_chunks must be non-decreasing, start at 0 and end at total_chunks")
        if ci.shape[0] != v.shape[0]:
            raise ValueError("ChunkVectors: chunk_index must have one entry per vector")
        if self.mode not in ("late", "naive", "contextual", "fused"):
            raise ValueError(f"ChunkVectors.mode must be 'late', 'naive', 'contextual' or 'fused', got {self.mode!r}")
        if v.size and not np.isfinite(v).all():
            raise ValueError("ChunkVectors: vectors contain NaN or inf")
        for name, arr in (("vectors", v), ("chunk_index", ci), ("cu_chunks", cu)):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "doc_ids", ids)

    @property
    def dim(self) -> int:
        """Vector dimension, ``vectors.shape[1]``."""
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return int(self.vectors.shape[0])


@dataclass(frozen=True)
class Skipped:
    """An input item that was not embedded, and why (every input is either embedded or listed as skipped).

    Attributes:
        doc_id: The document's id; for an item without one, where it is (``corpus.jsonl:12``).
        reason: Why, in words (``"empty or whitespace-only (no tokens)"``, ``"chunking failed: ..."``).
        source: Where the item came from, relative to its input root (``notes/a.md``, ``corpus.jsonl:12``);
            ``""`` where not known.
    """

    doc_id: str
    reason: str
    source: str = ""


#: the fields (JSONL) or columns (tables) a record's id is read from by default, the first present one
DEFAULT_ID_FIELDS = ("id", "_id", "doc_id")
#: :attr:`RecordFields.metadata` that keeps every field (``--metadata-fields all``)
ALL_METADATA = ("all",)


@dataclass(frozen=True)
class RecordFields:
    """Which field (JSONL) or column (parquet, Arrow, Hugging Face datasets) of a record holds its id, text and
    title: ``embed --id-field/--text-field/--title-field``. The defaults read ``id`` (else ``_id``, else
    ``doc_id``), ``text`` and ``title``; a corpus whose text is in ``body`` or ``contents`` sets ``text``.

    Args:
        id: The id field; None: the first of ``id``, ``_id``, ``doc_id`` present.
        text: The text field.
        title: The title field (optional in each record; its value is put before the text, as ``title``'s).
        metadata: The other fields kept with each chunk (``embed --metadata-fields``), in the chunk table's
            ``metadata`` column: ``()`` none (the default), field names, or :data:`ALL_METADATA` (every field
            but the id, text, title and ``url``, which have their own columns).
        encoding_errors: Bytes that are not UTF-8 in a file, line or record (``--encoding-errors``): ``"strict"``
            skips the item, naming the bytes' offsets; ``"replace"`` reads it with U+FFFD in their place and lists
            it as degraded (``Document.metadata["degraded"]``, the manifest's ``degraded``).

    Raises:
        ValueError: for a name that is empty, the same name for two roles, or a metadata field that is the id,
            text, title or ``url`` field; an ``encoding_errors`` other than strict or replace.
    """

    id: str | None = None
    text: str = "text"
    title: str = "title"
    metadata: tuple[str, ...] = ()
    encoding_errors: str = "strict"

    def __post_init__(self) -> None:
        if self.encoding_errors not in ("strict", "replace"):
            raise ValueError(f"--encoding-errors must be strict or replace, got {self.encoding_errors!r}")
        for role in ("id", "text", "title"):
            name = getattr(self, role)
            if name is not None and (not isinstance(name, str) or not name.strip()):
                raise ValueError(f"--{role}-field must be a field name, got {name!r}")
        names = [n for n in (self.id, self.text, self.title) if n is not None]
        if len(set(names)) != len(names):
            raise ValueError(f"--id-field, --text-field and --title-field must name different fields, got "
                             f"id={self.id!r}, text={self.text!r}, title={self.title!r}")
        meta = self.metadata
        if isinstance(meta, str) or not all(isinstance(m, str) and m.strip() for m in meta):
            raise ValueError(f"--metadata-fields must be field names (or all), got {meta!r}")
        object.__setattr__(self, "metadata", tuple(dict.fromkeys(m.strip() for m in meta)))
        if ALL_METADATA[0] in self.metadata and self.metadata != ALL_METADATA:
            raise ValueError(f"--metadata-fields all keeps every field; it takes no other name, got {list(meta)}")
        own = sorted(set(self.metadata) & {*self.ids, self.text, self.title, "url"})
        if own:
            raise ValueError(f"--metadata-fields: {', '.join(map(repr, own))} has its own column (id, text, title "
                             "and url are never metadata)")

    @property
    def ids(self) -> tuple[str, ...]:
        """The id fields looked for, in order."""
        return DEFAULT_ID_FIELDS if self.id is None else (self.id,)

    @property
    def all_metadata(self) -> bool:
        """Whether every field that is not the id, text, title or ``url`` is kept (``--metadata-fields all``)."""
        return self.metadata == ALL_METADATA

    def metadata_names(self, names) -> list[str]:
        """Which of a record's (or a table's) field names are kept as metadata, in their order.

        Args:
            names: Field or column names (an iterable of str).

        Returns:
            The kept names (``[]`` when none are kept).
        """
        if not self.metadata:
            return []
        if self.all_metadata:
            skip = {*self.ids, self.text, self.title, "url"}
            return [n for n in names if n not in skip]
        present = set(names)
        return [n for n in self.metadata if n in present]

    def metadata_of(self, record: Mapping) -> dict:
        """The metadata fields of one record (a JSON object, a table row as a dict) that it has.

        Args:
            record: The record's fields.

        Returns:
            ``{field: value}`` of the kept fields present in ``record``, in the record's order (``{}`` when
            none are kept); a null value is kept as None.
        """
        return {k: record[k] for k in self.metadata_names(record)}

    def to_dict(self) -> dict:
        """The run.json form: only the fields that differ from the defaults (``{}`` for the defaults, so folders
        written before this setting read the same); ``metadata`` as a list."""
        default = RecordFields()
        d = {k: getattr(self, k) for k in ("id", "text", "title") if getattr(self, k) != getattr(default, k)}
        if self.metadata:
            d["metadata"] = list(self.metadata)
        if self.encoding_errors != default.encoding_errors:
            d["encoding_errors"] = self.encoding_errors
        return d

    @classmethod
    def from_dict(cls, d) -> RecordFields:
        """The fields of a run.json ``record_fields`` record (:meth:`to_dict`; ``{}`` or None: the defaults)."""
        d = d or {}
        return cls(**{k: d[k] for k in ("id", "text", "title", "encoding_errors") if k in d},
                   **({"metadata": tuple(d["metadata"])} if d.get("metadata") else {}))
