"""The HTML view of an agreement run (``latechunk agree --html``): one page per document with each strategy's
cuts side by side (:func:`render_document_html`), an index page (:func:`render_index_html`), both written by
:func:`write_html`.

Part of :mod:`latechunk.agree`; tests: ``tests/test_agree.py``.
"""

from __future__ import annotations

import bisect
import html
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from latechunk.agree.matching import Agreement, Cut, cuts_of
from latechunk.agree.report import _labels, summarize
from latechunk.agree.run import AgreeRun
from latechunk.types import Boundaries, Document

#: Okabe & Ito (2008), "Color Universal Design": eight colours that colour-blind readers can tell apart
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")


_CSS = """
body{font:15px/1.5 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}
.legend span.key{display:inline-block;padding:0 .5em;margin-right:.5em;border-left:6px solid var(--c)}
table.summary{border-collapse:collapse;margin:1em 0}
table.summary td,table.summary th{border:1px solid #ccc;padding:2px 8px;text-align:right}
table.summary td:first-child,table.summary th:first-child{text-align:left}
.doc{border-top:1px solid #ccc;margin-top:1em}
.row{display:flex;align-items:flex-start}
.row.has-residual{background:#fff3b0}
.margin{flex:0 0 15em;text-align:right;padding-right:.6em;font:12px/1.9 monospace}
.text{flex:1;white-space:pre-wrap;font:14px/1.6 monospace;border-left:1px solid #ddd;padding-left:.6em;min-height:1.6em}
.mark{display:inline-block;border-left:8px solid var(--c);padding-left:3px;margin-left:4px;color:var(--c)}
.mark.residual{outline:2px solid #c00;font-weight:bold}
.cut{display:inline-block;width:0;height:1.3em;border-left:3px solid var(--c);vertical-align:text-bottom;margin:0 1px}
.cut.residual{outline:2px solid #c00;outline-offset:1px}
.residuals li{margin:.4em 0}
.ctx{font-family:monospace;background:#f4f4f4}
"""


def _slug(doc_id: str, k: int) -> str:
    return f"{k:04d}-{re.sub(r'[^A-Za-z0-9._-]+', '_', doc_id)[:60]}.html"


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{_CSS}</style></head>\n<body>\n{body}\n</body></html>\n")


def render_document_html(doc: Document, boundaries: Mapping[str, Boundaries], agreements: Sequence[Agreement],
                         labels: Mapping[str, str] | None = None) -> str:
    """One self-contained HTML page: the document's text, each strategy's cuts in its own colour in the
    margin and in the text, residuals highlighted.

    Every cut is a ``<span class="cut sN">`` in the text and a ``<span class="mark sN">`` in the margin of its
    line (N: the strategy's place in ``boundaries``), with ``data-strategy``, ``data-token`` and ``data-char``;
    a cut that is a residual in any pair also has the class ``residual`` (and its line ``has-residual``). All
    text is HTML-escaped; the page loads nothing (no script, no external file).

    Args:
        doc: The document.
        boundaries: ``{spec: Boundaries of doc}``, in display order (colours follow it, :data:`PALETTE`).
        agreements: The document's agreements (pairs of those specs), for the residuals and the summary.
        labels: ``{spec: label}``; default the name of each strategy where unique.

    Returns:
        The page, as a string.
    """
    specs = list(boundaries)
    labels = dict(labels or _labels(specs))
    colour = {s: PALETTE[k % len(PALETTE)] for k, s in enumerate(specs)}
    cls = {s: f"s{k}" for k, s in enumerate(specs)}
    by_label = {labels[s]: s for s in specs}
    residual = set()  # (spec, after)
    for ag in agreements:
        residual |= {(by_label.get(ag.a, ag.a), r.cut.after) for r in ag.residual_a}
        residual |= {(by_label.get(ag.b, ag.b), r.cut.after) for r in ag.residual_b}
    text = doc.text
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    marks: dict[int, list[tuple[int, str, Cut]]] = {}  # line -> [(char, spec, cut)]
    for s in specs:
        for c in cuts_of(boundaries[s]):
            line = bisect.bisect_right(line_starts, c.char_end) - 1
            marks.setdefault(line, []).append((c.char_end, s, c))
    rows = []
    for line, start in enumerate(line_starts):
        end = line_starts[line + 1] - 1 if line + 1 < len(line_starts) else len(text)
        here = sorted(marks.get(line, []), key=lambda m: (m[0], specs.index(m[1])))
        margin, parts, pos, has_res = [], [], start, False
        for char, s, c in here:
            res = (s, c.after) in residual
            has_res |= res
            attrs = (f'class="{{}} {cls[s]}{" residual" if res else ""}" style="--c:{colour[s]}" '
                     f'data-strategy="{html.escape(labels[s])}" data-token="{c.token}" data-char="{c.char_end}" '
                     f'title="{html.escape(labels[s])} cut after chunk {c.after} at token {c.label()}'
                     f'{" (residual)" if res else ""}"')
            margin.append(f'<span {attrs.format("mark")}>{html.escape(labels[s])} {c.label()}</span>')
            cut_at = min(char, end)
            parts.append(html.escape(text[pos:cut_at]))
            parts.append(f'<span id="{cls[s]}-c{c.after}" {attrs.format("cut")}></span>')
            pos = cut_at
        parts.append(html.escape(text[pos:end]))
        rows.append(f'<div class="row{" has-residual" if has_res else ""}"><div class="margin">{"".join(margin)}'
                    f'</div><div class="text">{"".join(parts)}</div></div>')
    legend = " ".join(
        f'<span class="key {cls[s]}" style="--c:{colour[s]}">{html.escape(labels[s])}: {len(boundaries[s])} '
        f"chunks, {max(len(boundaries[s]) - 1, 0)} cuts</span>" for s in specs)
    summary = [("<table class=\"summary\"><tr><th>pair</th><th>matched (exact)</th><th>residual a</th>"
               "<th>residual b</th></tr>")]
    items = []
    for ag in agreements:
        summary.append(f"<tr><td>{html.escape(ag.a)} vs {html.escape(ag.b)}</td><td>{len(ag.matched)} "
                       f"({ag.exact})</td><td>{len(ag.residual_a)}</td><td>{len(ag.residual_b)}</td></tr>")
        for r in (*ag.residual_a, *ag.residual_b):
            who, other = (ag.a, ag.b) if r.side == "a" else (ag.b, ag.a)
            s = by_label.get(who, who)
            near = "none" if r.nearest is None else f"{r.nearest} tokens away"
            items.append(
                f'<li><a href="#{cls.get(s, "s")}-c{r.cut.after}">{html.escape(who)} cut at token {r.cut.label()}'
                f"</a>, not in {html.escape(other)} (nearest {near}): <span class=\"ctx\">…"
                f"{html.escape(r.before)}</span> ⟂ <span class=\"ctx\">{html.escape(r.after)}…</span></li>")
    summary.append("</table>")
    body = (f"<h1>{html.escape(doc.doc_id)}</h1>\n<p class=\"legend\">{legend}</p>\n{''.join(summary)}\n"
            f'<h2>Residuals</h2>\n<ul class="residuals">{"".join(items) or "<li>none</li>"}</ul>\n'
            f'<div class="doc">\n' + "\n".join(rows) + "\n</div>")
    return _page(f"agree: {doc.doc_id}", body)


