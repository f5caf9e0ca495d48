"""Tokenize a document exactly once, with character offsets (the only tokenizer call on document text).

The model's fast tokenizer (Hugging Face ``tokenizers``) gives each token its character offsets into the text.
Boundaries are found from those offsets; token ids are never decoded back to text.

A long document is tokenized in slices (:data:`SLICE_CHARS` characters each, cut at safe points, see
:func:`safe_cuts`): the tokenizer's own transient (its Rust encoding and the Python lists of ids and offset
tuples, several hundred bytes a token) is then bounded by one slice, not the document, and Ctrl-C acts between
slices. The ids and offsets of each slice are kept as numpy arrays, offsets shifted by the slice's start, and
joined once; the result equals one whole-document call (checked per tokenizer on a probe, else the document is
tokenized whole).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from latechunk.types import Document, Tokenization

__all__ = ["ContentTokens", "DocumentTokenizer", "char_spans_from_token_spans", "content_tokens"]

#: every code point ``str.isspace`` (and the regex ``\s``) calls whitespace (29 of them, the last U+3000), sorted;
#: scanning only the BMP up to U+3000 keeps the import cheap (tests/test_tokenize.py checks the whole range)
_WHITESPACE = np.asarray([c for c in range(0x3001) if chr(c).isspace()], dtype=np.uint32)

#: content tokens per block of :class:`ContentTokens` (its transient arrays are one block's)
_CONTENT_BLOCK = 1 << 18
_NON_SPACE = re.compile(r"\S")
#: characters per tokenizer call when a document is tokenized in slices (a slice runs on to the next safe cut)
SLICE_CHARS = 1 << 16
#: characters of slices per tokenizer call (the slices of one call are encoded in parallel by the Rust tokenizer)
BATCH_CHARS = 1 << 18
#: characters of text before a cut that a slice starts with, tokenized and dropped (see DocumentTokenizer._sliced)
_SLICE_CONTEXT = 16
#: a safe cut: one ASCII space between two non-whitespace characters (the cut falls before the space)
_CUT = re.compile(r"(?<=\S) (?=\S)")
#: a probe text for :meth:`DocumentTokenizer.slices_safely`: words, punctuation, digits, contractions, runs of
#: spaces and line breaks, accents, CJK and an emoji around the cuts
_SLICE_PROBE = ("Hello, world! It's 12345 o'clock.  Don't   stop\n\n  naïve café — 日本語 テキスト 😀 end. "
                "(a) [b] {c} x=1+2; \"quoted\" 'single' -dash- e.g. U.S.A. ... ?! 3.14 1,000 #tag @user "
                "http://example.com/path?q=1 snake_case CamelCase ÀÉÎÕÜ ß ﬁ Ω ½ \t tab. Last word")


def safe_cuts(text: str, size: int = SLICE_CHARS) -> list[int]:
    """Where a long text is cut into slices for tokenization: slices of at least ``size`` characters.

    The rule: a cut is made only before a single ASCII space that has a non-whitespace character on both sides
    (``"word next"`` is cut as ``"word" | " next"``), so the space opens the next slice as it would open the
    word's pre-token in the whole text. No pre-tokenizer of the usual kinds makes a piece that crosses such a
    point: WordPiece (BERT) splits at every whitespace; byte-level BPE (GPT-2, RoBERTa, tiktoken-style regexes)
    makes pieces that are either whitespace only or an optional leading space or punctuation followed by
    non-whitespace, so a piece never runs from a non-whitespace character into a following space; Metaspace
    (SentencePiece, Unigram) turns the space into the ``▁`` that starts the next piece, and a slice that starts
    with it gets no second one. Whitespace runs are never cut (GPT-2 splits ``"a   b"`` as ``"a", "  ", " b"``).
    :meth:`DocumentTokenizer.slices_safely` checks a tokenizer on a probe before slicing with it. A run of text
    with no such point (a long word, unspaced CJK text) stays in one slice, however long.

    Args:
        text: The text.
        size: The least characters of a slice (the last one may be shorter).

    Returns:
        The cut positions (chars), increasing, each in ``(0, len(text))``; ``[]`` for a text of ``2 * size``
        characters or fewer.
    """
    cuts: list[int] = []
    n = len(text)
    pos = 0
    while n - pos > 2 * size:
        m = _CUT.search(text, pos + size)
        if m is None or n - m.start() < size // 2:
            break
        cuts.append(m.start())
        pos = m.start()
    return cuts


class DocumentTokenizer:
    """Turns text into a :class:`Tokenization`: ``[lead frame] + content tokens + [trail frame]``.

    The lead frame is the model's leading special tokens (``[CLS]``, ``<s>``) followed by the tokens of the
    instruction prefix (e.g. ``"passage: "``); the trail frame is the closing special tokens (``[SEP]``, ``</s>``).
    The frame is found once per tokenizer by tokenizing a probe with and without special tokens, so any Hugging
    Face fast tokenizer works (BERT, XLM-R, ModernBERT, ...).

    Args:
        tokenizer: A Hugging Face fast tokenizer (must support ``return_offsets_mapping``).
        prefix: Instruction prefix prepended to every document (conditions the encoding; never in a chunk).

    Raises:
        TypeError: if the tokenizer cannot return offsets (not a fast tokenizer).
        ValueError: if the content tokens of a probe text cannot be found inside its special-token frame.
    """

    def __init__(self, tokenizer, prefix: str = "") -> None:
        if not getattr(tokenizer, "is_fast", False):
            raise TypeError(
                f"{type(tokenizer).__name__} is not a fast tokenizer; latechunk needs character offsets "
                "(install `tokenizers` and load the model's fast tokenizer)"
            )
        self.tokenizer = tokenizer
        self.prefix = prefix
        probe = "latechunk probe"
        bare = self._ids(probe, add_special_tokens=False)
        full = self._ids(probe, add_special_tokens=True)
        pos = _find_sub(full, bare)
        if pos < 0:
            raise ValueError(f"cannot locate content tokens inside the special-token frame of {type(tokenizer).__name__}")
        self.prefix_ids: list[int] = self._ids(prefix, add_special_tokens=False) if prefix else []
        self.lead_ids: list[int] = list(full[:pos]) + self.prefix_ids
        self.trail_ids: list[int] = list(full[pos + len(bare) :])
        self.slice_chars = SLICE_CHARS
        self.slices_safely = self._slices_safely()

    def _slices_safely(self) -> bool:
        """Whether slices cut by :func:`safe_cuts` tokenize to the whole text's tokens on a probe (ids and
        offsets): False for a tokenizer whose normalizer or pre-tokenizer reads across a space (a ``Prepend``
        normalizer that adds ``▁`` to every input, say), which then tokenizes every document whole."""
        probe = " ".join([_SLICE_PROBE] * 4)
        cuts = safe_cuts(probe, 16)
        try:
            whole = self._encode(probe)
            ids, offs = self._sliced(probe, cuts, 64)
        except Exception:  # noqa: BLE001  (a tokenizer that cannot take a batch of texts: no slices)
            return False
        return (len(cuts) > 8 and np.array_equal(np.concatenate(ids), np.asarray(whole["input_ids"], np.int64))
                and np.array_equal(np.concatenate(offs), np.asarray(whole["offset_mapping"], np.int32).reshape(-1, 2)))

    def _ids(self, text: str, add_special_tokens: bool) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=add_special_tokens, verbose=False)["input_ids"])

    @property
    def n_frame(self) -> int:
        """Frame tokens per model input (lead + trail)."""
        return len(self.lead_ids) + len(self.trail_ids)

    @property
    def unk_token_id(self) -> int | None:
        """The id of the tokenizer's unknown token (``[UNK]``, ``<unk>``), or None where it has none (byte-level
        BPE tokenizers cover every byte)."""
        uid = getattr(self.tokenizer, "unk_token_id", None)
        return int(uid) if isinstance(uid, (int, np.integer)) and not isinstance(uid, bool) else None

    def unknown_chars(self, tok: Tokenization) -> int:
        """Characters of the document read as the unknown token: content the encoder never sees.

        WordPiece reads a word longer than its ``max_input_chars_per_word`` (100 for BERT's) and a character
        outside its vocabulary as one ``[UNK]``, so a base64 blob, a long URL or a 100,000-letter word is a single
        token whose text is in no vector.

        Args:
            tok: A tokenization made by this tokenizer.

        Returns:
            The summed character length (``end - start`` of the offsets) of its content tokens whose id is
            :attr:`unk_token_id`; 0 when the tokenizer has no unknown token.
        """
        uid = self.unk_token_id
        if uid is None:
            return 0
        hit = (tok.input_ids == uid) & ~tok.special_tokens_mask
        if not hit.any():
            return 0
        offs = tok.offsets[hit]
        return int((offs[:, 1] - offs[:, 0]).sum())

    def __call__(self, doc: Document | str) -> Tokenization:
        """Tokenize one document.

        Args:
            doc: A :class:`Document` or a plain string.

        Returns:
            Tokenization: ``input_ids`` (n_tokens,) int64 and ``offsets`` (n_tokens, 2) int32 in characters of
            ``doc.text`` (``(0, 0)`` for frame tokens; the prefix is not part of the text). Never truncated.
        """
        text = doc.text if isinstance(doc, Document) else doc
        cuts = safe_cuts(text, self.slice_chars) if self.slices_safely and isinstance(text, str) else []
        if cuts:
            return self._framed(*self._sliced(text, cuts, max(BATCH_CHARS, self.slice_chars)))
        enc = self._encode(text)
        return self._framed(enc["input_ids"], enc["offset_mapping"])

    def _sliced(self, text: str, cuts: list[int], batch_chars: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Content ids and offsets of ``text`` tokenized in the slices between ``cuts``, a batch of slices of
        about ``batch_chars`` characters per tokenizer call; offsets shifted to ``text``. Returns the pieces
        (int32 ids, (n, 2) int32 offsets) per slice, to be joined once. A KeyboardInterrupt acts between calls."""
        bounds = [0, *cuts, len(text)]
        ids: list[np.ndarray] = []
        offs: list[np.ndarray] = []
        i = 0
        while i < len(bounds) - 1:
            j = i + 1
            while j < len(bounds) - 1 and bounds[j + 1] - bounds[i] <= batch_chars:
                j += 1
            # every slice but the first starts with a little of the text before its cut, whose tokens are
            # dropped: the cut's own tokens are then never a call's first (RoBERTa's trim_offsets treats a
            # first token apart, a tokenizer may prepend a space or a "▁" to it)
            lead = [0 if k == 0 else max(bounds[k - 1], bounds[k] - _SLICE_CONTEXT) for k in range(i, j)]
            enc = self._encode([text[c:b] for c, b in zip(lead, bounds[i + 1 : j + 1])])
            for a, c, piece_ids, piece_offs in zip(bounds[i:j], lead, enc["input_ids"], enc["offset_mapping"]):
                piece = np.asarray(piece_ids, dtype=np.int32).reshape(-1)  # int64 once joined
                o = np.asarray(piece_offs, dtype=np.int32).reshape(-1, 2)
                o += c
                if c < a:  # the context's tokens (all start before the cut) out
                    after = o[:, 0] >= a
                    first = int(np.argmax(after)) if after.any() else len(after)
                    piece, o = piece[first:], o[first:]
                ids.append(np.ascontiguousarray(piece))
                offs.append(np.ascontiguousarray(o))
            del enc
            i = j
        return ids, offs

    def batch(self, docs: Sequence[Document | str]) -> list[Tokenization]:
        """Tokenize several documents in one call: the same result as ``[self(d) for d in docs]``, but the Rust
        tokenizer encodes them on all cores (``TOKENIZERS_PARALLELISM``) with the GIL released.

        Args:
            docs: Documents or plain strings.

        Returns:
            One :class:`Tokenization` per document, in order (see :meth:`__call__`); ``[]`` for no documents.

        Raises:
            Whatever the tokenizer raises for any of the texts (tokenize one by one to find which).
        """
        texts = [d.text if isinstance(d, Document) else d for d in docs]
        if not texts:
            return []
        # a long text is tokenized in slices of its own (see __call__), the others in one call
        long = [isinstance(t, str) and len(t) > 2 * self.slice_chars for t in texts]
        short = [t for t, is_long in zip(texts, long) if not is_long]
        enc = self._encode(short) if short else {"input_ids": [], "offset_mapping": []}
        framed = iter([self._framed(ids, offs) for ids, offs in zip(enc["input_ids"], enc["offset_mapping"])])
        return [self(t) if is_long else next(framed) for t, is_long in zip(texts, long)]

    def _encode(self, text):
        return self.tokenizer(
            text,
            add_special_tokens=False,
            return_offsets_mapping=True,
            split_special_tokens=True,  # "[SEP]" typed in a document is text, not a control token
            verbose=False,
        )

    def _framed(self, input_ids, offset_mapping) -> Tokenization:
        """The Tokenization of content ids and offsets: one sequence each, or (from :meth:`_sliced`) lists of
        numpy pieces, joined here one array at a time, each list emptied once joined (so the pieces and the
        result are never all held at once)."""
        if isinstance(input_ids, list) and input_ids and isinstance(input_ids[0], np.ndarray):
            content, offs = input_ids, offset_mapping
        else:
            content = [np.asarray(input_ids, dtype=np.int64).reshape(-1)]
            offs = [np.asarray(offset_mapping, dtype=np.int32).reshape(-1, 2)]
        n_lead, n_trail = len(self.lead_ids), len(self.trail_ids)
        ids = np.concatenate([np.asarray(self.lead_ids, np.int64), *content, np.asarray(self.trail_ids, np.int64)],
                             dtype=np.int64)
        content.clear()
        offsets = np.concatenate([np.zeros((n_lead, 2), np.int32), *offs, np.zeros((n_trail, 2), np.int32)])
        offs.clear()
        mask = np.zeros(ids.shape[0], dtype=bool)
        mask[:n_lead] = True
        mask[ids.shape[0] - n_trail :] = True
        return Tokenization(ids, offsets, mask, n_lead, n_trail)

    @classmethod
    def from_pretrained(cls, name_or_path: str, prefix: str = "", trust_remote_code: bool = False) -> DocumentTokenizer:
        """Load the fast tokenizer of a Hugging Face model by name or local path.

        Args:
            name_or_path: Hub id or local folder.
            prefix: Instruction prefix prepended to every document (see the class docstring).
            trust_remote_code: Allow the repository's own tokenizer code.

        Returns:
            The :class:`DocumentTokenizer`.

        Raises:
            OSError: if transformers cannot find or read the tokenizer.
            TypeError / ValueError: as the constructor.
        """
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(name_or_path), use_fast=True, trust_remote_code=trust_remote_code)
        return cls(tok, prefix=prefix)


