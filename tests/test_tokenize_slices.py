"""Issue 36 section 4: a long document is tokenized in slices (cut only before a single space between two
non-whitespace characters), so the tokenizer's transient is bounded by a slice, not the document; the result
equals one whole-document call for WordPiece, byte-level BPE (trimmed and untrimmed offsets) and Unigram; a
tokenizer that reads across such a space is never sliced; Ctrl-C acts between slices, in the calling thread and in
the pipeline's prefetch thread."""

from __future__ import annotations

import signal
import threading
import time

import numpy as np
import pytest

from latechunk import tokenize
from latechunk.eval.datasets import data_root
from latechunk.pipeline import _prefetch, chunk_documents
from latechunk.tokenize import DocumentTokenizer, content_tokens, safe_cuts
from latechunk.types import Document
from tests.models import tiny_document_tokenizer, tiny_fast_tokenizer

CORPORA = data_root() / "chroma_chunking_eval" / "corpora"
KINDS = ["wordpiece", "bpe", "bpe-untrimmed", "unigram"]

# runs of spaces, line breaks and tabs, punctuation against words, digits, contractions, accents, CJK, emoji,
# an over-long word (WordPiece's [UNK]), zero-width trimmed whitespace tokens (RoBERTa) right after a cut
MIXED = (
    "Hello, world! It's 12345 o'clock.  Don't   stop\n\n  naïve café — 日本語のテキスト 😀 end. (a) [b] "
    "x=1+2; \"quoted\" e.g. U.S.A. ... ?! 3.14 1,000 #tag @user http://example.com/p?q=1 snake_case "
    "ﬁne ½ \t tab.\r\n" + "z" * 150 + " 42 \u3000 ideographic space , comma  \n"
)


def _texts() -> list[str]:
    texts = [MIXED * 40]
    for name in ("wikitexts.md", "chatlogs.md"):
        path = CORPORA / name
        if path.is_file():
            texts.append(path.read_text(encoding="utf-8")[:60_000])
    return texts


def _sliced(kind: str, slice_chars: int) -> DocumentTokenizer:
    base = tiny_document_tokenizer(kind)
    tk = DocumentTokenizer(base.tokenizer, prefix=base.prefix)
    tk.slice_chars = slice_chars
    return tk


@pytest.mark.parametrize("kind", KINDS)
def test_sliced_tokenization_equals_the_whole_document(kind):
    tk = _sliced(kind, 200)
    assert tk.slices_safely
    for text in _texts():
        assert len(safe_cuts(text, tk.slice_chars)) > 10  # really sliced
        enc = tk._encode(text)  # one call on the whole text
        tok = tk(text)
        content = slice(tok.content_start, tok.content_end)
        np.testing.assert_array_equal(tok.input_ids[content], np.asarray(enc["input_ids"], np.int64))
        np.testing.assert_array_equal(tok.offsets[content], np.asarray(enc["offset_mapping"], np.int32).reshape(-1, 2))
        assert tok.input_ids[: tok.n_lead].tolist() == tk.lead_ids
        assert tok.input_ids[tok.content_end :].tolist() == tk.trail_ids
        # batch() slices a long text too, and tokenizes the short ones around it in one call
        many = tk.batch(["short one", text, ""])
        np.testing.assert_array_equal(many[1].input_ids, tok.input_ids)
        np.testing.assert_array_equal(many[1].offsets, tok.offsets)
        np.testing.assert_array_equal(many[0].input_ids, tk("short one").input_ids)


def test_a_long_document_is_tokenized_in_slices_of_bounded_size(monkeypatch):
    """The 20 MB single-line fault: one tokenizer call on the whole text (4.3 GB peak); now no call is given
    much more than BATCH_CHARS characters."""
    tk = _sliced("wordpiece", tokenize.SLICE_CHARS)
    text = ("Plain words of a long single line. " * 40_000)[:1_400_000]
    calls: list[int] = []
    real = tk._encode
    monkeypatch.setattr(tk, "_encode", lambda t: calls.append(sum(map(len, t)) if isinstance(t, list) else len(t))
                        or real(t))
    tok = tk(text)
    assert len(calls) >= 5 and max(calls) <= tokenize.BATCH_CHARS + 2 * tokenize.SLICE_CHARS
    assert tok.input_ids.dtype == np.int64 and tok.offsets.dtype == np.int32
    assert tok.n_content == len(text.split()) + text.count(".")


def test_safe_cuts_fall_before_a_single_space_between_two_non_space_characters():
    text = "alpha  beta\ngamma delta,  epsilon zeta. eta theta " * 50
    cuts = safe_cuts(text, 40)
    assert cuts and all(b - a >= 40 for a, b in zip([0, *cuts], cuts))
    for c in cuts:
        assert text[c] == " " and not text[c - 1].isspace() and not text[c + 1].isspace()
    assert safe_cuts("x" * 10_000, 100) == []  # no space: one slice, however long
    assert safe_cuts("short text", 100) == []


