"""pysbd's English rules with a faster, output-identical abbreviation pass: :func:`_fast_english`.

Tests: ``tests/sentences/test_sentences.py`` (against stock pysbd on real corpora and generated text).
"""

from __future__ import annotations

import re

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
    code unchanged; ``tests/sentences/test_sentences.py`` checks
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
    # (checked over all of Unicode in tests/sentences/test_sentences.py): İ ı (i), ſ (s), the Kelvin sign (k)
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
