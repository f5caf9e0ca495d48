"""``code``: source files cut at function and class boundaries, parsed with tree-sitter.

The parsers are the tree-sitter grammars published as PyPI wheels (``tree-sitter-python``, ``-javascript``,
``-typescript``, ``-go``, ``-rust``, ``-java``: core dependencies, compiled into the wheels, never downloaded at run
time), driven by the ``tree-sitter`` Python bindings. The rule follows the code splitters of LlamaIndex
(``CodeSplitter``) and chonkie (``CodeChunker``), which also walk a tree-sitter syntax tree and merge small nodes up
to a budget; here a definition is kept whole as one chunk, and the budget is in the embedding model's tokens.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, ClassVar

import numpy as np

from latechunk.strategies._common import PieceSplitter, check_int, merge_pieces, snap_table
from latechunk.strategies.base import ChunkSpans, SplitInput, Strategy, register
from latechunk.types import Document

__all__ = ["LANGUAGES", "SUFFIX_LANGUAGES", "Code", "language_of", "parse_tree"]

#: language name -> (module of its PyPI grammar wheel, the function in it that returns the language)
LANGUAGES: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
}

#: file suffix (lower case) -> language; ``latechunk.io`` reads the first six kinds as inputs (``CODE_SUFFIXES``)
SUFFIX_LANGUAGES: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java",
}

_FUNCTIONS_JS = {"function_declaration", "generator_function_declaration", "class_declaration",
                 "method_definition"}
_TS_EXTRA = {"abstract_class_declaration", "interface_declaration", "enum_declaration", "internal_module",
             "module", "function_signature", "abstract_method_signature"}
#: node types that are definitions (one chunk each), per language
_DEFINITIONS: dict[str, frozenset[str]] = {
    "python": frozenset({"function_definition", "class_definition", "decorated_definition"}),
    "javascript": frozenset(_FUNCTIONS_JS),
    "typescript": frozenset(_FUNCTIONS_JS | _TS_EXTRA),
    "tsx": frozenset(_FUNCTIONS_JS | _TS_EXTRA),
    "go": frozenset({"function_declaration", "method_declaration", "type_declaration"}),
    "rust": frozenset({"function_item", "function_signature_item", "struct_item", "enum_item", "union_item",
                       "impl_item", "trait_item", "mod_item", "macro_definition"}),
    "java": frozenset({"class_declaration", "interface_declaration", "enum_declaration", "record_declaration",
                       "annotation_type_declaration", "method_declaration", "constructor_declaration",
                       "compact_constructor_declaration"}),
}
#: nodes that belong to the definition right after them (no blank line between): comments, attributes, decorators
_LEADING = frozenset({"comment", "line_comment", "block_comment", "attribute_item", "decorator"})
#: variable declarations that define a function when their value is one (``const f = () => {}``)
_VARIABLE_DECLS = frozenset({"lexical_declaration", "variable_declaration"})
_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function",
                              "class"})
#: separator levels inside a definition that has no members to cut at (blank lines, lines, tokens; no sentences)
_CODE_LEVELS = ("paragraph", "line", "token")
#: code's default ``min_tokens`` (``max_tokens`` when that is smaller, as semantic's)
_DEFAULT_MIN_TOKENS = 24


def language_of(doc: Document) -> str:
    """The language of a document, from the suffix of its source (``metadata["source"]``), else of its id.

    Args:
        doc: The document.

    Returns:
        A key of :data:`LANGUAGES`, or ``""`` when the suffix names none (a markdown or text file, a JSONL line
        ``corpus.jsonl:12``, no suffix).
    """
    source = str(doc.metadata.get("source", "") or doc.doc_id)
    return SUFFIX_LANGUAGES.get(PurePosixPath(source).suffix.lower(), "")


@functools.cache
def _language(name: str) -> Any:
    import importlib

    try:
        import tree_sitter
    except ImportError as err:  # a core dependency: only a broken install lacks it
        raise ImportError("the 'code' strategy needs tree-sitter: pip install tree-sitter") from err
    module, fn = LANGUAGES[name]
    try:
        grammar = importlib.import_module(module)
    except ImportError as err:
        raise ImportError(
            f"the 'code' strategy needs the {name} grammar: pip install {module.replace('_', '-')}"
        ) from err
    return tree_sitter.Language(getattr(grammar, fn)())


def parse_tree(text: str, language: str) -> Any:
    """Parse ``text`` with the tree-sitter grammar of ``language`` (a fresh parser per call: thread-safe).

    Args:
        text: Source code.
        language: A key of :data:`LANGUAGES`.

    Returns:
        The ``tree_sitter.Tree``; its node positions are UTF-8 byte offsets into ``text.encode("utf-8",
        "surrogatepass")``. A file with syntax errors still parses (tree-sitter recovers, with ``ERROR`` nodes).

    Raises:
        ValueError: on a language not in :data:`LANGUAGES`.
        ImportError: if tree-sitter or the grammar wheel is not installed.
    """
    if language not in LANGUAGES:
        raise ValueError(f"code: unknown language {language!r}; languages are {', '.join(LANGUAGES)}")
    import tree_sitter

    return tree_sitter.Parser(_language(language)).parse(text.encode("utf-8", "surrogatepass"))


def _byte_to_char(text: str) -> np.ndarray | None:
    """Cumulative UTF-8 byte length before each character (``None`` for ASCII text: bytes are characters)."""
    if text.isascii():
        return None
    cp = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    lens = 1 + (cp >= 0x80).astype(np.int64) + (cp >= 0x800) + (cp >= 0x10000)
    return np.concatenate([[0], np.cumsum(lens)])


def _unwrap(node: Any) -> Any:
    """The definition inside a wrapper (``@decorator`` definition, ``export`` statement)."""
    while node.type in ("decorated_definition", "export_statement"):
        inner = node.child_by_field_name("definition") or node.child_by_field_name("declaration")
        if inner is None:
            return node
        node = inner
    return node


def _function_declarator(node: Any) -> Any:
    """The declarator of ``const f = () => ...`` (a variable declaration whose value is a function), else None."""
    declarators = [c for c in node.named_children if c.type == "variable_declarator"]
    if len(declarators) == 1:
        value = declarators[0].child_by_field_name("value")
        if value is not None and value.type in _FUNCTION_VALUES:
            return declarators[0]
    return None


def _name(node: Any) -> str:
    """A definition's name as it stands in the source (``impl Trait for Type`` for a Rust impl)."""
    inner = _unwrap(node)
    if inner.type in _VARIABLE_DECLS:
        inner = _function_declarator(inner) or inner
    if inner.type == "impl_item":
        ty, trait = inner.child_by_field_name("type"), inner.child_by_field_name("trait")
        ty_text = ty.text.decode("utf-8", "replace") if ty is not None else ""
        return f"impl {trait.text.decode('utf-8', 'replace')} for {ty_text}" if trait is not None else f"impl {ty_text}"
    if inner.type == "type_declaration":  # Go: type S struct {...}
        spec = next((c for c in inner.named_children if c.type in ("type_spec", "type_alias")), None)
        inner = spec or inner
    name = inner.child_by_field_name("name")
    return name.text.decode("utf-8", "replace") if name is not None else f"({inner.type})"