def _unigram_with_normalizer(normalizer) -> DocumentTokenizer:
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer.from_str(tiny_fast_tokenizer("unigram").backend_tokenizer.to_str())
    backend.normalizer = normalizer
    backend.pre_tokenizer = None
    hf = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                 unk_token="<unk>")
    tk = DocumentTokenizer(hf)
    tk.slice_chars = 64
    return tk


def test_a_tokenizer_that_reads_across_spaces_is_not_sliced():
    """A normalizer that deletes spaces makes pieces that run across words: the probe finds that slices differ,
    and the document is tokenized whole. One that prepends "▁" to every input (Llama's SentencePiece style) is
    sliced: each slice starts with a little text before its cut, whose tokens (with the extra "▁") are dropped."""
    from tokenizers import normalizers

    text = MIXED * 10
    across = _unigram_with_normalizer(normalizers.Replace(" ", ""))
    prepend = _unigram_with_normalizer(normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]))
    assert not across.slices_safely and prepend.slices_safely
    for tk in (across, prepend):
        assert len(safe_cuts(text, tk.slice_chars)) > 10
        enc = tk._encode(text)
        tok = tk(text)
        np.testing.assert_array_equal(tok.input_ids[tok.content_start : tok.content_end], enc["input_ids"])
        np.testing.assert_array_equal(tok.offsets[tok.content_start : tok.content_end],
                                      np.asarray(enc["offset_mapping"], np.int32).reshape(-1, 2))


@pytest.mark.parametrize("kind", KINDS)
def test_content_tokens_in_blocks_equal_one_block(kind, monkeypatch):
    """ContentTokens works a block of tokens at a time (its transient was ~12 bytes a character of the whole
    document); the result does not depend on the block size."""
    tk = tiny_document_tokenizer(kind)
    text = "  \n\n lead  \t" + MIXED * 20 + "  \n\n  "
    tok = tk(text)
    whole = content_tokens(text, tok)
    monkeypatch.setattr(tokenize, "_CONTENT_BLOCK", 7)
    blocks = content_tokens(text, tok)
    for name in ("mask", "first_char", "keys"):
        np.testing.assert_array_equal(getattr(blocks, name), getattr(whole, name), err_msg=name)
    assert blocks.any == whole.any


def _long_text() -> str:
    return "Short words in a single line of text that goes on. " * 160_000  # 8 MB: seconds in one tokenizer call


def _sigint_main_after(seconds: float) -> threading.Timer:
    main = threading.main_thread().ident
    timer = threading.Timer(seconds, lambda: signal.pthread_kill(main, signal.SIGINT))
    timer.start()
    return timer


def test_ctrl_c_during_tokenization_of_a_long_document_acts_within_2_s(minilm_tokenizer):
    """Ctrl-C during one tokenizer call on a 20 MB line took 23 s; between slices it acts at once."""
    text = _long_text()
    t0 = time.perf_counter()
    timer = _sigint_main_after(0.3)
    try:
        with pytest.raises(KeyboardInterrupt):
            minilm_tokenizer(text)
    finally:
        timer.cancel()
    assert time.perf_counter() - t0 < 0.3 + 2.0


def test_ctrl_c_while_the_prefetch_thread_tokenizes_stops_it_within_2_s(minilm_tokenizer):
    """In `embed` the prefetch thread tokenizes; the consumer's Ctrl-C used to wait for the whole document."""
    text = _long_text()
    started = threading.Event()

    def groups():
        started.set()
        yield minilm_tokenizer(text)

    it = _prefetch(groups())
    timer = None
    t0 = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            timer = _sigint_main_after(0.3)
            next(it)  # the generator's cleanup (stop the thread, wait for it) runs before the error arrives here
    finally:
        if timer is not None:
            timer.cancel()
    assert started.is_set() and time.perf_counter() - t0 < 0.3 + 2.0
    assert not any(t.name == "latechunk-tokenize" and t.is_alive() for t in threading.enumerate())


def test_keyboard_interrupt_in_a_slice_stops_chunking_at_once(monkeypatch):
    """A KeyboardInterrupt raised inside one slice's tokenizer call is not a skipped document: it ends the run,
    and no later slice is tokenized."""
    tk = _sliced("wordpiece", 1000)
    real = tk._encode
    calls = []

    def encode(texts):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(texts)

    tk.slices_safely = True
    monkeypatch.setattr(tk, "_encode", encode)
    monkeypatch.setattr(tokenize, "BATCH_CHARS", 1000)
    doc = Document("long", "word " * 20_000)
    with pytest.raises(KeyboardInterrupt):
        list(chunk_documents([doc], "fixed:size=64", tk))
    assert len(calls) == 3