def _find_sub(seq: Sequence[int], sub: Sequence[int]) -> int:
    n, m = len(seq), len(sub)
    for i in range(n - m + 1):
        if list(seq[i : i + m]) == list(sub):
            return i
    return -1


class ContentTokens:
    r"""Which content tokens hold text, and where: computed once per document and split.

    A *content token* is one whose offsets cover a non-whitespace character. Byte-level BPE (GPT-2, RoBERTa) and
    SentencePiece tokenizers also make tokens of whitespace alone (``"\n\n"``, ``"   "``, a lone ``"▁"``), some
    with zero-width offsets (``trim_offsets``), and tokens whose offsets start with a space (``" fox"``);
    WordPiece makes none of these. A chunk must hold at least one content token (BR-023), so a cut is made only
    before a content token that has another before it (:func:`latechunk.strategies._common.allowed_cuts`):
    whitespace tokens stay with the text before them, leading ones with the first text.

    Attributes:
        mask: (n_content,) bool. ``mask[p]``: content token p (document token ``tok.content_start + p``) covers
            a non-whitespace character.
        first_char: (n_content,) int32. The first non-whitespace character token p covers (its start offset if
            it covers none).
        keys: (n_content,) int64, non-decreasing. Where a cut before token p falls in the text: ``first_char``
            of the last content token at or before p (of the first content token, for leading whitespace
            tokens). ``searchsorted(keys, c)`` is the cut before the first content token that starts at or after
            character ``c``, whitespace tokens before it staying on the left.
        any: True if some token is a content token.
    """

    __slots__ = ("any", "first_char", "keys", "mask")

    def __init__(self, text: str, offsets: np.ndarray) -> None:
        offs = np.asarray(offsets).reshape(-1, 2)
        n, n_chars = offs.shape[0], len(text)
        first = offs[:, 0].astype(np.int32)  # offsets are int32: 4 bytes a token
        mask = offs[:, 1] > offs[:, 0]  # (empty text) replaced block by block below
        # a block of tokens at a time, with the code points of its characters only: the transient is one block's
        for i0 in range(0, n if n_chars else 0, _CONTENT_BLOCK):
            i1 = min(n, i0 + _CONTENT_BLOCK)
            s, e = first[i0:i1], offs[i0:i1, 1].astype(np.int64)
            c0 = min(int(s.min()), n_chars - 1)
            c1 = min(max(int(s.max()) + 1, int(e.max())), n_chars)
            cp = np.frombuffer(text[c0:c1].encode("utf-32-le"), dtype=np.uint32)
            # a token needs a closer look only if it is empty or starts on whitespace (never, for WordPiece)
            odd = np.flatnonzero((e <= s) | (s >= n_chars) | np.isin(cp[np.minimum(s, n_chars - 1) - c0], _WHITESPACE))
            if odd.size:
                # the non-whitespace characters of the block, then the first one after it (or the end)
                after = _NON_SPACE.search(text, c1)
                text_at = np.append(np.flatnonzero(~np.isin(cp, _WHITESPACE)) + c0, after.start() if after else n_chars)
                s[odd] = text_at[np.searchsorted(text_at, s[odd], side="left")]
            mask[i0:i1] = (e > offs[i0:i1, 0]) & (s < e)
        self.first_char = first
        self.mask = mask
        self.any = bool(mask.any())
        if self.any:
            keys = np.where(mask, first, -1).astype(np.int64)
            np.maximum.accumulate(keys, out=keys)
            lead = int(np.argmax(mask))
            keys[:lead] = keys[lead]
        else:
            keys = offs[:, 0].astype(np.int64)
        self.keys = keys