def _members(node: Any) -> list:
    """The nodes a long definition is cut at: the children of its body (methods, fields, statements)."""
    inner = _unwrap(node)
    if inner.type in _VARIABLE_DECLS:
        decl = _function_declarator(inner)
        inner = decl.child_by_field_name("value") if decl is not None else inner
    if inner.type == "type_declaration":  # Go: type S struct { fields } / interface { methods }
        spec = next((c for c in inner.named_children if c.type == "type_spec"), None)
        inner = spec.child_by_field_name("type") if spec is not None else inner
    body = inner.child_by_field_name("body")
    if body is None:  # Go struct_type / interface_type: the field list is an unnamed child
        body = next((c for c in inner.named_children
                     if c.type in ("field_declaration_list", "interface_body", "declaration_list")), None)
    if body is None:
        return []
    if body.type == "block" and body.named_child_count == 1 and body.named_children[0].type == "statement_list":
        body = body.named_children[0]  # Go: { statement_list }
    return list(body.named_children)


@dataclass
class _Unit:
    """One cut candidate of a level: a definition (with its leading comments) or other code."""

    char: int  # where it starts (its first leading comment), in characters; -1: the start of the range
    node: Any  # the definition node; None for other code
    name: str = ""


@register("code")
@dataclass(frozen=True)
class Code(Strategy):
    """Source code cut at function and class boundaries (tree-sitter syntax trees).

    1. The file is parsed with the grammar of its language: ``language`` when given, else the suffix of the
       document's source (``metadata["source"]``, else its id): ``.py``/``.pyi`` Python, ``.js``/``.mjs``/
       ``.cjs``/``.jsx`` JavaScript, ``.ts``/``.mts``/``.cts`` TypeScript, ``.tsx`` TSX, ``.go`` Go, ``.rs`` Rust,
       ``.java`` Java. A document in no supported language (markdown, text, a JSONL line of prose) is cut exactly
       as ``recursive:max_tokens=<max_tokens>`` cuts it (the Boundaries record this strategy's SPEC).
    2. Each top-level node is a unit. A *definition* (a function, class, method, Go type, Rust struct/enum/impl/
       trait/mod, Java class/interface/enum/record/constructor, a JavaScript ``const f = () => ...``; wrapped in
       ``export`` or decorators or not) starts with the comments, Rust attributes and decorators right above it (no
       blank line between), so a chunk holds its doc comment, decorators, signature and docstring.
    3. A definition of at least ``min_tokens`` tokens that fits ``max_tokens`` is one chunk, never merged. A longer
       one is cut inside: its header (signature, docstring: everything before its first member) and its members
       (the children of its body: methods and nested definitions, fields, statements) are the units of the same
       rule one level down; a member that is still too long and has no members is cut at blank lines, lines,
       then tokens.
    4. Other units (imports, constants, statements, comments not attached to a definition) and definitions under
       ``min_tokens`` are merged greedily with their neighbours up to ``max_tokens``
       (:func:`~latechunk.strategies._common.merge_pieces`). A run of them shorter than ``min_tokens`` right
       before a definition that fits ``max_tokens`` with it opens that definition's chunk instead (a cut class's
       header ``class Big:``, a lone import), and such a run at the end of a level closes the chunk before it
       when that fits. A merged chunk still under ``min_tokens`` (a last ``return x`` after a full chunk, a
       signature before a long docstring) takes the last lines of the merged chunk before it (the first lines of
       the one after it, for the first), blank lines first, when both then hold ``min_tokens`` within
       ``max_tokens``; elsewhere it stays a chunk of its own.

    Heading path: the names of the enclosing definitions, outermost first, plus the chunk's own name when the
    chunk is one definition (``("Parser",)`` for a whole class, ``("Parser", "parse")`` for a method of a class
    that was cut, ``("Parser",)`` for the class header or a run of small members, ``()`` for merged top-level
    units). Cuts fall between tokens at the start of a unit's first line, so chunks are exact slices that cover
    the content; the one way a chunk can exceed ``max_tokens`` is the wordpieces of one character.

    Args:
        max_tokens: Most content tokens per chunk (1..1,000,000); aliases ``chunk_size``, ``size``.
        min_tokens: Definitions shorter than this (tokens) are merged with small neighbours
            (``0 <= min_tokens <= max_tokens``; 0: every definition is a chunk of its own). Default 24, or
            ``max_tokens`` when that is smaller (so ``code:max_tokens=10`` is valid as given).
        language: A key of :data:`LANGUAGES`, or ``""`` (the default): from the document's suffix.

    Raises:
        TypeError: if ``max_tokens`` or ``min_tokens`` is not an int.
        ValueError: unless ``max_tokens > 0`` and ``0 <= min_tokens <= max_tokens``, or on an unknown language.
    """

    bet: ClassVar[str] = "a function or class is the fact"
    aliases: ClassVar[dict[str, str]] = {"chunk_size": "max_tokens", "size": "max_tokens"}

    max_tokens: int = field(default=256, metadata={"help": "most tokens per chunk (1..1,000,000); longer definitions are cut"})
    min_tokens: int = field(
        default=_DEFAULT_MIN_TOKENS,
        metadata={"help": "definitions under this many tokens merge with small neighbours (default 24, "
                          "max_tokens when that is smaller)"},
    )
    language: str = field(
        default="", metadata={"help": "python|javascript|typescript|tsx|go|rust|java; empty: from the file suffix"}
    )

    def __post_init__(self) -> None:
        check_int("code", "max_tokens", self.max_tokens)
        check_int("code", "min_tokens", self.min_tokens)
        if self.min_tokens == _DEFAULT_MIN_TOKENS and 0 < self.max_tokens < _DEFAULT_MIN_TOKENS:
            object.__setattr__(self, "min_tokens", self.max_tokens)  # the default never exceeds max_tokens
        if self.max_tokens <= 0 or not 0 <= self.min_tokens <= self.max_tokens:
            raise ValueError(
                f"code: needs max_tokens > 0 and 0 <= min_tokens <= max_tokens, got max_tokens={self.max_tokens}, "
                f"min_tokens={self.min_tokens}"
            )
        if self.language and self.language not in LANGUAGES:
            raise ValueError(
                f"code: unknown language {self.language!r}; choose one of {', '.join(LANGUAGES)} "
                "(or leave it empty: from the file suffix)"
            )

    def _chunk_spans(self, given: SplitInput) -> ChunkSpans:
        """Definitions, and long definitions cut at their members (see the class docstring); a document in no
        supported language is cut as ``recursive:max_tokens=<max_tokens>`` cuts it.

        Args:
            given: The document (source code; any other text is cut as ``recursive``), its content tokens and the
                run's sentence segmenter (only for a document cut as ``recursive``).

        Returns:
            The chunks with each one's heading path (enclosing definition names); no chunk of markup alone is
            joined in source code.

        Raises:
            ImportError: if the grammar of the document's language is not installed.
        """
        language = self.language or language_of(given.doc)
        if not language:
            from latechunk.strategies.recursive import Recursive  # here: the registry keeps its order

            return Recursive(max_tokens=self.max_tokens)._chunk_spans(given)
        splitter = PieceSplitter(given.doc.text, given.tok, self.max_tokens, given.sentences, given.content)
        if splitter.n == 0:
            return ChunkSpans(np.zeros((0, 2), np.int64))
        tree = parse_tree(given.doc.text, language)
        run = _Run(self, splitter, _DEFINITIONS[language], _byte_to_char(given.doc.text))
        out = run.level([None, *tree.root_node.children], 0, splitter.n, ())
        spans = np.asarray([(a, b) for a, b, _ in out], dtype=np.int64).reshape(-1, 2)
        return ChunkSpans(spans, tuple(p for _, _, p in out))


