"""Terminal output of search results: a layout a person can read, printed literally.

Chunk text, queries, doc ids and heading paths are data, never markup: nothing here goes through rich markup (a
``[/var/cache]`` in a document or a ``[/note]`` in a query is printed as written). Each hit is a block of lines::

    1. guides/storage [v2].md  chars 0-105  score 0.6123
       Storage > Cache
       Keep the cache under [/var/cache/demo] and read the [backup guide] before you delete anything.

Control characters in any field (a newline or a terminal escape in a doc id) print as escapes (:func:`visible`).
The first line holds the rank, the doc id (never folded: it stays one piece, to copy), the char span and the
score; the second the heading path (left out when the chunk has none); then a snippet around the query's words
(:func:`snippet`; the chunk's leading heading lines, already on the path line, left out). On a terminal the snippet is wrapped to its width; piped (``width=None``), every field stays on
one line, whatever the terminal's width, so ``grep`` and ``cut`` see whole lines.
"""

from __future__ import annotations

import re
import textwrap

__all__ = ["format_hits", "heading_path_text", "plural", "snippet", "visible"]

_WORD = re.compile(r"\w{3,}")

#: indent of a hit's heading path and snippet lines, under its rank
INDENT = "   "


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def visible(text: str) -> str:
    r"""``text`` with its control characters written as escapes (``\n``, ``\t``, ``\x1b``, ``\u2028``), so
    a doc id or query holding a newline or a terminal escape prints as one line and cannot drive the terminal.

    Args:
        text: A doc id, query, heading path or snippet.

    Returns:
        ``text`` itself when it has no C0/C1 control character or line/paragraph separator; else a copy with each
        one replaced by its Python escape (``unicode_escape``).
    """
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def snippet(text: str, query: str, width: int = 200) -> str:
    """A ``width``-character excerpt of ``text`` (whitespace collapsed) holding the most occurrences of the
    query's words (3+ letters, case-insensitive); the start of the text when none occurs. "…" marks a cut.

    Args:
        text: A chunk text.
        query: The query.
        width: Characters of ``text`` to show.

    Returns:
        The excerpt, at most ``width`` characters plus a leading and a trailing "…" where it was cut.
    """
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    words = {w.lower() for w in _WORD.findall(query)}
    hits = [m.start() for m in _WORD.finditer(flat) if m.group().lower() in words]
    start = 0
    if hits:
        best = 0
        for i, h in enumerate(hits):  # the excerpt that starts a little before hit i and holds the most hits
            n = sum(1 for x in hits[i:] if x < h + width - 20)
            if n > best:
                best, start = n, max(0, h - 20)
        start = min(start, len(flat) - width)
        if start > 0:  # begin at a word
            space = flat.find(" ", start)
            start = space + 1 if 0 <= space < start + 20 else start
    end = min(len(flat), start + width)
    return ("…" if start > 0 else "") + flat[start:end] + ("…" if end < len(flat) else "")


_ATX_HEADING = re.compile(r"[ ]{0,3}#{1,6}(?:[ \t][^\n]*)?(?:\n|$)")
#: a run of whitespace: what ``str.lstrip()`` removes (``\s`` and ``str.isspace`` agree on all of Unicode)
_SPACES = re.compile(r"\s*")


def _drop_leading_headings(text: str) -> str:
    """``text`` without the markdown ATX heading lines (``# Title``) and blank lines it starts with; ``text`` itself
    when nothing else is left.

    Matches at a moving position in ``text`` (the pattern has no ``^`` or lookbehind, and ``$`` sees the same end),
    so each line is read once: re-slicing the rest after every heading copied O(n^2) characters for n heading
    lines."""
    pos = _SPACES.match(text).end()
    while (m := _ATX_HEADING.match(text, pos)) and m.end() > pos:
        pos = _SPACES.match(text, m.end()).end()
    rest = text[pos:]
    return rest if rest.strip() else text


