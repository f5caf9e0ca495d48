"""Which files are read as documents: the one suffix policy for files named as inputs and files found in folders
(:func:`unsupported_reason`), and the reasons of entries never opened (:data:`NOT_READ_REASONS`,
:func:`is_not_read`)."""

from __future__ import annotations

from pathlib import Path

TEXT_SUFFIXES = (".md", ".markdown", ".txt")
#: reStructuredText: the Document's text is the source with its section titles as ATX headings
#: (:func:`latechunk.convert.rst_to_markdown`), so ``heading`` cuts it by its sections; ``metadata`` records it
RST_SUFFIXES = (".rst",)
#: source files, read as text as they are (the ``code`` strategy takes their language from the suffix)
CODE_SUFFIXES = (".py", ".js", ".ts", ".go", ".rs", ".java")
#: HTML pages: the Document's text is their markdown (:func:`latechunk.convert.html_to_markdown`), so its
#: offsets index the markdown, not the HTML; ``metadata`` records the conversion
HTML_SUFFIXES = (".html", ".htm")
TABLE_SUFFIXES = (".jsonl", ".parquet", ".arrow")
#: every suffix read as documents (any case); every other file found or named is listed as skipped
SUPPORTED_SUFFIXES = TEXT_SUFFIXES + RST_SUFFIXES + CODE_SUFFIXES + HTML_SUFFIXES + TABLE_SUFFIXES
#: how the reason of an entry that is not read at all (by its type or kind, never opened) starts
NOT_READ_REASONS = ("unsupported type", "symlinked folder not followed", "symlink loop", "broken symlink",
                    "not a regular file", "version-control folder", "hidden folder", "latechunk output folder",
                    "same file as")


def is_not_read(reason: str) -> bool:
    """Whether a Skipped reason is one of an entry that was never opened (:data:`NOT_READ_REASONS`): its
    appearing in a corpus after a run changes nothing that run embedded.

    Args:
        reason: A :class:`Skipped` reason.

    Returns:
        True for an unsupported type, a symlinked folder, a symlink loop or broken symlink, a special file, a
        version-control, hidden or latechunk output folder.
    """
    return reason.startswith(NOT_READ_REASONS)


def unsupported_reason(path: Path) -> str:
    """Why a file is not read as documents, judged by its suffix alone (the one suffix policy for files named
    as inputs and files found in folders).

    Args:
        path: A file path.

    Returns:
        ``""`` for a suffix in :data:`SUPPORTED_SUFFIXES` (any case), else the reason, e.g.
        ``"unsupported type .docx (read: .md, .markdown, .txt, .py, ..., .html, .htm, .jsonl, .parquet, .arrow)"``.
    """
    suffix = path.suffix.lower()
    if suffix in SUPPORTED_SUFFIXES:
        return ""
    kind = f"unsupported type {suffix}" if suffix else "unsupported type (no suffix)"
    return f"{kind} (read: {', '.join(SUPPORTED_SUFFIXES)})"