class _Run:
    """The cutting of one document: its splitter, its language's definition types, byte-to-char offsets."""

    def __init__(self, strategy: Code, splitter: PieceSplitter, definitions: frozenset[str], cum: np.ndarray | None):
        self.max_tokens = strategy.max_tokens
        self.min_tokens = strategy.min_tokens
        self.splitter = splitter
        self.definitions = definitions
        self.cum = cum
        self.snapped = snap_table(splitter.allowed)

    def char(self, byte: int) -> int:
        return byte if self.cum is None else int(np.searchsorted(self.cum, byte, side="left"))

    def is_definition(self, node: Any) -> bool:
        if node.type in self.definitions:
            return True
        inner = _unwrap(node)
        if inner is not node and inner.type in self.definitions:
            return True
        return inner.type in _VARIABLE_DECLS and _function_declarator(inner) is not None

    def units(self, nodes: list) -> list[_Unit]:
        """Group nodes into units: leading comments/attributes join the definition right below them."""
        out: list[_Unit] = []
        pending: list = []  # leading nodes waiting for a definition, each touching the next
        for node in nodes:
            if node is None:  # the start of the range (a header, or the text before the first node)
                out.append(_Unit(-1, None))
                continue
            if pending and node.start_point.row - pending[-1].end_point.row > 1:
                out.extend(_Unit(self.char(p.start_byte), None) for p in pending)  # a blank line: not attached
                pending = []
            if node.type in _LEADING:
                pending.append(node)
                continue
            if self.is_definition(node):
                first = pending[0] if pending else node
                out.append(_Unit(self.char(first.start_byte), node, _name(node)))
            else:
                out.extend(_Unit(self.char(p.start_byte), None) for p in pending)
                out.append(_Unit(self.char(node.start_byte), None))
            pending = []
        out.extend(_Unit(self.char(p.start_byte), None) for p in pending)
        return out

    def level(self, nodes: list, a: int, b: int, path: tuple[str, ...]) -> list[tuple[int, int, tuple[str, ...]]]:
        """Chunks ``(start, end, heading path)`` of the content-relative token range ``[a, b)`` whose units start
        at ``nodes`` (``None`` first: the range's start)."""
        units = self.units(nodes)
        keys = self.splitter.content.keys
        starts = []
        for u in units:
            if u.char < 0:
                starts.append(a)
            else:
                t = int(np.searchsorted(keys, u.char, side="left"))
                starts.append(int(self.snapped[min(max(t, a), b)]))
        starts = np.clip(np.maximum.accumulate(np.asarray(starts, dtype=np.int64)), a, b)
        ends = np.append(starts[1:], b)
        out: list[tuple[int, int, tuple[str, ...]]] = []
        small: list[tuple[int, int, _Unit]] = []
        fused = False
        for u, s, e in zip(units, starts.tolist(), ends.tolist()):
            if e <= s:  # no token of its own: it shares the next unit's first token (an empty range start: none)
                fused = fused or u.char >= 0
                continue
            if fused:  # two units in one range: no longer one definition
                u, fused = _Unit(u.char, None), False
            n = e - s
            if u.node is not None and (n >= self.min_tokens or n > self.max_tokens):
                own = (*path, u.name)
                if small and small[-1][1] - small[0][0] < self.min_tokens and e - small[0][0] <= self.max_tokens:
                    # a run of small units under min_tokens before a definition that fits (a cut class's
                    # header "class Big:", a lone import) opens the definition's chunk, not a chunk of its own
                    s, small = small[0][0], []
                out.extend(self.merge(small, path))
                small = []
                if n <= self.max_tokens:
                    out.append((s, e, own))
                else:
                    out.extend(self.inside(u.node, s, e, own))
            else:
                small.append((s, e, u))
        if (small and out and small[-1][1] - small[0][0] < self.min_tokens and out[-1][1] == small[0][0]
                and small[-1][1] - out[-1][0] <= self.max_tokens):
            # a trailing run under min_tokens (a closing brace, a last statement) closes the chunk before it
            s0, _e0, p0 = out.pop()
            out.append((s0, small[-1][1], p0))
            small = []
        out.extend(self.merge(small, path))
        return out

    def inside(self, node: Any, a: int, b: int, path: tuple[str, ...]) -> list[tuple[int, int, tuple[str, ...]]]:
        """A definition longer than the budget: cut at its members, or at lines when it has none."""
        members = [m for m in _members(node) if m.start_byte > node.start_byte]
        if members:
            return self.level([None, *members], a, b, path)
        pieces = self.splitter.pieces(a, b, _CODE_LEVELS)
        return [(s, e, path) for s, e in merge_pieces(pieces, self.max_tokens).tolist()]

    def merge(self, small: list[tuple[int, int, _Unit]], path: tuple[str, ...]) -> list[tuple[int, int, tuple]]:
        """Merge a run of small units up to the budget; a chunk that is exactly one definition keeps its name.
        A chunk under ``min_tokens`` left by the greedy merge (a last ``return x`` after a full chunk, a
        signature before a long docstring) takes lines from its neighbour (:meth:`fill_under_min`)."""
        if not small:
            return []
        p = np.concatenate([self.splitter.pieces(s, e, _CODE_LEVELS) for s, e, _u in small])
        chunks = self.fill_under_min(merge_pieces(p, self.max_tokens).tolist())
        names = {(s, e): u.name for s, e, u in small if u.node is not None}
        return [(s, e, (*path, names[(s, e)]) if (s, e) in names else path) for s, e in chunks]

    def fill_under_min(self, chunks: list[list[int]]) -> list[list[int]]:
        """Contiguous chunks ``[start, end)`` with each chunk under ``min_tokens`` grown to ``min_tokens`` from a
        neighbour where one can give it: the previous chunk hands over its last lines (the next chunk its first
        lines, for the first chunk) at the cut nearest to the old one, blank lines before other line breaks,
        leaving both at least ``min_tokens`` and at most ``max_tokens``. Otherwise a chunk stays as it is."""
        lo, hi = self.min_tokens, self.max_tokens
        for i in range(len(chunks)):
            s, e = chunks[i]
            if e - s >= lo or len(chunks) == 1:
                continue
            if i > 0:  # take the previous chunk's tail: the latest cut c with e - c and c - its start in range
                ps = chunks[i - 1][0]
                for level in ("paragraph", "line"):
                    c = self.splitter.cuts(level, ps, s)
                    c = c[(e - c >= lo) & (e - c <= hi) & (c - ps >= lo)]
                    if c.size:
                        chunks[i - 1][1] = chunks[i][0] = int(c[-1])
                        break
            elif i + 1 < len(chunks):  # the first chunk: take the next chunk's head, the earliest such cut
                ne = chunks[1][1]
                for level in ("paragraph", "line"):
                    c = self.splitter.cuts(level, e, ne)
                    c = c[(c - s >= lo) & (c - s <= hi) & (ne - c >= lo)]
                    if c.size:
                        chunks[0][1] = chunks[1][0] = int(c[0])
                        break
        return chunks