def heading_path_text(record: dict) -> str:
    """A hit's heading path as one line: its ``heading_path`` joined with " > ", else its ``section``.

    Args:
        record: A search record (``latechunk.output.search_records``) or an expanded context
            (``latechunk.contexts.expand_hits``), which has ``section`` but no ``heading_path``.

    Returns:
        The path, whitespace collapsed; "" when the chunk is under no heading.
    """
    path = record.get("heading_path")
    text = " > ".join(p for p in path if p) if path else (record.get("section") or "")
    return " ".join(str(text).split())


#: characters of a heading path that ``search`` prints (a trial's 50-level path made a line of several KB)
PATH_CHARS = 240


def _shorten_path(path: str, limit: int = PATH_CHARS) -> str:
    """A heading path of at most ``limit`` characters for display: its first heading and its last ones, with
    " > … > " where the middle was left out (``--json`` keeps the whole path)."""
    if len(path) <= limit:
        return path
    parts = path.split(" > ")
    if len(parts) == 1:
        return path[: limit - 1] + "…"
    head, tail = parts[0][: limit // 3], []
    room = limit - len(head) - len(" > … > ")
    for p in reversed(parts[1:]):
        if len(p) + 3 > room:
            break
        tail.insert(0, p)
        room -= len(p) + 3
    if not tail:  # one very long last heading: its end
        tail = ["…" + parts[-1][-max(1, room - 1):]]
    return " > … > ".join([head, " > ".join(tail)])


def format_hits(results: list[dict], query: str, *, expand: str | None = None, width: int | None = None,
                snippet_chars: int = 200) -> list[tuple[str, bool]]:
    """The lines that ``latechunk search`` prints for its results, best first.

    Args:
        results: Search records (``latechunk.output.search_records``: rank, score, doc_id, char_start, char_end,
            heading_path, text) or, with ``expand``, contexts (``latechunk.contexts.expand_hits``: with ``hits``).
        query: The query (its words choose each snippet; printed as given).
        expand: The ``--expand`` value the contexts were made with, or None for plain hits.
        width: Terminal columns: the heading path and snippet are wrapped to it (a doc id never is). None (output
            piped): no wrapping, each field on one line.
        snippet_chars: Characters of chunk text in each snippet (:func:`snippet`).

    Returns:
        ``(line, emphasis)`` pairs, in order: a title line, then per hit its first line (emphasis True: rank, doc
        id, char span, score), its heading path, its snippet line(s) and a blank line. Lines are plain text: the
        caller prints them without markup.
    """
    what = f"contexts ({expand})" if expand else ("result" if len(results) == 1 else "results")
    lines: list[tuple[str, bool]] = [(f"top {len(results)} {what} for: {visible(query)}", True), ("", False)]
    avail = None if width is None else max(20, width - len(INDENT))
    for r in results:
        head = f"{r['rank']}. {visible(str(r['doc_id']))}  chars {r['char_start']}-{r['char_end']}  score {r['score']:.4f}"
        if expand:
            ranks = [str(h["rank"]) for h in r.get("hits", [])]  # ranks, not a count: "hits 3" read as three hits
            head += ("  holds hit " if len(ranks) == 1 else "  holds hits ") + ", ".join("#" + x for x in ranks)
        lines.append((head, True))
        path = heading_path_text(r)
        text = r.get("text") or ""
        if path:  # the heading is on the path line: the snippet starts at the text under it
            text = _drop_leading_headings(text)
        body = [visible(_shorten_path(path)), visible(snippet(text, query, snippet_chars))]
        for field in body:
            if not field:
                continue
            parts = [field] if avail is None else textwrap.wrap(field, avail, break_on_hyphens=False) or [""]
            lines += [(INDENT + p, False) for p in parts]
        lines.append(("", False))
    return lines


def plural(n: int | str, word: str, many: str | None = None) -> str:
    """``"1 chunk"``, ``"3 chunks"``: the count and ``word``, or ``many`` (default ``word + "s"``) when ``n != 1``
    (a count that is not a number, such as ``"?"``, takes the plural)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"
