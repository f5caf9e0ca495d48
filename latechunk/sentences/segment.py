"""Sentence segmentation: text -> sentence char spans -> sentence token spans, owned by a run.

Sentences come from pysbd (Sadvilkar & Neumann, "PySBD: Pragmatic Sentence Boundary Disambiguation", 2020,
https://github.com/nipunsadvilkar/pySBD), a rule-based segmenter that keeps abbreviations ("Ph.D.", "e.g.",
"U.S.", "Dr."), decimals ("3.14") and list numbering inside their sentence. pysbd's own ``char_span`` option
locates each sentence with a regex search from the start of the text, so repeated sentences get the offset of the
first occurrence (the BR-001 fault); here each sentence is located with a monotone cursor instead: sentence i is
searched for only after the end of sentence i-1, and only whitespace may lie in between.

The text is segmented one paragraph (blank-line separated block) at a time: a sentence never crosses a blank
line, and pysbd's cost grows faster than linearly with the length of its input. pysbd also ends a sentence at a
line break, so headings, list items and table rows are sentences of their own.

State lives in a :class:`SentenceSegmenter`, one per run: its cache (each document's sentences, segmented once
for every strategy of the run) and its worker processes (:meth:`SentenceSegmenter.presegment` segments a group's
paragraphs ahead in ``python -m latechunk._sentence_worker`` subprocesses). The module holds no per-run state:
only the pysbd segmenter, built once on first use, made faster with its output unchanged (pysbd 0.3.4; measured in
``scripts/bench_segment.py``, results/segment.md): a faster abbreviation pass (:func:`_fast_english`); a gate
in front of pysbd's regular expressions that skips each one whose required characters the text lacks
(:func:`_required_chars`, :class:`_GatedRe`, with a cache of compiled patterns); and no pysbd call at all for a
block that holds none of the characters pysbd acts on (:class:`_FastProcess`). Stock pysbd stays available
(``_pysbd_segmenter(fast=False)``) and is what the tests compare against.

Tested in ``tests/test_sentences.py`` (against stock pysbd on real corpora and generated text; the gate's premise on
pysbd's own patterns; workers against one process),
``tests/test_strategies.py`` and ``tests/test_cases_strategies.py`` (BR-009).
"""

from __future__ import annotations

import array
import functools
import json
import os
import queue
import re
import sys
import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np

from latechunk.types import Document, Tokenization

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self from Python 3.11

__all__ = [
    "LINE_BREAK",
    "PARAGRAPH_BREAK",
    "PYSBD_PLACEHOLDERS",
    "SentenceSegmenter",
    "default_workers",
]

#: a line break: CRLF, LF, or a lone CR (the three that markdown-it and ``str.splitlines`` agree on)
LINE_BREAK = re.compile(r"\r\n|\n|\r(?!\n)")
#: a blank line: a line break, optional horizontal whitespace, a line break (``\r\n\r\n`` counts, BR-005)
PARAGRAPH_BREAK = re.compile(r"(?:\r\n|\n|\r(?!\n))[^\S\r\n]*(?:\r\n|\n|\r(?!\n))")
_NON_SPACE = re.compile(r"\S+")
_SPACE = re.compile(r"\s")
#: the characters pysbd 0.3.4 substitutes for punctuation while it works and turns back into punctuation (or
#: deletes) at the end (BR-021): ``∯ ∮`` periods, ``♨ ☝ ✂ ⌬`` list markers and parentheses, ``ȸ`` a temporary
#: sentence end, ``ȹ`` a line break, ``☉ ☈ ☇ ☄`` ``?!``/``!?``/``??``/``!!``, ``☏ ƪ ♟ ♝`` ellipses, ``♬ ♭``
#: Arabic comma and colon, ``ᓰ ᓱ ᓳ ᓴ ᓷ ᓸ ⎋`` (inside ``&..&``) quoted or bracketed punctuation and ``'``. Read
#: from its ``lang/common/*.py``, ``processor.py``, ``lists_item_replacer.py``, ``punctuation_replacer.py`` and
#: ``abbreviation_replacer.py``; ``tests/test_sentences.py`` scans pysbd's source for any it does not list.
PYSBD_PLACEHOLDERS = "∯∮♨☝✂⌬ȸȹ☉☈☇☄☏ƪ♟♝♬♭ᓰᓱᓳᓴᓷᓸ⎋"
#: one character for one character, so every offset stays: the separators \x1c-\x1f become a space, and each
#: placeholder a stand-in pysbd gives no meaning to, of the same regex class (``\w`` or not), so that word
#: boundaries around it stay where they were: a letter (U+A000, YI SYLLABLE IT) for the letters, a private-use
#: character (U+E000) for the symbols
_STAND_INS = {c: " " for c in range(0x1C, 0x20)} | {
    ord(c): ("\ua000" if re.match(r"\w", c) else "\ue000") for c in PYSBD_PLACEHOLDERS
}
_LINE = re.compile(r"\S(?:[^\r\n]*\S)?")  # a line's text without its outer whitespace
#: characters per pysbd call (see _segment_paragraph)
_BLOCK_CHARS = 1000
#: the most characters of one pysbd call: a block with no whitespace after its first ``_BLOCK_CHARS`` is cut here
#: (several of pysbd 0.3.4's patterns are quadratic in one call's length on text without whitespace: ``!?``,
#: ``"\\`` or ``“a.`` repeated; 8,000 characters of ``!?`` took 2.7 s in one call, 80,000 would take minutes)
_BLOCK_MAX_CHARS = 2 * _BLOCK_CHARS

#: the characters that ``re.IGNORECASE`` matches to an ASCII letter other than its own two cases (İ ı ſ K)
_CASE_FOLDS_TO_ASCII = "[\u0130\u0131\u017f\u212a]"
#: the pysbd release whose abbreviation loop :func:`_fast_english` replaces (its code is copied there)
_PYSBD_PATCHED_VERSION = "0.3.4"