def render_index_html(run: AgreeRun, pages: Sequence[str]) -> str:
    """The index page: one row per document (link, chunk counts, matched and residuals per pair) and the totals.

    Args:
        run: The run.
        pages: The page file name of each document, in ``run.documents`` order.

    Returns:
        The page, as a string.
    """
    pairs = list(run.agreements)
    head = "".join(f"<th>{html.escape(run.labels[s])} chunks</th>" for s in run.strategies) + "".join(
        f"<th>{html.escape(run.labels[a])} vs {html.escape(run.labels[b])}: matched / residual</th>" for a, b in pairs)
    rows = []
    for k, (d, page) in enumerate(zip(run.documents, pages)):
        cells = "".join(f"<td>{len(run.boundaries[s][k])}</td>" for s in run.strategies)
        cells += "".join(f"<td>{len(run.agreements[p][k].matched)} / {len(run.agreements[p][k].residual_a)} + "
                         f"{len(run.agreements[p][k].residual_b)}</td>" for p in pairs)
        rows.append(f'<tr><td><a href="{html.escape(page)}">{html.escape(d.doc_id)}</a></td>{cells}</tr>')
    tot = []
    for (a, b), ags in run.agreements.items():
        t = summarize(ags)
        tot.append(f"<li>{html.escape(run.labels[a])} vs {html.escape(run.labels[b])}: {t['cuts_a']} and "
                   f"{t['cuts_b']} cuts, {t['matched']} matched ({t['exact']} exact), residuals {t['residual_a']} "
                   f"and {t['residual_b']}</li>")
    body = (f"<h1>Boundary agreement ({len(run.documents)} documents, tolerance {run.tolerance} tokens)</h1>\n"
            f"<ul>{''.join(tot)}</ul>\n<table class=\"summary\"><tr><th>document</th>{head}</tr>"
            + "".join(rows) + "</table>")
    return _page("agree: index", body)


def write_html(run: AgreeRun, out_dir: Path | str) -> list[Path]:
    """Write the HTML view: ``index.html`` and one page per document (:func:`render_document_html`).

    Args:
        run: The run.
        out_dir: The folder (created if missing; files of the same names are replaced).

    Returns:
        The paths written: the index first, then the documents' pages in order.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pages = [_slug(d.doc_id, k) for k, d in enumerate(run.documents)]
    written = []
    index = out / "index.html"
    index.write_text(render_index_html(run, pages), encoding="utf-8")
    written.append(index)
    for k, (d, page) in enumerate(zip(run.documents, pages)):
        bs = {s: run.boundaries[s][k] for s in run.strategies}
        ags = [ags[k] for ags in run.agreements.values()]
        path = out / page
        path.write_text(render_document_html(d, bs, ags, run.labels), encoding="utf-8")
        written.append(path)
    return written
