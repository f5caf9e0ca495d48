"""Document-level metrics (BEIR-style qrels): a document run from a chunk run (:func:`doc_run_from_chunk_run`,
MaxP) and measures through ir_measures (:func:`doc_metrics`).

Part of :mod:`latechunk.eval.metrics`; tests: ``tests/eval/test_eval_metrics.py``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

DEFAULT_DOC_MEASURES = ("nDCG@10", "R@100", "RR@10")
"""Document-level measures in ir_measures syntax; ``RR@10`` is MRR@10 once averaged."""


def doc_run_from_chunk_run(
    chunk_run: Mapping[str, Mapping[tuple[str, int], float]],
) -> dict[str, dict[str, float]]:
    """Document run from a chunk run: a document scores as its best chunk (MaxP; Dai & Callan, SIGIR 2019).

    ``score(q, d) = max_{c in chunks(d) retrieved for q} score(q, c)``.

    Args:
        chunk_run: ``{query_id: {(doc_id, chunk_index): score}}``, chunk identity as in DESIGN.md.

    Returns:
        ``{query_id: {doc_id: best score}}`` (ir_measures/ranx dict-of-dict); a query with no chunks maps to
        ``{}``.

    Raises:
        ValueError: if a key is not a ``(doc_id, chunk_index)`` pair or a score is not finite.
    """
    out: dict[str, dict[str, float]] = {}
    for qid, chunks in chunk_run.items():
        best: dict[str, float] = {}
        for key, score in chunks.items():
            if not isinstance(key, tuple) or len(key) != 2 or not isinstance(key[0], str):
                raise ValueError(
                    f"doc_run_from_chunk_run: query {qid!r}: keys must be (doc_id, chunk_index), got {key!r}"
                )
            value = float(score)
            if not math.isfinite(value):
                raise ValueError(f"doc_run_from_chunk_run: query {qid!r}: score of {key!r} is {value}")
            if key[0] not in best or value > best[key[0]]:
                best[key[0]] = value
        out[qid] = best
    return out


def doc_metrics(
    qrels: Mapping[str, Mapping[str, int]],
    doc_run: Mapping[str, Mapping[str, float]],
    measures: Sequence[str] = DEFAULT_DOC_MEASURES,
) -> dict[str, dict[str, float]]:
    """Document-level measures per query, computed by ir_measures (MacAvaney et al., ECIR 2022).

    Default measures: ``nDCG@10`` (Järvelin & Kekäläinen 2002, trec_eval's linear gain
    ``DCG = Σ_i rel_i / log2(i + 1)``), ``R@100`` (recall, share of relevant documents in the top 100) and
    ``RR@10`` (reciprocal rank of the first relevant document in the top 10; its mean is MRR@10). Ties are
    broken as trec_eval does.

    Every query of ``qrels`` gets a value; a query absent from ``doc_run`` (nothing retrieved) scores 0, the
    ``trec_eval -c`` convention. Run queries absent from ``qrels`` are ignored, as in trec_eval.

    Args:
        qrels: ``{query_id: {doc_id: relevance}}``.
        doc_run: ``{query_id: {doc_id: score}}`` (e.g. from :func:`doc_run_from_chunk_run`).
        measures: Measure names in ir_measures syntax.

    Returns:
        ``{measure name as given: {query_id: value}}``.

    Raises:
        ValueError: if a measure name does not parse.
    """
    import ir_measures

    parsed = {}
    for name in measures:
        try:
            parsed[ir_measures.parse_measure(name)] = name
        except (ValueError, NameError, SyntaxError, AttributeError, TypeError) as err:
            raise ValueError(f"doc_metrics: {name!r} is not an ir_measures measure (e.g. 'nDCG@10')") from err
    qrels_in = {str(q): {str(d): int(r) for d, r in rels.items()} for q, rels in qrels.items()}
    run_in = {str(q): {str(d): float(s) for d, s in docs.items()} for q, docs in doc_run.items() if docs}
    out: dict[str, dict[str, float]] = {name: {qid: 0.0 for qid in qrels_in} for name in measures}
    if run_in and qrels_in:
        for metric in ir_measures.iter_calc(list(parsed), qrels_in, run_in):
            if metric.query_id in qrels_in:
                out[parsed[metric.measure]][metric.query_id] = float(metric.value)
    return out