def _fast_english():
    r"""The English rules of pysbd with a faster, output-identical abbreviation pass (pysbd 0.3.4 only).

    pysbd's ``AbbreviationReplacer.search_for_abbreviations_in_string`` loops, per line, over ~200
    abbreviations; for each one that occurs as a substring (``"a"``, ``"no"``, ``"st"`` almost always do) it
    finds every word that starts with it and runs one ``re.sub`` over the line per such word, about half of
    pysbd's time. Each of those substitutions rewrites only a period right after the abbreviation
    (``(?<=\s{abbr})\.``), so when the line has no match of ``(?:^|\s){abbr}\.`` (case-insensitive, the
    abbreviation as the same unescaped pattern pysbd's own ``findall`` uses) none of them can change anything,
    and the abbreviation is skipped here. Cheaper tests first: an abbreviation of ASCII letters and digits can
    match only where a whitespace-delimited token starts with it and a period (one set lookup per abbreviation),
    unless the line holds a character that case-folds to an ASCII letter (``İ ı ſ K``); then its last letter must
    stand right before some period. The rest is pysbd's
    code unchanged; ``tests/test_sentences.py`` checks
    the output against stock pysbd on real corpora and on generated text. Any other pysbd version gets stock
    pysbd.
    """
    import pysbd
    from pysbd.lang.english import English

    if getattr(pysbd, "__version__", None) != _PYSBD_PATCHED_VERSION:
        return English
    guards: dict[str, re.Pattern] = {}
    abbreviations = English.Abbreviation.ABBREVIATIONS
    stripped_all = tuple(a.strip() for a in abbreviations)
    max_stripped = max(map(len, stripped_all), default=0)
    # abbreviations of ASCII lowercase letters and digits only: no regex meaning, and under IGNORECASE they match
    # only their own upper and lower case letters, in a line without any of the characters below
    plain = frozenset(a for a in stripped_all if re.fullmatch(r"[a-z0-9]+", a))
    # the only characters that re's IGNORECASE matches to an ASCII letter or digit other than its own two cases
    # (checked over all of Unicode in tests/test_sentences.py): İ ı (i), ſ (s), the Kelvin sign (k)
    case_folds_to_ascii = re.compile(_CASE_FOLDS_TO_ASCII)

    class FastAbbreviationReplacer(English.AbbreviationReplacer):
        def search_for_abbreviations_in_string(self, text):
            if "." not in text:  # every substitution below needs a period
                return text
            words = None
            own = self.lang.Abbreviation.ABBREVIATIONS
            stripped_own = stripped_all if own is abbreviations else [a.strip() for a in own]
            # a prefix longer than the longest abbreviation matches none: without this bound a token of n
            # periods (200,000 dots, a minified file) stored n prefixes of up to n characters (O(n^2) memory)
            longest = max_stripped if own is abbreviations else max(map(len, stripped_own), default=0)
            if case_folds_to_ascii.search(text) is None:
                # in such a line, (?:^|\s){abbr}\. matches for a plain abbreviation only where some
                # whitespace-delimited token (str.split() and \s agree on all of Unicode) starts with abbr + "."
                # (in any ASCII case); a set of every token's prefixes before each of its periods, lowercased.
                # Substitutions below only turn periods into "∯", so for the changed line this set only shrinks: a
                # superset, enough to skip
                words = set()
                for token in text.split():
                    k = token.find(".")
                    if k != -1:
                        token = token.lower()
                        while k != -1 and k <= longest:
                            words.add(token[:k])
                            k = token.find(".", k + 1)
            # the characters right before a period, lowercased; a non-ASCII one may case-fold to an ASCII letter
            # ("ſ" matches "s"), and then only the regex guard decides
            before, exotic = set(), False
            if words is None:
                i = text.find(".", 1)
                while i != -1:
                    c = text[i - 1]
                    if c.isascii():
                        before.add(c.lower())
                    else:
                        exotic = True
                    i = text.find(".", i + 1)
            lowered = text.lower()
            if words is not None:  # (in words implies pysbd's own test, in lowered)
                todo = [a for a in stripped_own if (a in words if a in plain else a in lowered)]
            else:
                todo = [a for a in stripped_own if a in lowered]
            for stripped in todo:
                if words is None:
                    last = stripped[-1]
                    if (not exotic and last.isascii() and last.isalnum() and stripped[-2:-1] != "\\"
                            and last.lower() not in before):
                        continue  # the guard's match would need this letter right before a period
                guard = guards.get(stripped)
                if guard is None:
                    guard = guards[stripped] = re.compile(rf"(?:^|\s){stripped}\.", re.IGNORECASE)
                if not guard.search(text):
                    continue
                abbrev_match = re.findall(rf"(?:^|\s|\r|\n){stripped}", text, flags=re.IGNORECASE)
                if not abbrev_match:
                    continue
                next_word_start = r"(?<={" + str(re.escape(stripped)) + "} ).{1}"
                char_array = re.findall(next_word_start, text)
                for ind, match in enumerate(abbrev_match):
                    text = self.scan_for_replacements(text, match, ind, char_array)
            return text

    class FastEnglish(English):
        AbbreviationReplacer = FastAbbreviationReplacer

    return FastEnglish


