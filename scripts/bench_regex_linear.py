#!/usr/bin/env python3
"""Doubling ratios of latechunk's rewritten regular expressions and of the sentence segmenter on adversarial text.

Each case is timed (CPU seconds of this process, ``time.process_time``; best of ``--repeats``) at sizes n, 2n, 4n;
a ratio above ``--max-ratio`` (default 3) per doubling marks the case SUPERLINEAR. Cases:

- ``fixed``: what tests/test_regex_linear.py checks for equality with the old patterns, on inputs the old ones took
  exponential or quadratic time on: front matter with no closing fence and CRLF lines
  (``latechunk.front_matter.FRONT_MATTER``), a run of heading lines (``latechunk.console._drop_leading_headings``),
  a bracketed reference with no ``]`` (pysbd's ``NUMBERED_REFERENCE_REGEX`` as the gate of
  ``latechunk.sentences`` runs it);
- ``pysbd``: :meth:`latechunk.sentences.SentenceSegmenter.char_spans` (pysbd as latechunk calls it) on texts of
  one repeated unit. latechunk hands pysbd blocks of ~1,000 characters cut at whitespace, and at most 2,000
  (``_BLOCK_MAX_CHARS``) where there is none, so pysbd's own quadratic scans (pysbd 0.3.4, not patched: ``!?``
  or ``"\\`` repeated, ``BETWEEN_DOUBLE_QUOTES_REGEX_2``; an opener with no closer before each sentence end,
  ``(a.``, ``“a.``, ``「a.``, ``SENTENCE_BOUNDARY_REGEX``, ``BETWEEN_QUOTE_SLANTED_REGEX_2``) cost a constant
  per block.

    python3 scripts/bench_regex_linear.py [--cases fixed,pysbd] [--sizes 10000,20000,40000] [--repeats 3]
    python3 scripts/bench_regex_linear.py --cases pysbd --uncapped --sizes 2000,4000,8000   # the cap lifted

``--uncapped`` lifts ``_BLOCK_MAX_CHARS`` (one pysbd call over a paragraph without whitespace, as before the cap),
to show what the cap buys; use small sizes, the quadratic cases take seconds at 8,000 characters.

Exit status 1 when a ``fixed`` case is SUPERLINEAR (the ``pysbd`` cases only report). Not a timed test: the
numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _rep(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def fixed_cases() -> dict:
    import re

    from latechunk import console, sentences
    from latechunk.front_matter import FRONT_MATTER

    ref = re.compile(next(iter(sentences._LINEAR_PATTERNS.values())))
    return {
        "front_matter_crlf": lambda n: FRONT_MATTER.match("---\r\n" + "\r\n" * (n // 2)),
        "front_matter_lines": lambda n: FRONT_MATTER.match("---\r\n" + _rep("k: v\r\n", n)),
        "headings": lambda n: console._drop_leading_headings(_rep("# a\n", n) + "x"),
        "reference_digits": lambda n: ref.sub(r"X\2\r\7", "See A a.[" + "1" * n + " x"),
        "reference_spaced": lambda n: ref.sub(r"X\2\r\7", "See A a.[" + _rep("1 ", n) + " x"),
    }


PYSBD_UNITS = {
    "spaces": " ", "tabs": "\t", "newlines": "\n", "dots": ".", "ellipsis": "...", "ellipsis_sp": "... ",
    "bang_q": "!?", "quotes": '"', "parens": "()", "digits_dots": "1.", "letters_dots": "a.",
    "letters_dots_sp": "a. ", "email": "a@b.c", "url_sp": "http://www.example.com/a.b?c=d ", "mr": "Mr. ",
    "mr_nosp": "Mr.", "sentences": "This is a sentence. ", "crlf_lines": "A b.\r\n", "word": "a",
    "dq_backslash": '"\\', "paren_open": "(a.", "curly_open": "“a.", "corner_open": "「a.",
}


def pysbd_cases() -> dict:
    from latechunk.sentences import SentenceSegmenter

    seg = SentenceSegmenter()
    seg.char_spans("Warm up. Dr. Smith left.", cache=False)
    return {name: (lambda n, u=unit: seg.char_spans(_rep(u, n) + ".", cache=False))
            for name, unit in PYSBD_UNITS.items()}


def measure(fn, sizes: list[int], repeats: int) -> list[float]:
    out = []
    for n in sizes:
        best = float("inf")
        for _ in range(repeats):
            t = time.process_time()
            fn(n)
            best = min(best, time.process_time() - t)
        out.append(best)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="fixed,pysbd")
    ap.add_argument("--sizes", default="20000,40000,80000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-ratio", type=float, default=3.0)
    ap.add_argument("--uncapped", action="store_true", help="lift the 2,000-character cap of one pysbd call")
    args = ap.parse_args(argv)
    if args.uncapped:
        from latechunk.sentences import segment

        segment._BLOCK_MAX_CHARS = 10**12  # where _segment_paragraph reads it
    sizes = [int(s) for s in args.sizes.split(",")]
    bad = False
    for group in args.cases.split(","):
        cases = {"fixed": fixed_cases, "pysbd": pysbd_cases}[group]()
        for name, fn in cases.items():
            times = measure(fn, sizes, args.repeats)
            # ratios of times under 5 ms are noise
            ratios = [b / a if a > 0.005 else None for a, b in itertools.pairwise(times)]
            flag = any(r is not None and r > args.max_ratio for r in ratios)
            bad |= flag and group == "fixed"
            print(f"{group:6} {name:20} " + " ".join(f"{n}:{t:.4f}s" for n, t in zip(sizes, times))
                  + "  ratios " + " ".join("-" if r is None else f"{r:.2f}" for r in ratios)
                  + ("  SUPERLINEAR" if flag else ""), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
