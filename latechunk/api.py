"""The Python API at the package root: :class:`LateChunker` (text in, chunks with late vectors out), :class:`Chunk`,
:class:`Index` (an ``embed`` output folder: search it, add to it) and :class:`Hit`.

``import latechunk`` exposes these lazily (PEP 562), and this module imports torch, FAISS and pyarrow only inside
the methods that need them, so ``from latechunk import Chunk`` stays light.

- :class:`LateChunker` wraps :class:`~latechunk.encoder.Encoder`, :class:`~latechunk.config.PipelineConfig` and
  :func:`latechunk.pipeline.iter_embed`: each document is tokenized once and encoded once (in macro windows when
  long); each chunk vector is the mean of the token states in its token span (late chunking, Günther et al.,
  arXiv:2409.04701), or, in naive mode, the encoding of the chunk text alone. Same settings, same vectors as
  ``latechunk embed``.
- :class:`Index` reads an output folder as ``latechunk search`` does (the query encoded by the model recorded in
  the manifest, with its query prompt; :func:`latechunk.index.search_index`), and :meth:`Index.add` appends to it
  (:mod:`latechunk.ingest.append`, the Python side of ``latechunk embed --append``).

By concern: this module holds :class:`LateChunker`; :mod:`latechunk.api_index` holds :class:`Index`, and
:mod:`latechunk.api_types` what the API takes and gives (:class:`Chunk`, :class:`Hit`, :class:`Context`,
:class:`AddResult`, the input items made Documents). Every name is importable from here.

Tests: ``tests/api/test_api.py``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from latechunk.api_index import Index, _caller_positions, recorded_model_message  # noqa: F401  (re-exported)
from latechunk.api_types import (  # noqa: F401  (re-exported)
    _ONE_TEXT_HINT,
    BLANK_ID_REASON,
    AddResult,
    Chunk,
    Context,
    DocumentLike,
    Hit,
    _as_document,
    _BlankId,
    _check_iterable,
    _position_id,
    _text_id,
)
from latechunk.config import DEFAULT_STRATEGY, MODES, PipelineConfig
from latechunk.types import CHUNKER_MARKDOWN_KEY, Document, Skipped

if TYPE_CHECKING:
    from latechunk.encoder import Encoder
    from latechunk.models import LoadedModel

__all__ = ["AddResult", "Chunk", "Context", "Hit", "Index", "LateChunker"]

log = logging.getLogger("latechunk")


class LateChunker:
    r"""Chunk texts and embed every chunk in one call: ``chunker(text) -> list[Chunk]``.

    Each document is tokenized once and encoded once (overlapping macro windows when it is longer than the
    model's input); in late mode each chunk vector is the mean of the token states in its token span (late
    chunking, Günther et al., arXiv:2409.04701), in naive mode the model's encoding of the chunk text alone.
    The vectors equal ``latechunk embed``'s with the same settings.

    Args:
        model: A Hugging Face model id or local folder (``None``: the bundled all-MiniLM-L6-v2, offline), or an
            :class:`~latechunk.encoder.Encoder` / :class:`~latechunk.models.LoadedModel` already loaded (then
            ``device`` and ``trust_remote_code`` do not apply).
        strategy: A SPEC (``"fixed:size=256,overlap=32"``; ``latechunk strategies`` lists them) or a Strategy;
            ``None``: ``embed``'s default, :data:`latechunk.config.DEFAULT_STRATEGY` (``semantic``).
        mode: ``"late"``, ``"naive"``, ``"contextual"`` (naive over ``header + "\n\n" + text``) or ``"fused"``
            (late + naive, each unit-normalised, summed: :func:`latechunk.pipeline.fused_vectors`).
        macro_window: Macro-window size in tokens, frame included (``None``: the model's sentence-transformers
            ``max_seq_length`` where it has one, 256 for all-MiniLM-L6-v2, else its input limit).
        device: ``"auto"`` (CUDA when present), ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"``.
        normalize: L2-normalise every chunk vector.
        trust_remote_code: Run the model repository's own code (only for models that need it).
        progress: Show a progress bar (documents) in :meth:`map` (on stderr when it is a terminal; in a
            notebook, its widget).
        backend: ``"torch"`` (default), ``"onnx"`` or ``"onnx-int8"``: ONNX Runtime on the CPU
            (:class:`~latechunk.encoder.Encoder`'s ``backend``; not for a model given as an Encoder).
        dtype: ``"float32"``, ``"bfloat16"`` or ``"float16"`` (or ``"fp32"``, ``"bf16"``, ``"fp16"``) for the
            encoder's weights and forward; ``None``: :func:`latechunk.encoder.default_dtype` (bf16 on CUDA and on
            CPUs with AMX or AVX-512 BF16, else fp32), as ``latechunk embed``. Not for a model given as an Encoder.
        compile: Run the forward through ``torch.compile`` (:class:`~latechunk.encoder.Encoder`'s ``compile``,
            ``latechunk embed --compile``): the first call of each batch shape compiles (tens of seconds on a
            CPU); measured 0.99-1.15x the eager pipeline on an fp32 CPU, none in bf16 (not yet measured on a
            GPU). Not for a model given as an Encoder.
        markdown: Whether the documents are markdown (front matter, headings, fences, tables parsed as such, as
            ``embed`` reads a ``.md`` file). ``None`` (default): a document is markdown when its metadata names a
            ``.md``/``.markdown`` file (``source``, else ``file_path`` or ``file_name``), so a plain str is read
            as plain text; ``True``/``False`` for every document whose metadata has no ``markdown`` key.

    Raises:
        ValueError: on an unknown strategy, mode or dtype, ``dtype`` or ``compile`` with an Encoder, ``compile``
            with an ONNX backend, a bad parameter, a model that does not load, a macro window
            the model cannot take, or late mode with a model that does not mean-pool (before the weights load
            where the model's files tell).
        TypeError: if ``markdown`` is not a bool or None.
    """

    def __init__(
        self,
        model: str | os.PathLike | Encoder | LoadedModel | None = None,
        strategy: Any = None,
        mode: str = "late",
        macro_window: int | None = None,
        device: str = "auto",
        *,
        normalize: bool = True,
        trust_remote_code: bool = False,
        progress: bool = False,
        backend: str = "torch",
        dtype: str | None = None,
        compile: bool = False,
        markdown: bool | None = None,
    ) -> None:
        if markdown is not None and not isinstance(markdown, bool):
            raise TypeError(f"markdown must be True, False or None, got {markdown!r}")
        self.markdown = markdown
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
        self.config = PipelineConfig(strategies=(DEFAULT_STRATEGY if strategy is None else strategy,), modes=(mode,),
                                     normalize=normalize, macro_window=macro_window)
        from latechunk.encoder import Encoder
        from latechunk.models import LoadedModel, ModelFacts

        if isinstance(model, Encoder):
            if dtype is not None:
                raise ValueError("dtype applies when LateChunker loads the model; this Encoder is already loaded "
                                 f"(in {str(model.dtype).replace('torch.', '')})")
            if compile:
                raise ValueError("compile applies when LateChunker loads the model; this Encoder is already loaded "
                                 "(build it with Encoder(..., compile=True))")
            encoder = model
        else:
            if not isinstance(model, LoadedModel):  # what the model's files tell, before torch loads a weight
                self.config.check_model(ModelFacts.read(None if model is None else str(model)))
            encoder = Encoder(model, device=device, trust_remote_code=trust_remote_code, backend=backend, dtype=dtype,
                              compile=compile)
        self.config.check_model(encoder.facts)
        self.encoder: Encoder = encoder
        """The :class:`~latechunk.encoder.Encoder` (speaks sentence-transformers: ``encode``, ``encode_query``,
        ``encode_document``, ``prompts``, ``max_seq_length``)."""
        self.progress = progress
        self._segmenter = None

    @property
    def dim(self) -> int:
        """The vector dimension."""
        return self.encoder.dim

    @property
    def model_name(self) -> str:
        """The model as asked (``"all-MiniLM-L6-v2"`` for the default)."""
        return self.encoder.name

    @property
    def strategy(self) -> str:
        """The strategy's canonical SPEC (``Chunk.strategy``)."""
        return self.config.specs[0]

    @property
    def mode(self) -> str:
        """``"late"``, ``"naive"``, ``"contextual"`` or ``"fused"``."""
        return self.config.modes[0]

    def __repr__(self) -> str:
        return (f"LateChunker(model={self.model_name!r}, strategy={self.strategy!r}, mode={self.mode!r}, "
                f"device={str(self.encoder.device)!r}, dtype={str(self.encoder.dtype).replace('torch.', '')!r})")

    def __call__(self, text: str | Document) -> list[Chunk]:
        """Chunk and embed one document.

        Args:
            text: The text (its chunks get ``doc_id`` ``"0"``) or a :class:`~latechunk.types.Document`.

        Returns:
            Its chunks in order; ``[]`` for a text with no tokens (empty or whitespace-only), or one whose
            chunking failed (the reason is logged as a warning on the ``latechunk`` logger).

        Raises:
            TypeError: if ``text`` is neither a str nor a Document.
        """
        if not isinstance(text, (str, Document)):
            raise TypeError(f"LateChunker takes a str or a latechunk.Document, got {type(text).__name__}; "
                            "for many documents use chunker.map(documents)")
        return next(iter(list(self.map([text]))))  # the whole generator runs: the prefetch thread ends

    def map(self, documents: Iterable[DocumentLike]) -> Iterator[list[Chunk]]:
        """Chunk and embed many documents, streamed: one list of chunks per input document, in input order.

        The documents are read lazily (in a background thread, one group of about ``group_tokens`` tokens
        ahead), and the lists of a group come out once the group is encoded, so memory stays bounded by a
        group, not by the input.

        Args:
            documents: An iterable of ``str`` (ids ``"0"``, ``"1"``, ... by input position), ``(id, text)``
                pairs (an int id is taken as text: ``1`` is ``"1"``) or :class:`~latechunk.types.Document`.

        Yields:
            One ``list[Chunk]`` per input document, in input order (so ``zip(documents, chunker.map(documents))``
            pairs them). A document that gives no chunk yields ``[]``, its reason logged as a warning on the
            ``latechunk`` logger: no tokens (empty or whitespace-only text), chunking failed, a blank id, a
            markdown text of nothing but front matter, or a duplicate id: as in ``latechunk embed``, the first
            document with an id wins and a later one with the same id is skipped (an auto id ``"3"`` can meet an
            explicit ``("3", text)``).

        Raises:
            TypeError: for an item that is not a str, (id, text) pair or Document (naming its position), or a
                single str or Document given instead of an iterable.
        """
        _check_iterable(documents, "LateChunker.map")
        from latechunk.pipeline import iter_embed

        total = len(documents) if isinstance(documents, Sequence) else None
        bar = None
        if self.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=total, unit="doc", desc="chunk", file=sys.stderr, disable=None)  # on a terminal only
        groups = iter_embed(self._items(documents), self.encoder, self.config, segmenter=self._sentences())
        try:
            with contextlib.closing(groups):  # an early stop ends the prefetch thread
                for g in groups:
                    for s in g.skipped:
                        log.warning("document %r not chunked: %s", s.doc_id, s.reason)
                    for chunks in self._group_chunks(g):
                        yield chunks
                        if bar is not None:
                            bar.update(1)
        finally:
            if bar is not None:
                bar.close()

    # ------------------------------------------------------------------ internals
    def _sentences(self):
        """This chunker's sentence segmenter (in this process; its cache serves every call)."""
        if self._segmenter is None:
            from latechunk.sentences import SentenceSegmenter

            self._segmenter = SentenceSegmenter(workers=0)
        return self._segmenter

    def _items(self, documents: Iterable[DocumentLike]) -> Iterator[Document | Skipped]:
        """The input as Documents, a repeated id as a Skipped: the first occurrence with text wins, as in
        ``embed``'s reader (an empty or whitespace-only text, or one with a lone surrogate, is skipped by the
        pipeline and claims no id). With ``markdown`` set, a document whose metadata has no ``markdown`` key is
        marked with :data:`~latechunk.types.CHUNKER_MARKDOWN_KEY` (left out of its chunks)."""
        from latechunk.io import FRONT_MATTER_ONLY_REASON, front_matter_only, surrogate_reason
        from latechunk.strategies._markdown import is_markdown_input

        first: dict[str, int] = {}
        for pos, item in enumerate(documents):
            try:
                doc = _as_document(item, pos, _position_id)
            except _BlankId:  # a bad document, not a bad call: [] for it and its reason logged, the rest go on
                yield Skipped(f"documents[{pos}]", BLANK_ID_REASON, f"documents[{pos}]")
                continue
            if self.markdown is not None and "markdown" not in (doc.metadata or {}):
                doc = Document(doc.doc_id, doc.text, {**(doc.metadata or {}), CHUNKER_MARKDOWN_KEY: self.markdown})
            try:
                front_only = front_matter_only(doc.text) and is_markdown_input(doc)
            except ValueError:  # a bad `markdown` flag: the pipeline skips the document, naming it
                front_only = False
            if front_only:  # as embed skips such a .md file (a trial got a chunk of front matter alone)
                yield Skipped(doc.doc_id, FRONT_MATTER_ONLY_REASON, f"documents[{pos}]")
                continue
            if doc.doc_id in first:
                yield Skipped(doc.doc_id, f"duplicate doc_id: documents[{pos}] repeats the id of "
                                          f"documents[{first[doc.doc_id]}] (the first one wins)", f"documents[{pos}]")
                continue
            if doc.text.strip() and not surrogate_reason(doc.text):
                first[doc.doc_id] = pos
            yield doc

    def _group_chunks(self, g) -> Iterator[list[Chunk]]:
        """One list of chunks per input item of a pipeline group, in input order."""
        spec, mode = self.strategy, self.mode
        bounds = g.boundaries.get(spec, [])
        vecs = g.vectors.get(spec, {}).get(mode)
        if vecs is not None:
            vecs.setflags(write=False)
        where = {id(d): k for k, d in enumerate(g.documents)}
        starts = np.concatenate([[0], np.cumsum([len(b) for b in bounds], dtype=np.int64)]).tolist()
        for item in g.items:
            k = where.get(id(item)) if isinstance(item, Document) else None
            if k is None:
                yield []
                continue
            doc, b, row = g.documents[k], bounds[k], starts[k]
            yield [
                Chunk(text=doc.text[cs:ce], doc_id=doc.doc_id, chunk_index=i, char_start=cs, char_end=ce,
                      token_start=ts, token_end=te, heading_path=tuple(hp), strategy=spec, mode=mode,
                      embedding=vecs[row + i],
                      metadata={key: v for key, v in doc.metadata.items() if key != CHUNKER_MARKDOWN_KEY})
                for i, ((cs, ce), (ts, te), hp) in enumerate(zip(b.char_spans.tolist(), b.token_spans.tolist(),
                                                                  b.heading_paths))
            ]
