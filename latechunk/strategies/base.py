"""Strategy protocol, the registry, and SPEC parsing (``name`` or ``name:key=value,key=value``).

A strategy sees a :class:`Document` and its :class:`Tokenization`, never a model; it returns :class:`Boundaries`.
Strategies are frozen dataclasses whose fields are their parameters (validated in ``__post_init__``), registered
by name with :func:`register` so the CLI can list them. :meth:`Strategy.split` is a template method: a strategy
gives its own rule in :meth:`Strategy._chunk_spans` (the :class:`ChunkSpans` of a :class:`SplitInput`), and
``split`` does the steps every strategy shares (:mod:`latechunk.strategies._split`).
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from latechunk.sentences import SentenceSegmenter
from latechunk.strategies._markup_join import join_markup_only
from latechunk.strategies._split import (
    ChunkSpans,
    MarkupJoin,
    SentenceVectors,
    SplitInput,
    finish,
    make_boundaries,
    trim_token_spans,
)
from latechunk.types import Boundaries, Document, Tokenization

__all__ = [
    "SentenceVectors",
    "Strategy",
    "SplitInput",
    "ChunkSpans",
    "MarkupJoin",
    "expand_spec",
    "get_strategy",
    "make_boundaries",
    "parse_spec",
    "register",
    "registry",
    "trim_token_spans",
]

_REGISTRY: dict[str, type[Strategy]] = {}


class Strategy(ABC):
    """One chunking strategy. Subclasses are frozen dataclasses; their fields are the parameters.

    Each field should carry ``metadata={"help": "..."}`` for ``latechunk strategies``. A subclass gives its own rule
    in :meth:`_chunk_spans`; :meth:`split`, which calls it, is the same for every strategy.
    """

    name: ClassVar[str] = ""
    #: one line: what the strategy bets about where a fact ends
    bet: ClassVar[str] = ""
    #: True when split() needs sentence vectors (``semantic``); the pipeline then passes ``sentence_vectors``
    needs_sentence_vectors: ClassVar[bool] = False

    def split(
        self,
        doc: Document,
        tok: Tokenization,
        sentence_vectors: SentenceVectors | None = None,
        sentences: SentenceSegmenter | None = None,
    ) -> Boundaries:
        """Cut ``doc`` into chunks: the strategy's own rule (:meth:`_chunk_spans`, told in its class docstring),
        then the steps every strategy shares.

        1. A strategy with :attr:`needs_sentence_vectors` refuses a call without ``sentence_vectors``.
        2. The strategy's :meth:`_chunk_spans` of the document (:class:`SplitInput`).
        3. On markdown input with more than one chunk, a chunk of markup alone joins a neighbour as the
           strategy's :class:`MarkupJoin` says (:func:`~latechunk.strategies._markup_join.join_markup_only`),
           taking that neighbour's heading path and context.
        4. The spans shifted to document positions and made :class:`Boundaries`
           (:func:`~latechunk.strategies._split.finish`).

        Args:
            doc: The document.
            tok: Its one whole-document tokenization.
            sentence_vectors: Only for strategies with ``needs_sentence_vectors``: maps sentence token spans to vectors.
            sentences: The run's sentence segmenter, shared by every strategy of the run so that a document is
                segmented once (the pipeline passes it); None: a fresh in-process one for this call.

        Returns:
            Boundaries whose token spans cover content tokens only and whose char spans are exact slices: int32
            (n_chunks, 2) half-open token spans (positions in ``tok``) and char spans, with heading paths and
            contexts where the strategy gives them; no chunk for a document without a content token.

        Raises:
            ValueError: if the strategy needs sentence vectors and ``sentence_vectors`` is None; on a ``markdown``
                metadata value that is not a flag, where the strategy reads it; as the strategy's own rule (e.g.
                ``semantic``'s malformed sentence vectors).
            ImportError: as the strategy's own rule (``code``: a grammar that is not installed).
        """
        if self.needs_sentence_vectors and sentence_vectors is None:
            raise ValueError(
                f"{self.name}: split() needs sentence_vectors, a callable (doc, tok, sentence_token_spans (m, 2) "
                "int32) -> (m, dim) sentence vectors; the pipeline passes it (latechunk chunk/embed with a model)"
            )
        given = SplitInput(doc, tok, sentence_vectors, sentences)
        chunks = self._chunk_spans(given)
        spans = np.asarray(chunks.spans, dtype=np.int64).reshape(-1, 2)
        paths, contexts, join = chunks.heading_paths, chunks.contexts, chunks.markup
        if join is not None and given.joins_markup(spans):
            spans, owner = join_markup_only(spans, given.carried, join.budget, join.cost, join.cuts(), join.trailing)
            paths = None if paths is None else tuple(paths[o] for o in owner.tolist())
            contexts = None if contexts is None else tuple(contexts[o] for o in owner.tolist())
        return finish(doc, tok, spans, self.spec, paths, contexts, given.content)

    @abstractmethod
    def _chunk_spans(self, given: SplitInput) -> ChunkSpans:
        """The strategy's own rule: its chunks of ``given.doc`` as content-relative token spans, with their
        heading paths and contexts, and how its chunks of markup alone may join a neighbour (:meth:`split` makes
        that join and the Boundaries).

        Args:
            given: The document, its tokenization and content tokens, the run's sentence segmenter and the
                sentence vectors.

        Returns:
            The :class:`ChunkSpans`.
        """

    def sentence_paragraphs(self) -> int | None:
        """Which paragraphs' sentences :meth:`split` reads, so the pipeline can segment them ahead, in worker
        processes (:meth:`latechunk.sentences.SentenceSegmenter.presegment`).

        Returns:
            None: no sentences; 0: every paragraph; ``k``: paragraphs that hold a line of more than ``k``
            tokens. A hint for speed only: a paragraph left out is segmented when ``split`` first asks for it.
        """
        return None

    def for_model(self, content_limit: int) -> Strategy:
        """The strategy as run for a model whose inputs hold at most ``content_limit`` content tokens: a
        parameter left to the model (``semantic``'s ``max_tokens=None``) takes its value from it. The pipeline
        calls this once per run; the :attr:`spec` of the result is the same.

        Args:
            content_limit: The model's input limit less its document frame, in tokens.

        Returns:
            ``self`` (the default: no parameter depends on the model).
        """
        return self

    def pool_spans(self, b: Boundaries, doc: Document, tok: Tokenization,
                   sentences: SentenceSegmenter | None = None) -> np.ndarray:
        """The token spans late mode pools for this strategy's chunks: by default each chunk's own token span.

        A strategy whose *indexing unit* differs from its *context unit* (``sentence_window:late_unit=sentence``:
        index a sentence's late vector, return its window) overrides this; the chunk record (text, char and token
        spans) stays the context unit, and naive mode still encodes the chunk text.

        Args:
            b: The chunks :meth:`split` returned for ``doc``.
            doc: The document.
            tok: Its whole-document tokenization.
            sentences: The run's sentence segmenter; None: a fresh in-process one.

        Returns:
            (n_chunks, 2) int64 half-open document token positions, row i for chunk i, each non-empty.
        """
        return b.token_spans.astype(np.int64)

    def cut_points(
        self, doc: Document, tok: Tokenization, sentences: SentenceSegmenter | None = None
    ) -> np.ndarray | None:
        """For a strategy with ``needs_sentence_vectors``: every token position where :meth:`split` may start or
        end a chunk, whatever the sentence vectors say, so that the pipeline can pool chunk vectors while it
        encodes, before the split (a chunk's sum of token states is then a sum of the sums between these points).

        Args:
            doc: The document.
            tok: Its whole-document tokenization.
            sentences: The run's sentence segmenter; None: a fresh in-process one.

        Returns:
            None (not known: the default; the pipeline then encodes such a document a second time to pool its
            chunks), or sorted unique int64 document token positions that hold every start and end of the chunks
            ``split`` can return for this document.
        """
        return None

    @property
    def spec(self) -> str:
        """Canonical SPEC string: ``name:key=value,...`` with every parameter, in field order (a parameter added
        after a strategy's first release is left out at its default, so earlier SPECs stay canonical)."""
        params = ",".join(f"{f.name}={_fmt(getattr(self, f.name))}" for f in dataclasses.fields(self)  # type: ignore[arg-type]
                          if not (f.metadata.get("omit_default") and getattr(self, f.name) == f.default))
        return f"{self.name}:{params}" if params else self.name

    def to_dict(self) -> dict[str, Any]:
        """The strategy as a JSON-ready dict.

        Returns:
            ``{"name": name, **parameters}``, parameters by field name with their typed values.
        """
        return {"name": self.name, **dataclasses.asdict(self)}  # type: ignore[call-overload]


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (tuple, list)):  # "1/2/3", the form _convert reads back (a "," would end the pair)
        return "/".join(_fmt(x) for x in v)
    return str(v)


def register(name: str) -> Callable[[type[Strategy]], type[Strategy]]:
    """Class decorator: register a strategy under ``name`` (the CLI lists and parses it by that name).

    The habit of chonkie's ``@chunker("late")``: a name-to-class registry filled by decorating each class.

    Args:
        name: The strategy's name, the first part of its SPEC (``name:key=value,...``); it is set as the
            class attribute ``name``.

    Returns:
        The decorator, which registers the class and returns it unchanged (apart from ``name``).

    Raises:
        ValueError: when the decorator is applied, if ``name`` is already registered.
    """

    def deco(cls: type[Strategy]) -> type[Strategy]:
        if name in _REGISTRY:
            raise ValueError(f"strategy {name!r} is already registered")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def registry() -> dict[str, type[Strategy]]:
    """All registered strategies by name (imports the built-in ones first).

    Returns:
        A new dict ``{name: strategy class}`` (changing it does not change the registry).
    """
    import latechunk.strategies  # noqa: F401  (registers the built-ins)

    return dict(_REGISTRY)


#: a SPEC's numbers as written in ASCII: Python's int() and float() also take "+5", "1_000", "٥" (Arabic-Indic
#: five) and "nan", which a SPEC must not (its canonical form would not read back as the user wrote it)
_INT = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def _int(raw: str) -> int:
    if not _INT.fullmatch(raw):
        raise ValueError(raw)
    return int(raw)


def _float(raw: str) -> float:
    if not _FLOAT.fullmatch(raw):
        raise ValueError(raw)
    return float(raw)


def _convert(cls_name: str, fname: str, ftype: Any, raw: str) -> Any:
    t = ftype if isinstance(ftype, str) else getattr(ftype, "__name__", str(ftype))
    t = t.replace(" ", "")
    try:
        if t in ("int",):
            return _int(raw)
        if t in ("float",):
            return _float(raw)
        if t in ("bool",):
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        if t.startswith(("int|None", "None|int")) or t == "Optional[int]":
            return None if raw.lower() in ("none", "") else _int(raw)
        if t.startswith("tuple[int"):  # 1/2/3; an empty element (1//2, a trailing /) is a typo, refused
            return tuple(_int(x) for x in raw.split("/"))
        if t.startswith("tuple[str"):
            items = raw.split("/")
            if not all(items):
                raise ValueError(raw)
            return tuple(items)
    except ValueError as err:
        raise ValueError(f"strategy {cls_name!r}: parameter {fname}={raw!r} is not {_KIND_WORDS.get(t, 'a valid ' + t)}"
                         ) from err
    return raw


#: how a parameter's type reads in an error (a trial read "is not a valid tuple[int,...]")
_KIND_WORDS = {
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
    "int|None": "a whole number or none",
    "Optional[int]": "a whole number or none",
    "tuple[int,...]": "a list of whole numbers separated by / (e.g. 1/2/3)",
    "tuple[str,...]": "a list of names separated by / (e.g. a/b)",
}


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Split ``name:key=value,key=value`` into the name and raw string parameters.

    Values are not converted or checked against the strategy's fields (that is :func:`get_strategy`); a value
    may be a ``|`` sweep (:func:`expand_spec`).

    Args:
        spec: A SPEC string, e.g. ``"fixed:size=256,overlap=32"``; surrounding whitespace is ignored.

    Returns:
        ``(name, params)``: the registered strategy name and ``{key: raw value string}`` in SPEC order.

    Raises:
        ValueError: on an unknown strategy name, an empty setting (``size=64,,overlap=2``, a comma at the
            start or end of the settings, or nothing after the colon: ``fixed:``), a part that is not
            ``key=value``, or a key given twice.
    """
    spec = spec.strip()
    name, colon, rest = spec.partition(":")
    name = name.strip()
    known = registry()
    if name not in known:
        raise ValueError(f"unknown strategy {name!r}; choose one of: {', '.join(sorted(known))}")
    params: dict[str, str] = {}
    if colon and not rest.strip():  # "fixed:": a setting was meant and is missing
        raise ValueError(f"strategy spec {spec!r}: nothing after ':'; give key=value settings or drop the ':'")
    parts = [p.strip() for p in rest.split(",")] if rest.strip() else []
    for i, part in enumerate(parts):
        if not part:  # a doubled, leading or trailing comma: refused, not skipped (the user meant something)
            where = ("before the first comma" if i == 0 else "after the last comma" if i == len(parts) - 1
                     else "between commas")
            raise ValueError(f"strategy spec {spec!r}: empty setting {where}; remove the extra comma")
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"strategy spec {spec!r}: expected key=value, got {part!r}")
        if key.strip() in params:
            raise ValueError(f"strategy spec {spec!r}: parameter {key.strip()!r} is given twice")
        params[key.strip()] = value.strip()
    return name, params


def get_strategy(spec: str | Strategy) -> Strategy:
    """Build a strategy from a SPEC string (``fixed:size=256,overlap=32``).

    Args:
        spec: A SPEC string (parameters not given take the strategy's defaults; a strategy's ``aliases``,
            e.g. ``chunk_size`` for ``size``, are accepted), or a :class:`Strategy`, returned as it is.

    Returns:
        The strategy instance; its :attr:`Strategy.spec` is the canonical SPEC with every parameter.

    Raises:
        ValueError: on an unknown name, an empty setting, an unknown parameter, a parameter given twice (by
            name or alias), a ``|`` sweep value, a value that does not convert to the field's type, or a value
            the strategy's ``__post_init__`` rejects (out of range, or over its bound: tokens at most
            :data:`~latechunk.strategies._common.MAX_TOKENS`); the message then starts with the SPEC.
        TypeError: if a strategy's ``__post_init__`` rejects a value's type (e.g. a bool for an integer).
    """
    if isinstance(spec, Strategy):
        return spec
    name, raw = parse_spec(spec)
    cls = registry()[name]
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    # aliases: {"chunk_size": "size"} renames a parameter; {"alias": ("field", fn)} also maps the value
    aliases = getattr(cls, "aliases", {})
    kwargs: dict[str, Any] = {}
    for key, value in raw.items():
        target = aliases.get(key, key)
        fn = None
        if isinstance(target, tuple):
            target, fn = target
        if target not in fields:
            raise ValueError(
                f"strategy {name!r} has no parameter {key!r}; its parameters are: {', '.join(fields) or '(none)'}"
            )
        if "|" in value:
            raise ValueError(f"strategy spec {spec!r}: '|' sweeps are for `latechunk compare`; give one value")
        if target in kwargs:
            raise ValueError(f"strategy spec {spec!r}: parameter {target!r} is given twice (name or alias)")
        converted = _convert(name, target, fields[target].type, value)
        kwargs[target] = fn(converted) if fn is not None else converted
    try:
        return cls(**kwargs)
    except ValueError as err:  # the strategy's own check (a range, a bound): name the SPEC the user typed
        msg, own = str(err), f"{name}: "
        raise ValueError(f"strategy spec {spec.strip()!r}: {msg.removeprefix(own)}") from err


def expand_spec(spec: str) -> list[str]:
    """Expand a sweep SPEC (``fixed:size=128|256,overlap=0``) into one SPEC per combination, in order.

    Args:
        spec: A SPEC whose values may hold ``|``-separated alternatives.

    Returns:
        One SPEC string per combination (the cartesian product, the last key varying fastest), e.g.
        ``["fixed:size=128,overlap=0", "fixed:size=256,overlap=0"]``; ``[name]`` for a SPEC without
        parameters. Values are not checked here (:func:`get_strategy` checks each SPEC).

    Raises:
        ValueError: as :func:`parse_spec` (unknown name, empty setting, malformed or repeated ``key=value``), or
            on an empty alternative (``size=32||64``, or a ``|`` at the start or end of a value).
    """
    name, raw = parse_spec(spec)
    if not raw:
        return [name]
    keys = list(raw)
    choices = [[v.strip() for v in raw[k].split("|")] for k in keys]
    for k, alternatives in zip(keys, choices):
        if len(alternatives) > 1 and not all(alternatives):  # "" would be a SPEC of its own (or the default)
            raise ValueError(
                f"strategy spec {spec.strip()!r}: empty alternative in {k}={raw[k]}; give a value between "
                "every two '|'"
            )
    return [f"{name}:" + ",".join(f"{k}={v}" for k, v in zip(keys, combo)) for combo in itertools.product(*choices)]