#: characters without which pysbd 0.3.4 (English, placeholders replaced) leaves a block's lines as they are: its
#: sentence ends ``.!?`` and their full-width forms, and ``)`` (list items ``1)``/``a)``, ``"(...)"`` splits); see
#: :class:`_PlainLinesProcess`
_PYSBD_TRIGGERS = re.compile(r"[.!?。．！？)]")
#: pysbd's ``QUOTATION_AT_END_OF_SENTENCE_REGEX`` (``-" A`` ends a sentence even without a period)
_PYSBD_QUOTE_END = re.compile(r"[!?\.-][\"\'“”]\s{1}[A-Z]")
#: extra necessary conditions (a pattern -> a probe; no probe match, no pattern match) for the slowest of pysbd's
#: list scans (``lists_item_replacer.py``), run without flags over every block: the numbered-list scan (each of
#: its 12 branches is 1-2 digits right before ``.`` and then whitespace or ``)``), the letter-and-period scan (a
#: letter after whitespace or at the start, then ``.``), the letter-and-parenthesis scan (letters, then ``)``)
_PROBES = {
    r"\s\d{1,2}(?=\.\s)|^\d{1,2}(?=\.\s)|\s\d{1,2}(?=\.\))|^\d{1,2}(?=\.\))|(?<=\s\-)\d{1,2}(?=\.\s)|(?<=^\-)\d{1,2}"
    r"(?=\.\s)|(?<=\s\⁃)\d{1,2}(?=\.\s)|(?<=^\⁃)\d{1,2}(?=\.\s)|(?<=s\-)\d{1,2}(?=\.\))|(?<=^\-)\d{1,2}(?=\.\))|"
    r"(?<=\s\⁃)\d{1,2}(?=\.\))|(?<=^\⁃)\d{1,2}(?=\.\))": r"\d\.[\s)]",
    r"(?<=^)[a-z](?=\.)|(?<=\A)[a-z](?=\.)|(?<=\s)[a-z](?=\.)": r"(?:\A|\s)[a-z]\.",
    r"(?<=\()[a-z]+(?=\))|(?<=^)[a-z]+(?=\))|(?<=\A)[a-z]+(?=\))|(?<=\s)[a-z]+(?=\))": r"[a-z]\)",
}
#: pysbd patterns the gate runs as an equivalent pattern without super-linear backtracking (same matches, same
#: groups where pysbd's replacement reads them; tests/test_regex_linear.py checks both on random strings and
#: against stock pysbd). pysbd's ``NUMBERED_REFERENCE_REGEX`` (``Processor.replace_periods_before_numeric_references``,
#: replacement ``∯\2\r\7``) reads a bracketed reference as ``(\d{1,3},?\s?-?\s?)*\b\d{1,3}``: a run of digits splits
#: into parts of 1-3 digits in ~1.84^k ways, and a lone space is either ``\s?``, so ``x.[`` and a run of digits (or
#: of ``1 2 3 ...``) with no ``]`` took exponential time (26 digits: ~1 s, ~1.8x per digit). The same language, each
#: string read one way: digit runs of any length, each followed by one non-empty separator (``\b`` rules out an
#: empty one before the last number), then the last number of 1-3 digits. Group 4 (unused by pysbd) differs.
_LINEAR_PATTERNS = {
    r"(?<=[^\d\s])(\.|∯)((\[(\d{1,3},?\s?-?\s?)*\b\d{1,3}\])+|((\d{1,3}\s?)?\d{1,3}))(\s)(?=[A-Z])":
    r"(?<=[^\d\s])(\.|∯)((\[((?:\d+(?:,(?:\s-?\s?|-\s?)?|\s-?\s?|-\s?))*)\b\d{1,3}\])+|((\d{1,3}\s?)?\d{1,3}))(\s)"
    r"(?=[A-Z])",
}
#: the pysbd modules whose ``re`` calls go through :data:`_GATED_RE`
_PYSBD_RE_MODULES = ("pysbd.processor", "pysbd.utils", "pysbd.abbreviation_replacer", "pysbd.lists_item_replacer",
                     "pysbd.between_punctuation", "pysbd.exclamation_words", "pysbd.punctuation_replacer")


def _required_chars(pattern: str, flags: int = 0) -> tuple[str, ...]:
    r"""Characters a text must hold for ``pattern`` to match anywhere in it (a necessary condition only).

    Walks the parsed pattern (``re._parser``): a literal character, a character class of literals, a repeat with a
    minimum of one, a group, an atomic group and a positive lookahead or lookbehind (its characters must be in the
    text too) require their characters; an alternation requires the union of one requirement of each branch (none
    if a branch has none); everything else (``.``, ``\s``, negated classes, anchors, negative lookarounds, optional
    parts) requires nothing. Under ``re.IGNORECASE`` a cased character (``_sre.unicode_iscased``: a letter, or one
    that case-folds to one, like ``ſ`` or the Kelvin sign) requires nothing, since another character may match it.

    Args:
        pattern: A ``str`` regular expression.
        flags: ``re`` flags it is compiled with (inline flags are read from the pattern).

    Returns:
        A tuple of strings: every match needs, for each string, at least one of its characters in the text.
        Empty when nothing is required (or the pattern cannot be analysed).
    """
    import _sre

    try:
        from re import _constants as c
        from re import _parser as sre_parse
    except ImportError:  # pragma: no cover  (Python < 3.11)
        import sre_constants as c
        import sre_parse

    try:
        parsed = sre_parse.parse(pattern, flags)
    except Exception:  # noqa: BLE001  (not analysable: no requirement, the pattern is always run)
        return ()
    ignorecase = bool((flags | parsed.state.flags) & re.IGNORECASE)

    def chars(items, ic):
        out = []
        for op, av in items:
            if op is c.LITERAL:
                out.append(chr(av))
            elif op is c.RANGE and av[1] - av[0] < 64:
                out.extend(chr(x) for x in range(av[0], av[1] + 1))
            else:  # a category, a negation, a big range: anything may match
                return None
        if ic and any(_sre.unicode_iscased(ord(x)) for x in out):
            return None
        return "".join(sorted(set(out)))

    def walk(seq, ic):
        req: list[str] = []
        for op, av in seq:
            if op is c.LITERAL:
                got = chars([(op, av)], ic)
                if got:
                    req.append(got)
            elif op is c.IN:
                got = chars(av, ic)
                if got:
                    req.append(got)
            elif op is c.SUBPATTERN:
                _group, add_flags, _del_flags, sub = av
                req.extend(walk(sub, ic or bool(add_flags & re.IGNORECASE)))
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
                low, _high, sub = av
                if low >= 1:
                    req.extend(walk(sub, ic))
            elif op is c.ASSERT:  # positive lookahead/lookbehind
                req.extend(walk(av[1], ic))
            elif op is getattr(c, "ATOMIC_GROUP", None):
                req.extend(walk(av, ic))
            elif op is c.BRANCH:
                union = set()
                for branch in av[1]:
                    sub = walk(branch, ic)
                    if not sub:
                        union = None
                        break
                    union.update(min(sub, key=len))
                if union:
                    req.append("".join(sorted(union)))
        return req

    return tuple(dict.fromkeys(walk(parsed, ignorecase)))


