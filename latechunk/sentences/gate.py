"""A gate in front of pysbd's regular expressions: a pattern that needs a character the text lacks is not run.

:func:`_required_chars` reads a pattern's required characters; :class:`_GatedRe` (one instance,
:data:`_GATED_RE`) stands in for ``re`` inside pysbd's modules, with a cache of compiled patterns, the probes
of :data:`_PROBES` and the linear-time equivalents of :data:`_LINEAR_PATTERNS`. Active only while
:class:`latechunk.sentences.pysbd_segmenter._FastProcess` runs.

Tests: ``tests/sentences/test_sentences.py`` (the gate's premise on pysbd's own patterns),
``tests/test_regex_linear.py``.
"""

from __future__ import annotations

import re
import threading

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
