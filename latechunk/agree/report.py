"""The agreement of every pair of strategies over a corpus: totals (:func:`summarize`), the report
:func:`agreement_report` gives ``compare``, and its Markdown section (:func:`agreement_markdown`).

Part of :mod:`latechunk.agree`; tests: ``tests/test_agree.py``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence

from latechunk.agree.matching import DEFAULT_TOLERANCE, Agreement, agreement
from latechunk.types import Boundaries


def summarize(agreements: Iterable[Agreement]) -> dict:
    """Totals of one strategy pair over documents.

    Args:
        agreements: Agreements of the same two strategies, one per document.

    Returns:
        ``{"documents", "chunks_a", "chunks_b", "cuts_a", "cuts_b", "matched", "exact", "residual_a",
        "residual_b", "matched_share_a", "matched_share_b"}``: sums, and the share of each side's cuts that are
        matched (None where that side has no cut).
    """
    keys = ("chunks_a", "chunks_b", "cuts_a", "cuts_b", "matched", "exact", "residual_a", "residual_b")
    tot = dict.fromkeys(keys, 0)
    n = 0
    for ag in agreements:
        n += 1
        for k, v in ag.counts().items():
            tot[k] += v
    return {"documents": n, **tot,
            "matched_share_a": tot["matched"] / tot["cuts_a"] if tot["cuts_a"] else None,
            "matched_share_b": tot["matched"] / tot["cuts_b"] if tot["cuts_b"] else None}


def _labels(specs: Sequence[str]) -> dict[str, str]:
    """Short names for strategy SPECs: the name before ``:`` where it is unique among them, else the SPEC."""
    names = [s.split(":", 1)[0] for s in specs]
    return {s: (n if names.count(n) == 1 else s) for s, n in zip(specs, names)}


def _pairwise(boundaries_by_strategy: Mapping[str, Sequence[Boundaries]], texts, tolerance: int):
    """``{(a, b): [Agreement per common document]}`` for every pair of strategies, in the order given."""
    text_of = texts if isinstance(texts, Mapping) else None
    specs = list(boundaries_by_strategy)
    labels = _labels(specs)
    by_doc = {s: {b.doc_id: b for b in bs} for s, bs in boundaries_by_strategy.items()}
    order = [b.doc_id for b in boundaries_by_strategy[specs[0]]] if specs else []
    if text_of is None:
        texts = list(texts)
        if len(texts) != len(order):
            raise ValueError(f"agreement_report: {len(texts)} texts for {len(order)} documents of {specs[0]!r}")
        text_of = dict(zip(order, texts))
    out = {}
    for sa, sb in itertools.combinations(specs, 2):
        ags = []
        for doc_id in order:
            if doc_id not in by_doc[sb]:
                continue
            if doc_id not in text_of:
                raise ValueError(f"agreement_report: no text for document {doc_id!r}")
            ags.append(agreement(by_doc[sa][doc_id], by_doc[sb][doc_id], text_of[doc_id], tolerance,
                                 labels=(labels[sa], labels[sb])))
        out[(sa, sb)] = ags
    return out


def agreement_report(boundaries_by_strategy: Mapping[str, Sequence[Boundaries]],
                     texts: Mapping[str, str] | Sequence[str], tolerance: int = DEFAULT_TOLERANCE,
                     details: bool = False) -> dict:
    """The boundary agreement of every pair of strategies over a corpus (what ``compare`` adds to its report).

    Args:
        boundaries_by_strategy: ``{strategy SPEC: [Boundaries per document]}`` (e.g. ``{spec:
            run.boundaries}`` of :class:`~latechunk.pipeline.EmbedResult`'s runs); documents are paired by doc
            id, in the first strategy's order; a document missing from one strategy is left out of its pairs.
        texts: ``{doc_id: text}``, or the texts in the first strategy's document order.
        tolerance: Most tokens between two cuts matched as one (:func:`agreement`).
        details: Also give every document's cuts, matched pairs and residuals (with text); default counts only.

    Returns:
        ``{"tolerance", "unit": "tokens", "strategies": {spec: label}, "pairs": [{"a", "b", "label_a",
        "label_b", "total": summarize(...), "documents": [{"doc_id", counts...} or Agreement.to_dict()]}]}``,
        JSON-ready; render it with :func:`agreement_markdown`.

    Raises:
        ValueError: on a bad tolerance, texts that do not match the documents, or boundaries that do not fit
            their text.
    """
    labels = _labels(list(boundaries_by_strategy))
    pairs = []
    for (sa, sb), ags in _pairwise(boundaries_by_strategy, texts, tolerance).items():
        docs = [ag.to_dict() if details else {"doc_id": ag.doc_id, **ag.counts()} for ag in ags]
        pairs.append({"a": sa, "b": sb, "label_a": labels[sa], "label_b": labels[sb], "total": summarize(ags),
                      "documents": docs})
    return {"tolerance": tolerance, "unit": "tokens", "strategies": labels, "pairs": pairs}


def _share(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


def agreement_markdown(report: Mapping) -> str:
    """A Markdown section for :func:`agreement_report`'s result: one row per strategy pair.

    Args:
        report: What :func:`agreement_report` returned.

    Returns:
        Markdown text: a heading, a sentence on the rules (tolerance in tokens), and a table with chunks, cuts,
        matched (exact), residuals and the matched share of each side's cuts.
    """
    lines = [
        "## Boundary agreement",
        "",
        (f"Cuts (boundaries between consecutive chunks) of each pair of strategies matched one to one, greedy by "
        f"distance, within {report['tolerance']} tokens (or only whitespace apart); a residual is a cut the "
        f"other strategy does not make."),
        "",
        ("| a | b | documents | chunks a | chunks b | cuts a | cuts b | matched (exact) | residual a | residual b "
        "| a matched | b matched |"),
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for p in report["pairs"]:
        t = p["total"]
        lines.append(
            f"| {p['label_a']} | {p['label_b']} | {t['documents']} | {t['chunks_a']} | {t['chunks_b']} | "
            f"{t['cuts_a']} | {t['cuts_b']} | {t['matched']} ({t['exact']}) | {t['residual_a']} | "
            f"{t['residual_b']} | {_share(t['matched_share_a'])} | {_share(t['matched_share_b'])} |")
    return "\n".join(lines) + "\n"