class _GatedRe:
    """Stands in for the ``re`` module inside pysbd's modules: a call of ``sub``, ``findall``, ``search``,
    ``match``, ``split`` or ``finditer`` whose pattern needs a character the text lacks (:func:`_required_chars`)
    returns the no-match answer at once, without running the pattern; every other call runs the pattern, compiled
    once. Each answer equals what ``re`` gives (a pattern that cannot match the text leaves it unchanged), so the
    output of pysbd is unchanged, only faster: most of pysbd's ~150 regex calls per block look for characters the
    block does not hold.

    Only active in a thread while :class:`_FastProcess` runs there (``self.local.on``); otherwise each call is
    passed straight to ``re``, so stock pysbd stays stock (the tests compare the two).
    """

    #: compiled patterns kept (pysbd builds some per abbreviation and per case variant met in the text)
    MAX_PATTERNS = 4096

    def __init__(self) -> None:
        self.local = threading.local()
        self._compiled: dict = {}
        self._rule_groups: dict = {}

    def __getattr__(self, name):  # re.IGNORECASE, re.escape, re.compile, ...
        return getattr(re, name)

    def _entry(self, pattern, flags):
        """(compiled pattern, its tests, :func:`_required_chars`): each test a character (``in``) or a character
        class (``search``) that a text must hold for the pattern to match."""
        key = (pattern, flags)
        entry = self._compiled.get(key)
        if entry is None:
            compiled = re.compile(_LINEAR_PATTERNS.get(pattern, pattern) if isinstance(pattern, str) else pattern, flags)
            reqs = _required_chars(compiled.pattern, compiled.flags) if isinstance(compiled.pattern, str) else ()
            tests = tuple(r if len(r) == 1 else re.compile("[" + "".join(map(re.escape, r)) + "]") for r in reqs)
            probe = _PROBES.get(compiled.pattern)
            if probe is not None and not compiled.flags & re.IGNORECASE:
                tests += (re.compile(probe),)
            if len(self._compiled) >= self.MAX_PATTERNS:
                self._compiled.clear()
            entry = self._compiled[key] = (compiled, tests, reqs)
        return entry

    def _pattern(self, pattern, flags, string):
        """The compiled pattern, or None when it cannot match ``string``."""
        compiled, tests, _ = self._entry(pattern, flags)
        for test in tests:
            if test.__class__ is str:
                if test not in string:
                    return None
            elif test.search(string) is None:
                return None
        return compiled

    def _on(self, string) -> bool:
        return getattr(self.local, "on", False) and isinstance(string, str)

    def sub(self, pattern, repl, string, count=0, flags=0):
        if not self._on(string):
            return re.sub(pattern, repl, string, count=count, flags=flags)
        p = self._pattern(pattern, flags, string)
        return str(string) if p is None else p.sub(repl, string, count)

    def findall(self, pattern, string, flags=0):
        if not self._on(string):
            return re.findall(pattern, string, flags)
        p = self._pattern(pattern, flags, string)
        if p is None:
            return []
        # pysbd's list pass runs each of its findall twice on the same text (letters, then roman numerals;
        # numbered lists with parentheses): the last answer per pattern, within one process() call
        memo = self.local.findall_memo
        last = memo.get(p)
        if last is not None and last[0] == string:
            return list(last[1])
        found = p.findall(string)
        memo[p] = (string, found)
        return list(found)

    def search(self, pattern, string, flags=0):
        if not self._on(string):
            return re.search(pattern, string, flags)
        p = self._pattern(pattern, flags, string)
        return None if p is None else p.search(string)

    def match(self, pattern, string, flags=0):
        if not self._on(string):
            return re.match(pattern, string, flags)
        p = self._pattern(pattern, flags, string)
        return None if p is None else p.match(string)

    def split(self, pattern, string, maxsplit=0, flags=0):
        if not self._on(string):
            return re.split(pattern, string, maxsplit=maxsplit, flags=flags)
        p = self._pattern(pattern, flags, string)
        return [str(string)] if p is None else p.split(string, maxsplit)

    def finditer(self, pattern, string, flags=0):
        if not self._on(string):
            return re.finditer(pattern, string, flags)
        p = self._pattern(pattern, flags, string)
        return iter(()) if p is None else p.finditer(string)

    def apply(self, stock_apply, text, rules):
        """The ``Text(text).apply(*rules)`` of pysbd (one ``re.sub`` per rule, in order) with the gate. One test
        for the whole group: when the text holds no character of the union of each rule's first test, no rule can
        match, and the text comes back unchanged (each rule would see the same unchanged text)."""
        if not getattr(self.local, "on", False):
            return stock_apply(text, *rules)
        group = self._rule_groups.get(rules)
        if group is None:
            entries = [self._entry(rule.pattern, 0) for rule in rules]
            union = set()
            for _compiled, _tests, reqs in entries:
                if not reqs:
                    union = None
                    break
                union.update(reqs[0])
            probe = None
            if union:
                probe = re.compile("[" + "".join(map(re.escape, sorted(union))) + "]")
            if len(self._rule_groups) >= self.MAX_PATTERNS:
                self._rule_groups.clear()
            group = self._rule_groups[rules] = (probe, tuple((r, e[0], e[1]) for r, e in zip(rules, entries)))
        probe, members = group
        if probe is not None and probe.search(text) is None:
            return str(text) if rules and type(text) is not str else text
        for rule, compiled, tests in members:
            for test in tests:
                if test.__class__ is str:
                    if test not in text:
                        break
                elif test.search(text) is None:
                    break
            else:
                text = compiled.sub(rule.replacement, text)
        return str(text) if rules and type(text) is not str else text


_GATED_RE = _GatedRe()


class _FastProcess:
    """The ``Processor(text).process()`` of pysbd with :data:`_GATED_RE` on, and with no pysbd call at all for a text
    that holds none of :data:`_PYSBD_TRIGGERS` and no match of :data:`_PYSBD_QUOTE_END`: pysbd 0.3.4 then gives
    its lines, stripped, empty ones left out. Why: every rule pysbd applies before it splits at line breaks needs
    one of those characters (lists: ``.`` or ``)``; abbreviations, numbers, ellipses, e-mail and file names: ``.``;
    ``!!!``: ``!``/``?``; ``"(...)"``: ``)``; the placeholders are replaced before pysbd sees the text); a line is
    then processed further only if it holds a sentence end (``check_for_punctuation``); and what is left is
    ``post_process_segments``: ``strip()`` unless the line ends a quotation (:data:`_PYSBD_QUOTE_END`).
    ``tests/test_sentences.py`` checks both paths against stock pysbd on real corpora and on generated text."""

    def __init__(self, processor) -> None:
        self.processor = processor

    def process(self):
        text = self.processor.text
        if text and _PYSBD_TRIGGERS.search(text) is None and _PYSBD_QUOTE_END.search(text) is None:
            return [m.group() for m in _LINE.finditer(text)]
        local = _GATED_RE.local
        was, memo = getattr(local, "on", False), getattr(local, "findall_memo", None)
        local.on, local.findall_memo = True, {}
        try:
            return self.processor.process()
        finally:
            local.on, local.findall_memo = was, memo


class _FastSegmenter:
    """A pysbd ``Segmenter`` whose ``processor(text).process()`` is :class:`_FastProcess` (pysbd 0.3.4)."""

    def __init__(self, segmenter) -> None:
        self.segmenter = segmenter
        self.language_module = segmenter.language_module

    def processor(self, text: str) -> _FastProcess:
        return _FastProcess(self.segmenter.processor(text))


