"""Front matter: a block of YAML between ``---`` lines, or of TOML between ``+++`` lines, at the very start of a
markdown text (Jekyll, Hugo, Pandoc, Obsidian; https://jekyllrb.com/docs/front-matter/,
https://gohugo.io/content-management/front-matter/).

The strategies keep it out of the markdown parse (BR-022, :mod:`latechunk.strategies._markdown`); the file reader
takes its ``title`` as the document's title (``Document.metadata["title"]``), which the output records beside the
document. YAML is read with PyYAML's ``safe_load``, TOML with the standard library's ``tomllib``.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import tomllib

__all__ = ["FRONT_MATTER", "INVISIBLE_MARKS", "FrontMatter", "front_matter_problem", "front_matter_title",
           "front_matter_url", "read_front_matter"]

#: zero-width format characters that hide line-start markdown syntax (a BOM, ZWSP, LRM/RLM, word joiner, ...)
INVISIBLE_MARKS = "\ufeff\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\u00ad"
#: front matter at the start of the text (after invisible marks): ``---`` YAML ``---`` or ``+++`` TOML ``+++``;
#: group ``fence`` is the fence, group ``body`` the lines between the fences. A line ends at CRLF, LF or a lone
#: CR: ``\r(?!\n)``, so that a CRLF is one line end only; with a plain ``\r`` alternative each CRLF could also be
#: read as two line ends, and a text with no closing fence took 2^(CRLF lines) steps to fail (30 lines: minutes).
#: The same texts match, with the same groups (tests/test_regex_linear.py)
FRONT_MATTER = re.compile(
    f"\\A[{INVISIBLE_MARKS}]*(?P<fence>---|\\+\\+\\+)[ \\t]*(?:\\r\\n|\\n|\\r(?!\\n))"
    r"(?P<body>(?:[^\r\n]*(?:\r\n|\n|\r(?!\n)))*?)(?P=fence)[ \t]*(?=\r\n|\n|\r|\Z)"
)


def _parse(text: str) -> tuple[dict | None, str | None]:
    """``(mapping or None, what is wrong with the front matter or None)``."""
    m = FRONT_MATTER.match(text)
    if m is None:
        return None, None
    body = m.group("body")
    kind = "TOML" if m.group("fence") == "+++" else "YAML"
    try:
        if kind == "TOML":
            data = tomllib.loads(body)
        else:
            import yaml

            data = yaml.safe_load(body)
    except Exception as err:  # noqa: BLE001 - malformed front matter has no title; the document is still read
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""  # +1: 1-based, +1: the opening fence
        what = getattr(err, "problem", None) or (str(err).splitlines() or [type(err).__name__])[0]
        return None, f"front matter is not valid {kind}{where} ({what}): its title and url are ignored"
    if data is None:  # an empty block
        return None, None
    if not isinstance(data, dict):
        return None, f"front matter is {_kind(data)}, not a mapping of keys: its title and url are ignored"
    problems = []
    title = data.get("title")
    if title is not None and (isinstance(title, bool) or not isinstance(title, (str, int, float))):
        problems.append(f"front matter title is {_kind(title)}, not text: ignored")
    url = data.get("url")
    if url is not None and not isinstance(url, str):
        problems.append(f"front matter url is {_kind(url)}, not text: ignored")
    return data, "; ".join(problems) or None


def _kind(value) -> str:
    kinds = {bool: "a boolean", int: "a number", float: "a number", str: "text", list: "a list", dict: "a mapping"}
    return kinds.get(type(value), f"a {type(value).__name__}")


class FrontMatter(NamedTuple):
    """What a text's front matter gives (:func:`read_front_matter`): each field None when absent or ignored."""

    title: str | None
    url: str | None
    problem: str | None


def read_front_matter(text: str) -> FrontMatter:
    """A text's front matter read once: its title, its url and what was ignored in it.

    Args:
        text: A markdown text (characters).

    Returns:
        ``FrontMatter(title, url, problem)``: ``title`` stripped, when the front matter (YAML ``---`` or TOML
        ``+++``) parses to a mapping whose ``title`` is a non-blank string (or a number, as text); ``url``
        stripped, when it is a non-blank string (not checked as a URL: ``/docs/setup/`` is kept as written);
        ``problem`` one line naming what is wrong (does not parse, not a mapping, a ``title``/``url`` that is not
        text: ``"front matter is not valid YAML at line 3 (...): its title and url are ignored"``). Never an
        error: malformed front matter is still kept out of the markdown parse.
    """
    data, problem = _parse(text)
    title = url = None
    if data is not None:
        t = data.get("title")
        if not isinstance(t, bool) and isinstance(t, (str, int, float)):
            title = str(t).strip() or None
        u = data.get("url")
        if isinstance(u, str):
            url = u.strip() or None
    return FrontMatter(title, url, problem)


def front_matter_data(text: str) -> dict:
    """A text's front matter as the mapping it parses to (``{}`` when there is none, or it does not parse to a
    mapping): the keys ``embed --metadata-fields`` keeps from a markdown file, as a record's fields.

    Args:
        text: A markdown text (characters).

    Returns:
        The parsed mapping (YAML dates as ``datetime.date``), or ``{}``.
    """
    data, _ = _parse(text)
    return data if isinstance(data, dict) else {}


def front_matter_problem(text: str) -> str | None:
    """What is wrong with a text's front matter, if anything (:func:`read_front_matter`'s ``problem``).

    Args:
        text: A markdown text (characters).

    Returns:
        One line naming the problem, or None when there is no front matter or nothing is wrong with it.
    """
    return read_front_matter(text).problem


def front_matter_url(text: str) -> str | None:
    """The ``url`` of a text's front matter (where the document is published: the citation of its chunks).

    Args:
        text: A markdown text (characters).

    Returns:
        :func:`read_front_matter`'s ``url``: a non-blank string, stripped, else None (never an error).
    """
    return read_front_matter(text).url


def front_matter_title(text: str) -> str | None:
    """The ``title`` of a text's front matter.

    Args:
        text: A markdown text (characters).

    Returns:
        :func:`read_front_matter`'s ``title``: stripped, else None (never an error).
    """
    return read_front_matter(text).title
