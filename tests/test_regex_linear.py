"""Regular expressions rewritten to avoid super-linear backtracking: each new pattern (or function) against the old
one on many small random strings, and each on an input the old one would need astronomically many steps for.

- ``latechunk.front_matter.FRONT_MATTER``: a CRLF could be read as one line end or as two (``\\r`` then ``\\n``), so
  front matter with no closing fence took 2^(CRLF lines) steps to fail (22 lines: 0.7 s, doubling per line).
- ``latechunk.console._drop_leading_headings``: re-sliced the rest of the text after every heading line (O(n^2)
  characters copied for n heading lines).
- pysbd's ``NUMBERED_REFERENCE_REGEX``, which :class:`latechunk.sentences._GatedRe` runs as an equivalent pattern
  (``latechunk.sentences._LINEAR_PATTERNS``): ``x.[`` and digits with no ``]`` took ~1.84^digits steps.

Linearity is checked without a timer where the work can be counted (the headings loop), else by running an input
of 100,000 units in a subprocess with a timeout a thousand times what it needs (the old patterns would need more
than 2^100,000 steps: they cannot pass by luck of a fast machine). Doubling ratios: scripts/bench_regex_linear.py.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import textwrap

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from latechunk import console, sentences
from latechunk.front_matter import FRONT_MATTER, INVISIBLE_MARKS

# --- front matter ---------------------------------------------------------------------------------------------

OLD_FRONT_MATTER = (
    f"\\A[{INVISIBLE_MARKS}]*(?P<fence>---|\\+\\+\\+)[ \\t]*(?:\\r\\n|\\n|\\r)"
    r"(?P<body>(?:[^\r\n]*(?:\r\n|\n|\r))*?)(?P=fence)[ \t]*(?=\r\n|\n|\r|\Z)"
)
_FM_UNITS = ["---", "+++", "-", "+", " ", "\t", "\r", "\n", "\r\n", "a", "x: 1", "\ufeff", "\u200b"]


def _fm(pattern: re.Pattern, text: str):
    m = pattern.match(text)
    return None if m is None else (m.span(), m.group("fence"), m.group("body"))


def test_front_matter_matches_as_before_on_random_texts():
    old = re.compile(OLD_FRONT_MATTER)
    rng = random.Random(20240611)
    matched = 0
    for _ in range(30_000):
        head = rng.choice(["---", "+++", "\ufeff---", ""]) + rng.choice(["", " ", "\t "]) + rng.choice(
            ["\n", "\r\n", "\r", ""])
        units = [rng.choice(_FM_UNITS) for _ in range(rng.randint(0, 12))]
        if units and rng.random() < 0.6:  # a closing fence somewhere, mostly after a line end
            units.insert(rng.randrange(len(units) + 1), rng.choice(["\n", "\r\n", "\r"]) + head[-4:].strip())
        text = head + "".join(units)
        want = _fm(old, text)
        assert _fm(FRONT_MATTER, text) == want, repr(text)
        matched += want is not None
    assert matched > 1_500  # the sample holds front matter of every kind, not only misses


@pytest.mark.parametrize("text", ["---\r\nt: 1\r\n---\r\nbody", "---\r\n\r\n---", "+++\r\n\r\r\n+++ \r\n",
                                  "---\r\na\r---\n", "---\r\n---\r\n", "---\r\r\n---"])
def test_front_matter_crlf_examples(text):
    assert _fm(FRONT_MATTER, text) == _fm(re.compile(OLD_FRONT_MATTER), text)


# --- console: leading headings --------------------------------------------------------------------------------


def _old_drop_leading_headings(text: str) -> str:
    rest = text.lstrip()
    while (m := console._ATX_HEADING.match(rest)) and m.end() > 0:
        rest = rest[m.end():].lstrip()
    return rest if rest.strip() else text


_HEAD_UNITS = ["#", "##", "#######", " ", "   ", "\t", "\n", "\r", "\r\n", "a", "Title", "\u00a0", "\u2028", "\x1c",
               "\x85", "    #"]


@settings(max_examples=500)
@given(st.lists(st.sampled_from(_HEAD_UNITS), max_size=14).map("".join))
@example("# a\n\n## b\n text")
@example("#\n#\n")
@example("# a\n")
def test_drop_leading_headings_as_before(text):
    assert console._drop_leading_headings(text) == _old_drop_leading_headings(text)


def test_whitespace_class_is_what_lstrip_removes():
    every = "".join(map(chr, range(0x110000)))
    assert re.findall(r"\s", every) == [c for c in every if c.isspace()]


def test_drop_leading_headings_reads_the_text_in_place(monkeypatch):
    """Work counted, not timed: every match runs on the text itself (no copy of the rest per heading line), one
    per heading line and one more."""
    calls = []

    class Spy:
        def __init__(self, pattern):
            self.pattern = pattern

        def match(self, string, pos=0):
            calls.append((string, pos))
            return self.pattern.match(string, pos)

    monkeypatch.setattr(console, "_ATX_HEADING", Spy(console._ATX_HEADING))
    n = 5_000
    text = "# heading\n\n" * n + "the body"
    assert console._drop_leading_headings(text) == "the body"
    assert len(calls) == n + 1
    assert all(s is text for s, _ in calls)
    assert [p for _, p in calls] == [11 * i for i in range(n + 1)]


# --- pysbd's numbered references, through the gate ------------------------------------------------------------

OLD_NUMBERED_REFERENCE = (r"(?<=[^\d\s])(\.|∯)((\[(\d{1,3},?\s?-?\s?)*\b\d{1,3}\])+|((\d{1,3}\s?)?\d{1,3}))(\s)"
                          r"(?=[A-Z])")


def test_linear_pattern_replaces_pysbds_own():
    """The gate's table is keyed by pysbd's pattern as it is (another pysbd release: no gate at all)."""
    import pysbd
    from pysbd.lang.english import English

    assert OLD_NUMBERED_REFERENCE in sentences._LINEAR_PATTERNS
    if pysbd.__version__ == sentences._PYSBD_PATCHED_VERSION:
        assert English.NUMBERED_REFERENCE_REGEX == OLD_NUMBERED_REFERENCE
        compiled = sentences._GATED_RE._entry(OLD_NUMBERED_REFERENCE, 0)[0]
        assert compiled.pattern == sentences._LINEAR_PATTERNS[OLD_NUMBERED_REFERENCE]


def test_numbered_reference_matches_as_before_on_random_strings():
    old = re.compile(OLD_NUMBERED_REFERENCE)
    new = re.compile(sentences._LINEAR_PATTERNS[OLD_NUMBERED_REFERENCE])
    assert new.groups == old.groups
    rng = random.Random(7)
    alphabet = "1111222,,--  \n\t\u00a0[[]]..∯aA٣_"
    units = ["1", "12", "123", "1234", "٣", " ", " ", ",", ", ", "-", " - ", "\n", "] [", "]["]
    matched = 0
    for i in range(60_000):
        if i % 2:
            s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 18)))
        else:  # reference-shaped: x.[<numbers and separators>]
            s = "[" + "".join(rng.choice(units) for _ in range(rng.randint(0, 8))) + rng.choice(["1", "12", ""])
        s = rng.choice(["", "x.", "x.", "A b∯"]) + s + rng.choice(["", " A", "] A", "] A", "]\tB", "]"])
        got = [(m.span(), m.group(1, 2, 3, 5, 6, 7)) for m in new.finditer(s)]  # group 4: not read by pysbd
        want = [(m.span(), m.group(1, 2, 3, 5, 6, 7)) for m in old.finditer(s)]
        assert got == want, repr(s)
        assert new.sub(r"∯\2\r\7", s) == old.sub(r"∯\2\r\7", s), repr(s)  # pysbd's own replacement
        matched += bool(want)
    assert matched > 1_000


_REF_TEXT = st.lists(st.sampled_from(["See", "A", "b", "x.", ".", "[", "]", "[1]", "[12, 3-4]", "1", "22", "333",
                                      "4444", ",", "-", " ", " ", "\n", "Fig", "Then", "(", ")"]),
                     max_size=24).map("".join)


@settings(max_examples=300)
@given(_REF_TEXT)
@example("It grew.[12] Then it fell.[3, 4-5] A b.12 C")
@example("x.[1 2 3 4] B")
def test_fast_pysbd_matches_stock_pysbd_on_references(text):
    process = sentences._pysbd_segmenter
    assert process(fast=True).processor(text).process() == process(fast=False).processor(text).process()


# --- the adversarial inputs -----------------------------------------------------------------------------------


def test_adversarial_inputs_finish():
    """Inputs the old patterns needed more than 2^100,000 (front matter), 1.84^100,000 (references) and
    ~n^2/2 = 5e9 (headings) steps for; each takes well under a second now. A subprocess, so that a regression
    fails after the timeout instead of hanging the suite."""
    code = textwrap.dedent("""
        import re
        from latechunk import console, sentences
        from latechunk.front_matter import FRONT_MATTER
        from latechunk.sentences import SentenceSegmenter
        n = 100_000
        assert FRONT_MATTER.match("---\\r\\n" + "\\r\\n" * n) is None
        assert FRONT_MATTER.match("---\\r\\n" + "key: value\\r\\n" * n + "--- x") is None
        assert FRONT_MATTER.match("---\\r\\n" + "k: v\\r\\n" * n + "---\\r\\n").group("body") == "k: v\\r\\n" * n
        ref = re.compile(next(iter(sentences._LINEAR_PATTERNS.values())))
        for body in ("1" * n, "1 " * n, "1, - " * n, "12, " * n + "1234]"):
            text = "See A a.[" + body + " x"
            assert ref.sub(r"X\\2\\r\\7", text) == text
        text = "See A a.[" + "1" * 300 + " x. Then " + "B c.[1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24"
        assert len(SentenceSegmenter().char_spans(text, cache=False)) >= 1
        text = ("!?" * 300 + ".") * (n // 601)  # one pysbd call over all of it: ~n^2 steps (minutes)
        assert SentenceSegmenter().char_spans(text, cache=False)[-1, 1] == len(text)
        text = "# a\\n" * (4 * n) + "end"
        assert console._drop_leading_headings(text) == "end"
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


# --- pysbd's quadratic patterns: no call longer than _BLOCK_MAX_CHARS --------------------------------------------


def test_a_block_without_whitespace_is_cut_at_the_most_characters_of_one_call(monkeypatch):
    """pysbd is quadratic in one call's length on some texts without whitespace (``!?`` repeated: 8,000 characters
    took 2.7 s in one call); no call gets more than ``_BLOCK_MAX_CHARS``, and the sentences still tile the text."""
    calls = []
    real = sentences._segment_block

    def spy(block, a):
        calls.append(len(block))
        return real(block, a)

    monkeypatch.setattr("latechunk.sentences.segment._segment_block", spy)
    for unit in ("!?" * 300 + ".", '"\\', "“a.", "x" * 7):
        text = (unit * (20_000 // len(unit) + 1))[:20_000]
        calls.clear()
        spans = sentences._segment_text(text)
        assert max(calls) <= sentences._BLOCK_MAX_CHARS, (unit[:4], max(calls))
        assert spans[0, 0] == 0 and spans[-1, 1] == len(text) and (spans[1:, 0] >= spans[:-1, 1]).all(), unit[:4]
        assert "".join(text[s:e] for s, e in spans) == text  # nothing between sentences: no whitespace to drop


def test_the_cap_leaves_text_with_whitespace_as_it_was(monkeypatch):
    """Where whitespace follows within ``_BLOCK_MAX_CHARS`` the blocks are cut where they always were: the same
    sentences with the cap as with no cap, on real documents and on long paragraphs of long words."""
    rng = random.Random(3)
    texts = [" ".join("".join(rng.choice("abc.!?\"“”(") for _ in range(rng.randint(1, 900)))
                      for _ in range(rng.randint(2, 12))) for _ in range(40)]
    words = ["The", "cat", "sat.", "Dr.", "Smith", "left!", "Why?", "e.g.", "(see", "below)."]
    texts += [" ".join(rng.choice(words) for _ in range(3_000)) for _ in range(3)]
    capped = [sentences._segment_text(t).tolist() for t in texts]
    monkeypatch.setattr("latechunk.sentences.segment._BLOCK_MAX_CHARS", 10**9)
    assert [sentences._segment_text(t).tolist() for t in texts] == capped