@functools.cache
def _pysbd_segmenter(fast: bool = True):
    """The pysbd segmenter (English, no cleaning), built once per process; ``fast=False`` gives stock pysbd
    (for tests). It holds no per-text state: each call of its ``processor`` is independent.

    ``fast`` (pysbd 0.3.4 only; any other version gets stock pysbd): the faster abbreviation pass
    (:func:`_fast_english`), pysbd's regex calls through :data:`_GATED_RE` (installed as the ``re`` of pysbd's
    modules, passing every call straight to ``re`` outside :class:`_FastProcess`), and the plain-lines path of
    :class:`_FastProcess`."""
    import importlib

    import pysbd

    seg = pysbd.Segmenter(language="en", clean=False, char_span=False)
    if not fast or getattr(pysbd, "__version__", None) != _PYSBD_PATCHED_VERSION:
        return seg
    seg.language_module = _fast_english()
    for name in _PYSBD_RE_MODULES:
        module = importlib.import_module(name)
        if module.re is re:
            module.re = _GATED_RE
    text_class = importlib.import_module("pysbd.utils").Text
    if not getattr(text_class.apply, "_latechunk_gated", False):
        stock_apply = text_class.apply

        def apply(self, *rules):
            return _GATED_RE.apply(stock_apply, self, rules)

        apply._latechunk_gated = True
        text_class.apply = apply
    return _FastSegmenter(seg)


def _paragraphs(text: str) -> list[tuple[int, int]]:
    """Char ranges of the blank-line separated blocks of ``text`` that hold a non-whitespace character."""
    out = []
    pos = 0
    for m in PARAGRAPH_BREAK.finditer(text):
        out.append((pos, m.start()))
        pos = m.end()
    out.append((pos, len(text)))
    return [(a, b) for a, b in out if not text[a:b].isspace() and a < b]


def _align(para: str, sentences: list[str]) -> list[tuple[int, int]] | None:
    """Locate each pysbd sentence in ``para`` with a monotone cursor; None if one is not where it must be.

    Each sentence, stripped, must start at the next non-whitespace character after the previous one's end.
    """
    spans = []
    cursor = 0
    n = len(para)
    for sent in sentences:
        s = sent.strip()
        if not s:
            continue
        # skip whitespace after the cursor
        while cursor < n and para[cursor].isspace():
            cursor += 1
        if not para.startswith(s, cursor):
            return None
        spans.append((cursor, cursor + len(s)))
        cursor += len(s)
    if para[cursor:].strip():
        return None
    return spans


def _align_non_space(para: str, sentences: list[str]) -> list[tuple[int, int]] | None:
    """Fallback alignment by counts of non-whitespace characters (when a sentence's whitespace was altered)."""
    if "".join("".join(sent.split()) for sent in sentences) != "".join(para.split()):
        return None
    # char position of the k-th non-whitespace character
    pos = np.fromiter(
        (i for m in _NON_SPACE.finditer(para) for i in range(m.start(), m.end())), dtype=np.int64
    )
    spans = []
    k = 0
    for sent in sentences:
        c = sum(len(w) for w in sent.split())
        if c == 0:
            continue
        spans.append((int(pos[k]), int(pos[k + c - 1]) + 1))
        k += c
    return spans


def _segment_block(block: str, a: int) -> list[tuple[int, int]]:
    """Sentence spans of one block (a substring of the text starting at char ``a``), in text coordinates."""
    # the separators \x1c-\x1f are whitespace to Python but make pysbd's list rule call int("\x1f1"), and pysbd
    # turns its own placeholder characters into punctuation or drops them (BR-021); one stand-in character for
    # each keeps every offset, and the sentences are located in this translated block
    block = block.translate(_STAND_INS)
    try:
        # pysbd's Processor gives the sentences; Segmenter.segment() would then re-find each one in the block
        # with a fresh regex per sentence (a third of its time); _align does that job with a cursor
        sentences = _pysbd_segmenter().processor(block).process()
    except Exception as err:  # noqa: BLE001  (pysbd is rule code: a crash on odd input must not stop a corpus)
        warnings.warn(
            f"pysbd failed on the block at chars [{a}, {a + len(block)}) ({type(err).__name__}: {err}); "
            "its lines are used as sentences",
            RuntimeWarning,
            stacklevel=4,
        )
        sentences = None
    spans = None if sentences is None else _align(block, sentences)
    if spans is None and sentences is not None:
        spans = _align_non_space(block, sentences)
        if spans is None:
            warnings.warn(
                f"pysbd changed the text of the block at chars [{a}, {a + len(block)}); its lines are used as "
                "sentences",
                RuntimeWarning,
                stacklevel=4,
            )
    if spans is None:  # one sentence per line (pysbd ends a sentence at every line break anyway)
        spans = [(m.start(), m.end()) for m in _LINE.finditer(block)]
    return [(a + s, a + e) for s, e in spans if e > s]


def _segment_paragraph(text: str, a: int, b: int) -> np.ndarray:
    """Sentence spans of ``text[a:b]`` ((n, 2) int32, in text coordinates), fed to pysbd in blocks of about
    ``_BLOCK_CHARS`` characters, so a long paragraph costs one block's transient and 8 bytes a sentence.

    pysbd's time grows with (characters x sentences) of one call, so a long paragraph is cut into blocks at
    whitespace; the last (possibly incomplete) sentence of a block is segmented again at the head of the next
    block, so every boundary is decided with the text on both sides of it. A block with no whitespace between
    ``_BLOCK_CHARS`` and ``_BLOCK_MAX_CHARS`` is cut at ``_BLOCK_MAX_CHARS`` (inside a run of non-space
    characters), so that no pysbd call is longer: a sentence is cut there only when it is the block's one sentence.
    """
    out = array.array("i")  # start, end, start, end, ... (4 bytes each, not a tuple of two ints per sentence)
    pos = a
    while pos < b:
        end = b
        if b - pos > _BLOCK_CHARS:
            most = min(b, pos + _BLOCK_MAX_CHARS)
            m = _SPACE.search(text, pos + _BLOCK_CHARS, most)
            end = m.start() if m else most
        spans = _segment_block(text[pos:end], pos)
        if end < b and len(spans) > 1:
            pos = spans[-1][0]
            spans = spans[:-1]
        else:
            pos = end
        for span in spans:
            out.extend(span)
    return np.frombuffer(out, dtype=np.int32).reshape(-1, 2) if out else np.zeros((0, 2), dtype=np.int32)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """(n, 2) int32 spans of several paragraphs, in order, read-only."""
    arr = np.concatenate(parts) if parts else np.zeros((0, 2), dtype=np.int32)
    arr = arr.astype(np.int32, copy=False).reshape(-1, 2)
    arr.setflags(write=False)
    return arr


def _segment_text(text: str) -> np.ndarray:
    """(n, 2) int32 sentence spans of the whole ``text``, uncached (read-only array)."""
    return _joined([_segment_paragraph(text, a, b) for a, b in _paragraphs(text)])