def content_tokens(text: str, tok: Tokenization) -> ContentTokens:
    """The :class:`ContentTokens` of ``tok``'s content tokens over ``text``.

    Args:
        text: The document text that ``tok`` tokenizes.
        tok: Its Tokenization.

    Returns:
        A :class:`ContentTokens` (arrays of length ``tok.n_content``; position p is document token
        ``tok.content_start + p``).
    """
    return ContentTokens(text, tok.offsets[tok.content_start : tok.content_end])


def char_spans_from_token_spans(
    text: str, tok: Tokenization, token_spans: np.ndarray, content: ContentTokens | None = None
) -> np.ndarray:
    """Character spans of token spans, so that spans over all content tokens cover every non-space character.

    A chunk's char span runs from the first non-whitespace character of its first content token (a token that
    covers a non-whitespace character, see :class:`ContentTokens`) to the last non-whitespace character before
    the next token, so it takes in the characters the tokenizer dropped (control characters, some symbols)
    after its last token, but never whitespace at either end, whether the tokenizer gives whitespace tokens of
    its own (byte-level BPE, SentencePiece) or none (WordPiece). Characters before the first content token go
    to the chunk holding it.

    Args:
        text: The document text.
        tok: Its :class:`Tokenization`.
        token_spans: (n, 2), int. Half-open token spans, each inside the content tokens.
        content: ``content_tokens(text, tok)`` if the caller has it; None: computed here.

    Returns:
        (n, 2), int32. Half-open character spans into ``text``.

    Raises:
        ValueError: if a span is empty or reaches outside the content tokens.
    """
    ts = np.asarray(token_spans, dtype=np.int64).reshape(-1, 2)
    out = np.zeros(ts.shape, dtype=np.int32)
    if ts.shape[0] == 0:
        return out
    cs, ce = tok.content_start, tok.content_end
    if (ts[:, 0] < cs).any() or (ts[:, 1] > ce).any() or (ts[:, 1] <= ts[:, 0]).any():
        raise ValueError(f"token spans must be non-empty and inside content tokens [{cs}, {ce})")
    ct = content_tokens(text, tok) if content is None else content
    # per span, not per token: the document's offsets are read where a span needs them (no copy of them all)
    offs = tok.offsets[cs:ce]
    n, n_chars = offs.shape[0], len(text)
    lead = _NON_SPACE.search(text)  # the leading whitespace (no stripped copy of the text)
    lead_text = lead.start() if lead else n_chars
    for i, (a, b) in enumerate((ts - cs).tolist()):
        hit = ct.mask[a:b]
        f = a + int(hit.argmax())
        if hit[f - a]:  # the first non-whitespace character of the span's first content token
            s = int(ct.first_char[f])
        else:  # no content token (only a caller's own spans can be so): the first token's start
            s = int(offs[a, 0])
        if a == 0:
            s = min(lead_text, s)
        # the end: past the last token and what the tokenizer dropped before the next token (or the text's end)
        hi = max(int(offs[b - 1, 1]), int(offs[b, 0]) if b < n else n_chars)
        e = s + len(text[s:hi].rstrip()) if hi > s else s
        # tokens can have zero-width offsets (sentencepiece "▁"): widen to the nearest real character
        if e <= s:
            e = s + 1 if s < n_chars else s
            if e <= s:
                s = max(0, s - 1)
        out[i] = (s, e)
    return out
