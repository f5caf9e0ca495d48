"""Tokenize a document exactly once, with character offsets (the only tokenizer call on document text).

The model's fast tokenizer (Hugging Face ``tokenizers``) gives each token its character offsets into the text.
Boundaries are found from those offsets; token ids are never decoded back to text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from latechunk.types import Document, Tokenization

__all__ = ["DocumentTokenizer", "char_spans_from_token_spans"]


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

    def _ids(self, text: str, add_special_tokens: bool) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=add_special_tokens, verbose=False)["input_ids"])

    @property
    def n_frame(self) -> int:
        """Frame tokens per model input (lead + trail)."""
        return len(self.lead_ids) + len(self.trail_ids)

    def __call__(self, doc: Document | str) -> Tokenization:
        """Tokenize one document.

        Args:
            doc: A :class:`Document` or a plain string.

        Returns:
            Tokenization: ``input_ids`` (n_tokens,) int64 and ``offsets`` (n_tokens, 2) int32 in characters of
            ``doc.text`` (``(0, 0)`` for frame tokens; the prefix is not part of the text). Never truncated.
        """
        text = doc.text if isinstance(doc, Document) else doc
        enc = self._encode(text)
        return self._framed(enc["input_ids"], enc["offset_mapping"])

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
        enc = self._encode(texts)
        return [self._framed(ids, offs) for ids, offs in zip(enc["input_ids"], enc["offset_mapping"])]

    def _encode(self, text):
        return self.tokenizer(
            text,
            add_special_tokens=False,
            return_offsets_mapping=True,
            split_special_tokens=True,  # "[SEP]" typed in a document is text, not a control token
            verbose=False,
        )

    def _framed(self, input_ids, offset_mapping) -> Tokenization:
        content = np.asarray(input_ids, dtype=np.int64).reshape(-1)
        offs = np.asarray(offset_mapping, dtype=np.int32).reshape(-1, 2)
        n_lead, n_trail = len(self.lead_ids), len(self.trail_ids)
        ids = np.concatenate([np.asarray(self.lead_ids, np.int64), content, np.asarray(self.trail_ids, np.int64)])
        offsets = np.concatenate([np.zeros((n_lead, 2), np.int32), offs, np.zeros((n_trail, 2), np.int32)])
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


def char_spans_from_token_spans(text: str, tok: Tokenization, token_spans: np.ndarray) -> np.ndarray:
    """Character spans of token spans, so that spans over all content tokens cover every non-space character.

    A chunk's char span runs from its first token's start to its last token's end, extended over characters the
    tokenizer dropped (control characters, some symbols) that lie between its last token and the next token,
    without trailing whitespace. Characters before the first content token go to the chunk holding it.

    Args:
        text: The document text.
        tok: Its :class:`Tokenization`.
        token_spans: (n, 2), int. Half-open token spans, each inside the content tokens.

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
    offs = tok.offsets
    # next_start[p]: where the token after p begins (len(text) after the last content token)
    starts = offs[cs:ce, 0].astype(np.int64)
    next_start = np.append(starts[1:], len(text))
    lead_text = len(text) - len(text.lstrip())
    for i, (a, b) in enumerate(ts.tolist()):
        s = int(offs[a, 0]) if a > cs else min(lead_text, int(offs[a, 0]))
        e_tok = int(offs[b - 1, 1])
        gap_end = int(next_start[b - 1 - cs])
        e = e_tok
        if gap_end > e_tok:
            gap = text[e_tok:gap_end]
            e = e_tok + len(gap.rstrip())
        # tokens can have zero-width offsets (sentencepiece "▁"): widen to the nearest real character
        if e <= s:
            e = s + 1 if s < len(text) else s
            if e <= s:
                s = max(0, s - 1)
        out[i] = (s, e)
    return out