class _DocumentSentences:
    """One document's sentences, segmented lazily paragraph by paragraph and memoised, so every strategy of a
    run (recursive's sentence level, sentence_window, semantic, heading's long sections) shares one pysbd pass
    per paragraph instead of segmenting the same text again."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.paragraphs = _paragraphs(text)
        self.starts = np.asarray([a for a, _ in self.paragraphs], dtype=np.int64)
        self.ends = np.asarray([b for _, b in self.paragraphs], dtype=np.int64)
        self.memo: dict[int, np.ndarray] = {}  # paragraph -> its (n, 2) int32 sentence spans

    def spans(self, c0: int = 0, c1: int | None = None) -> np.ndarray:
        """(n, 2) int32 sentence spans of the paragraphs that overlap chars ``[c0, c1)``."""
        c1 = len(self.text) if c1 is None else c1
        i0 = int(np.searchsorted(self.ends, c0, side="right"))
        i1 = int(np.searchsorted(self.starts, c1, side="left"))
        out: list[np.ndarray] = []
        for i in range(i0, i1):
            if i not in self.memo:
                self.memo[i] = _segment_paragraph(self.text, *self.paragraphs[i])
            out.append(self.memo[i])
        return _joined(out)


class _SentenceCache:
    """Text -> :class:`_DocumentSentences`, least recently used first out, bounded by the characters it holds.

    The bound is in characters, not documents, so a whole group of short documents stays cached between the
    prefetch thread (which segments a group ahead) and the main thread (where ``semantic`` splits after the
    forward pass). The texts are the documents' own strings, already held by the pipeline.
    """

    def __init__(self, max_chars: int = 1 << 26) -> None:
        self.max_chars = max_chars
        self._items: OrderedDict[str, _DocumentSentences] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, text: str) -> _DocumentSentences:
        with self._lock:
            ds = self._items.get(text)
            if ds is not None:
                self._items.move_to_end(text)
                return ds
            ds = self._items[text] = _DocumentSentences(text)
            self._chars += len(text)
            while self._chars > self.max_chars and len(self._items) > 1:
                old, _ = self._items.popitem(last=False)
                self._chars -= len(old)
            return ds

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._chars = 0


# --- segmenting many paragraphs at once, in worker processes -------------------------------------------------


def _segment_many(paragraphs: list[str]) -> list[list[tuple[int, int]]]:
    """Worker task: sentence spans of each paragraph, in the paragraph's own coordinates."""
    return [_segment_paragraph(p, 0, len(p)).tolist() for p in paragraphs]


def _worker_main() -> None:
    """``python -m latechunk._sentence_worker``: one JSON list of paragraphs per stdin line, one JSON list of
    their sentence spans per stdout line; ends at end of input (the parent closed the pipe, or died)."""
    import signal

    # Ctrl-C reaches the whole process group: the parent handles it, and a worker ends when its pipe closes
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout = sys.stderr  # only the replies go to the pipe, whatever else prints
    for line in sys.stdin.buffer:
        reply = json.dumps(_segment_many(json.loads(line)), separators=(",", ":"))
        out.write(reply.encode("ascii") + b"\n")
        out.flush()


class _WorkerPool:
    """``n`` worker processes (``python -m latechunk._sentence_worker``), fed over pipes, one task at a time each.

    They are plain subprocesses that import only this module (numpy and pysbd): unlike multiprocessing's
    spawn and forkserver methods they never import the caller's main module (so a script needs no
    ``if __name__ == "__main__":`` guard), and unlike fork they copy no torch, CUDA or tokenizer threads. A
    worker ends when its input pipe closes, so none outlives this process.
    """

    def __init__(self, n: int) -> None:
        import subprocess
        from concurrent.futures import ThreadPoolExecutor

        env = dict(os.environ)  # the workers import this very package, installed or not
        # the folder that holds latechunk/ (this file is latechunk/sentences/<module>.py)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(x for x in (root, env.get("PYTHONPATH", "")) if x)
        cmd = [sys.executable, "-m", "latechunk._sentence_worker"]
        self.n = n
        self.procs = [subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
                      for _ in range(n)]
        self.free: queue.SimpleQueue = queue.SimpleQueue()
        for proc in self.procs:
            self.free.put(proc)
        self.threads = ThreadPoolExecutor(n, thread_name_prefix="latechunk-sentences")

    def _run(self, paragraphs: list[str]) -> list:
        proc = self.free.get()
        try:
            proc.stdin.write(json.dumps(paragraphs).encode("ascii") + b"\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"sentence worker (pid {proc.pid}) exited with code {proc.wait()}")
            return json.loads(line)
        finally:
            self.free.put(proc)

    def map(self, tasks: list[list[str]]) -> list[list]:
        """Sentence spans per task, in task order (tasks run on the workers in parallel)."""
        return list(self.imap(tasks))

    def imap(self, tasks: list[list[str]]):
        """As :meth:`map`, but returns at once: an iterator over the results, in task order."""
        return self.threads.map(self._run, tasks)

    def ready(self) -> None:
        """Wait until every worker has started and answered."""
        self.map([[] for _ in range(self.n)])

    def close(self) -> None:
        """End the workers (close their input; kill any that does not exit within 5 s)."""
        self.threads.shutdown(wait=False, cancel_futures=True)
        for proc in self.procs:
            try:
                proc.stdin.close()
            except OSError:
                pass
        for proc in self.procs:
            try:
                proc.wait(timeout=5)
            except Exception:  # noqa: BLE001
                proc.kill()


def default_workers() -> int:
    """The CLI's default sentence worker count (``--sentence-workers``).

    Returns:
        One per CPU core the process may use (``os.sched_getaffinity``), less one for the main process, at most
        16; 0 (segment in the calling thread) on a machine with fewer than 4 cores.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return 0 if cores < 4 else min(16, cores - 1)


def _long_line_paragraphs(ds: _DocumentSentences, token_starts: np.ndarray, min_tokens: int) -> np.ndarray:
    """(n_paragraphs,) bool: the paragraph holds a line of more than ``min_tokens`` tokens (a token belongs to
    the line its first character is in)."""
    text = ds.text
    line_starts = np.fromiter((m.end() for m in LINE_BREAK.finditer(text)), dtype=np.int64)
    line_starts = np.concatenate([[0], line_starts])
    counts = np.diff(np.searchsorted(np.asarray(token_starts, dtype=np.int64), np.append(line_starts, len(text)),
                                     side="left"))
    long_lines = line_starts[counts > min_tokens]
    hit = np.zeros(len(ds.paragraphs), dtype=bool)
    if long_lines.size and len(ds.paragraphs):
        # a long line is in the paragraph whose range holds its first character (blank lines are in none)
        i = np.searchsorted(ds.starts, long_lines, side="right") - 1
        ok = (i >= 0) & (long_lines < ds.ends[np.maximum(i, 0)])
        hit[i[ok]] = True
    return hit


def _check_count(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"SentenceSegmenter: {name} must be an int, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"SentenceSegmenter: {name} must be >= {minimum}, got {name}={value}")
    return int(value)


class SentenceSegmenter:
    """The sentences of a run's documents: pysbd segmentation with a per-run cache and optional worker processes.

    One segmenter serves every strategy of a run (the pipeline makes one per run and passes it to each
    ``Strategy.split``), so a document is segmented once, however many strategies read its sentences. Each
    document's paragraphs are segmented lazily, when first asked for, and kept in a cache keyed by the document
    text, least recently used out first, bounded by ``max_cache_chars`` characters of text (a document longer
    than the bound is still kept alone). :meth:`presegment` segments the paragraphs a run will need ahead of the
    split, in ``workers`` subprocesses (started on first use, ended by :meth:`close`, by ``with``, when the
    segmenter is garbage collected, or at interpreter exit). The output is the same with or without workers.

    Thread safety: the cache may be read and filled from several threads (the pipeline's prefetch thread and its
    main thread); at worst two threads segment the same paragraph, with the same result.

    Args:
        workers: Worker processes for :meth:`presegment`; 0 or 1: segment in the calling thread. The CLI's
            default is :func:`default_workers`.
        max_cache_chars: Characters of document text whose sentences stay cached (default 64 M).
        task_chars: Characters of paragraphs per task sent to a worker (default 32 k).
        min_pool_chars: Below this many characters to segment, :meth:`presegment` stays in the calling thread
            (workers are not worth their messages; default 64 k).

    Raises:
        TypeError: if an argument is not an int.
        ValueError: if ``workers`` or ``min_pool_chars`` is negative, or ``max_cache_chars`` or ``task_chars`` is
            not positive.

    Example::

        with SentenceSegmenter(workers=4) as sentences:
            sentences.presegment(texts)
            spans = sentences.char_spans(texts[0])  # (n, 2) int32, from the cache
    """

    def __init__(self, workers: int = 0, *, max_cache_chars: int = 1 << 26, task_chars: int = 1 << 15,
                 min_pool_chars: int = 1 << 16) -> None:
        self._workers = _check_count("workers", workers, 0)
        self.task_chars = _check_count("task_chars", task_chars, 1)
        self.min_pool_chars = _check_count("min_pool_chars", min_pool_chars, 0)
        self._cache = _SentenceCache(_check_count("max_cache_chars", max_cache_chars, 1))
        self._pool: _WorkerPool | None = None
        self._pool_closer: weakref.finalize | None = None
        self._pool_lock = threading.Lock()

    @property
    def workers(self) -> int:
        """Worker processes :meth:`presegment` uses (0 or 1: none)."""
        return self._workers

    @property
    def running_workers(self) -> int:
        """Worker processes started and not yet closed (0 until a :meth:`presegment` needs them)."""
        pool = self._pool
        return 0 if pool is None else pool.n

    def __repr__(self) -> str:
        return f"SentenceSegmenter(workers={self._workers}, running_workers={self.running_workers})"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- sentences of one document ---------------------------------------------------------------------------

    def char_spans(self, text: str, cache: bool = True) -> np.ndarray:
        """Sentence char spans of ``text``.

        Args:
            text: Any string.
            cache: Keep the segmentation for later calls on the same text (this segmenter's cache); pass False
                for one-off strings.

        Returns:
            (n_sentences, 2), int32, read-only. Half-open ``[start, end)`` char offsets, increasing and
            disjoint; each span starts and ends on a non-whitespace character; together they hold every
            non-whitespace character. ``(0, 2)`` for an empty or whitespace-only text.

        Raises:
            TypeError: if ``text`` is not a ``str``.
        """
        if not isinstance(text, str):
            raise TypeError(f"SentenceSegmenter.char_spans expects str, got {type(text).__name__}")
        return self._cache.get(text).spans() if cache else _segment_text(text)

    def char_spans_in(self, text: str, c0: int, c1: int) -> np.ndarray:
        """Sentence char spans of the paragraphs of ``text`` that overlap chars ``[c0, c1)`` (only those
        paragraphs are segmented, once per document; cached).

        Args:
            text: The document text.
            c0: First char of the range.
            c1: End of the range (exclusive, chars).

        Returns:
            (n, 2), int32, read-only, as :meth:`char_spans`; spans may reach outside ``[c0, c1)``.
        """
        return self._cache.get(text).spans(c0, c1)

    def token_spans(self, doc: Document | str, tok: Tokenization, keys: np.ndarray | None = None) -> np.ndarray:
        """Sentence token spans: each content token goes to the sentence its first character lies in.

        Args:
            doc: The document (or its text).
            tok: Its whole-document tokenization.
            keys: (n_content,) int, non-decreasing, or None: where a cut before each content token falls in the
                text. The strategies pass :attr:`latechunk.tokenize.ContentTokens.keys`, so that whitespace
                tokens (byte-level BPE, SentencePiece) stay with the sentence before them and a token that
                starts with a space (``" fox"``) goes with its word (BR-023); None: the tokens' start offsets
                (the same thing for WordPiece).

        Returns:
            (n_sentences, 2), int32. Half-open positions into ``tok`` (frame tokens excluded): non-empty,
            increasing, tiling the content tokens ``[tok.content_start, tok.content_end)`` exactly; none for a
            text without sentences (only whitespace). A sentence with no token of its own (e.g. only characters
            the tokenizer drops) is absorbed by its neighbour. Tokens that share a start offset (one character
            split into several wordpieces) always stay together.

        Raises:
            ValueError: if ``keys`` is not one value per content token.
        """
        text = doc.text if isinstance(doc, Document) else doc
        cs, ce = tok.content_start, tok.content_end
        if ce <= cs:
            return np.zeros((0, 2), dtype=np.int32)
        starts = tok.offsets[cs:ce, 0].astype(np.int64) if keys is None else np.asarray(keys, dtype=np.int64)
        if starts.shape != (ce - cs,):
            raise ValueError(f"token_spans: {starts.shape} keys for {ce - cs} content tokens")
        sent = self.char_spans(text)
        if sent.shape[0] == 0:  # whitespace only (in tokens of its own): no sentence, no span
            return np.zeros((0, 2), dtype=np.int32)
        if sent.shape[0] == 1:
            return np.asarray([[cs, ce]], dtype=np.int32)
        # a cut before the first token whose start (key) is at or after each sentence start (after the first)
        cuts = np.searchsorted(starts, sent[1:, 0], side="left")
        cuts = np.unique(cuts[(cuts > 0) & (cuts < starts.shape[0])])
        bounds = np.concatenate([[0], cuts, [starts.shape[0]]]) + cs
        return np.stack([bounds[:-1], bounds[1:]], axis=1).astype(np.int32)

    def clear_cache(self) -> None:
        """Forget every cached segmentation (benchmarks call it to time a cold start)."""
        self._cache.clear()

    # --- many documents ahead, in worker processes -----------------------------------------------------------

    def presegment(
        self,
        texts: Sequence[str],
        min_tokens: int = 0,
        token_starts: Sequence[np.ndarray] | None = None,
    ) -> dict:
        """Segment the paragraphs of ``texts`` now, ahead of the strategies that will ask for their sentences.

        The results go to this segmenter's cache, so the later :meth:`char_spans`, :meth:`char_spans_in` and
        :meth:`token_spans` calls cost only a lookup. With ``workers > 1`` and at least ``min_pool_chars``
        characters to segment, the paragraphs are sent, in tasks of about ``task_chars`` characters, to the
        worker processes (started on the first such call and kept until :meth:`close`): pysbd is pure Python,
        about 220k MiniLM tokens (~0.9 M characters) per second on one core (``scripts/bench_segment.py``), so
        on a many-core GPU box this is what keeps
        sentence-based chunking behind the forward pass. A paragraph longer than ``task_chars`` is segmented in
        the calling thread meanwhile (pysbd goes through it block by block in order anyway; here it needs no copy
        in a message, and Ctrl-C or a stopped run acts between its blocks). If the workers fail (one died, say), they are closed and
        the paragraphs are segmented here instead, with a ``RuntimeWarning``; the output is the same either way.

        Args:
            texts: Document texts.
            min_tokens: With ``token_starts``: segment only paragraphs that hold a line of more than this many
                tokens (the others stay lazy: recursive and heading cut at sentences only inside a line over
                their budget). 0, or no ``token_starts``: every paragraph.
            token_starts: Per text, (n_tokens,) int, sorted: the start char offset of each content token.

        Returns:
            ``{"paragraphs": n, "chars": n, "workers": n}``: what was segmented now (already cached paragraphs
            excluded), its characters, and by how many processes (0: in this thread).

        Raises:
            ValueError: if ``token_starts`` is given with a length other than ``len(texts)``.
        """
        todo: list[tuple[_DocumentSentences, int]] = []
        chars = 0
        if token_starts is not None and len(token_starts) != len(texts):
            raise ValueError(f"presegment: {len(texts)} texts but {len(token_starts)} token_starts arrays")
        for k, text in enumerate(texts):
            ds = self._cache.get(text)
            wanted = None
            if min_tokens > 0 and token_starts is not None:
                wanted = _long_line_paragraphs(ds, token_starts[k], min_tokens)
            for i, (a, b) in enumerate(ds.paragraphs):
                if (wanted is None or wanted[i]) and i not in ds.memo:
                    todo.append((ds, i))
                    chars += b - a
        workers = self._workers
        used = workers if workers > 1 and chars >= self.min_pool_chars else 0
        if used:
            try:
                self._segment_in_workers(todo)
            except Exception as err:  # noqa: BLE001  (the pool is a speed-up: fall back to this thread)
                warnings.warn(
                    f"sentence segmentation in {workers} worker processes failed ({type(err).__name__}: {err}); "
                    "segmenting in this process instead",
                    RuntimeWarning,
                    stacklevel=2,
                )
                self.close()
                used = 0
        if not used:
            for ds, i in todo:
                if i not in ds.memo:
                    ds.memo[i] = _segment_paragraph(ds.text, *ds.paragraphs[i])
        return {"paragraphs": len(todo), "chars": chars, "workers": used}

    def _segment_in_workers(self, todo: list[tuple[_DocumentSentences, int]]) -> None:
        # a paragraph longer than a task is segmented here, while the workers take the others: pysbd goes through
        # it block by block in sequence anyway, and here it costs no copy of it in a message and stops at Ctrl-C
        # between blocks (a worker busy with one paragraph for minutes would hold the run until it is done)
        long = [(ds, i) for ds, i in todo if ds.paragraphs[i][1] - ds.paragraphs[i][0] > self.task_chars]
        todo = [(ds, i) for ds, i in todo if ds.paragraphs[i][1] - ds.paragraphs[i][0] <= self.task_chars]
        tasks: list[list[tuple[_DocumentSentences, int]]] = [[]]
        size = 0
        for item in todo:
            if size >= self.task_chars:
                tasks.append([])
                size = 0
            tasks[-1].append(item)
            a, b = item[0].paragraphs[item[1]]
            size += b - a
        texts_per_task = [[ds.text[slice(*ds.paragraphs[i])] for ds, i in task] for task in tasks if task]
        results = self._started_pool().imap(texts_per_task) if texts_per_task else iter(())
        for ds, i in long:
            if i not in ds.memo:
                ds.memo[i] = _segment_paragraph(ds.text, *ds.paragraphs[i])
        for task, result in zip([t for t in tasks if t], results):
            for (ds, i), spans in zip(task, result):
                a = ds.paragraphs[i][0]
                ds.memo[i] = np.asarray(spans, dtype=np.int32).reshape(-1, 2) + np.int32(a)

    def _started_pool(self) -> _WorkerPool:
        with self._pool_lock:
            if self._pool is None:
                pool = _WorkerPool(self._workers)
                # the processes end with the segmenter (garbage collected) or at interpreter exit, whichever first;
                # the callback holds the pool, not the segmenter
                self._pool_closer = weakref.finalize(self, pool.close)
                self._pool = pool
            return self._pool

    def start(self) -> None:
        """Start the worker processes now and wait until each has answered (otherwise the first
        :meth:`presegment` that needs them starts them). Nothing to do with fewer than 2 workers."""
        if self._workers > 1:
            self._started_pool().ready()

    def close(self) -> None:
        """End the worker processes, if any are running (close their input; kill any that does not exit within
        5 s). The cache is kept and the segmenter stays usable; a later :meth:`presegment` that needs workers
        starts them again."""
        with self._pool_lock:
            closer, self._pool_closer = self._pool_closer, None
            self._pool = None
        if closer is not None:
            closer()  # pool.close(), once
