"""The report folder's files: :func:`write_report` writes ``report.md``, ``results.json``, ``per_query.csv`` and
``plot.png`` (and ``map.png``, ``frontier.png`` for a sweep of several late passes); :func:`load_result` reads a
folder back into a :class:`~latechunk.eval.result.CompareResult`; :func:`per_query_rows` are the rows of
``per_query.csv``. Each text file is written to a temp name and renamed into place.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from ..config import CompareConfig
from ..result import CompareResult, System
from .diagnostics import add_diagnostics
from .markdown import markdown_report
from .plot import write_plot

REPORT_FILES = ("report.md", "results.json", "per_query.csv", "plot.png")

PER_QUERY_COLUMNS = ("dataset", "query_id", "question", "strategy", "mode", "window", "window_overlap", "label",
                     "top_hits")
"""The columns of ``per_query.csv`` that name a query or a system (or show its hits); every other one is a metric.
Folders written before ``question`` and ``top_hits`` existed lack those two."""


def per_query_rows(result) -> tuple[list[str], list[list]]:
    """The rows of ``per_query.csv``: one per (system, query), one column per metric (blank where undefined).

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult`.

    Returns:
        ``(header, rows)``: :data:`PER_QUERY_COLUMNS` (``dataset``, ``query_id``, ``question`` (the query text),
        ``strategy``, ``mode``, ``window`` (the macro window in tokens, blank for naive systems whose chunks no
        macro window changes), ``window_overlap`` (its overlap in tokens, blank likewise), ``label``, ``top_hits``
        (the first k chunks retrieved, best first, ``doc_id:char_start-char_end`` joined with ``" | "``, k the
        largest ``--k``: check a hit against the answer spans by hand)), then the metric names; values as
        ``repr(float)`` (never rounded). Rows whose every metric is undefined are left out.
    """
    header = list(PER_QUERY_COLUMNS) + list(result.metric_names)
    if result.dataset is not None:
        qids = [q.query_id for q in result.dataset.queries]
        questions = {q.query_id: q.text for q in result.dataset.queries}
    else:  # a result read back by load_result: first-seen order
        qids = list(dict.fromkeys(q for s in result.systems for v in s.per_query.values() for q in v))
        questions = result.questions
    rows = []
    for s in result.systems:
        for qid in qids:
            vals = [s.per_query.get(m, {}).get(qid) for m in result.metric_names]
            if all(v is None for v in vals):
                continue
            rows.append([result.manifest["dataset"]["name"], qid, questions.get(qid, ""), s.strategy, s.mode,
                         "" if s.window is None else s.window, "" if s.window_overlap is None else s.window_overlap,
                         s.label, s.top_hits.get(qid, "")] + ["" if v is None else repr(float(v)) for v in vals])
    return header, rows


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_report(result, out_dir: str | os.PathLike, plot: bool = True, log=None) -> Path:
    """Write ``report.md``, ``results.json``, ``per_query.csv`` and (``plot=True``) ``plot.png`` into ``out_dir``.

    Each text file is written to a temp name and renamed into place.

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult`.
        out_dir: The report folder (created with its parents).
        plot: Also draw ``plot.png``.
        log: Called with one line (``str``) before each step (diagnostics, files, plots); None: silent.

    Raises:
        OSError: if a file cannot be written.

    Returns:
        The folder.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    say = log or (lambda _msg: None)
    say("report: parse alarms and boundary agreement")
    add_diagnostics(result)
    say(f"report: results.json, per_query.csv, report.md in {out}")
    _write_text(out / "results.json", json.dumps(result.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n")
    header, rows = per_query_rows(result)
    tmp = out / "per_query.csv.tmp"
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    os.replace(tmp, out / "per_query.csv")
    _write_text(out / "report.md", markdown_report(result))
    if plot:
        say("report: plot.png")
        write_plot(result, out / "plot.png")
        from ..plots import has_map, write_frontier, write_map

        if has_map(result):
            say("report: map.png, frontier.png")
            write_map(result, out / "map.png")
            write_frontier(result, out / "frontier.png")
    return out


def load_result(out_dir: str | os.PathLike):
    """Read a report folder back into a :class:`~latechunk.eval.harness.CompareResult` (``results.json`` +
    ``per_query.csv``), e.g. to re-render ``report.md`` and ``plot.png`` without re-running.

    Args:
        out_dir: A folder written by :func:`write_report`.

    Returns:
        The result, without ``dataset`` and ``embeds`` (per-query values in first-seen query order).

    Raises:
        FileNotFoundError: if ``results.json`` or ``per_query.csv`` (or ``per_query.csv.gz``) is missing.
        KeyError: if a file lacks a field or a row names an unknown system.
        ValueError: if ``results.json`` is not JSON.
    """
    out = Path(out_dir)
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    systems = []
    # results.json before overlap sweeps: one overlap per window, found in the manifest's late passes
    pass_overlap = {w["window"]: w.get("overlap") for w in data["manifest"].get("windows", [])}
    for d in data["systems"]:
        ov = d.get("window_overlap", pass_overlap.get(d["window"]) if d["window"] is not None else None)
        systems.append(System(d["strategy"], d["mode"], d["window"], d["label"], d["chunks_sha256"],
                              {}, dict(d["metrics"]), dict(d["std"]), dict(d["costs"]), dict(d.get("compact", {})),
                              window_overlap=ov))
    for c in data["comparisons"]:
        if c.get("window") is not None and "window_overlap" not in c:
            c["window_overlap"] = pass_overlap.get(c["window"])
    by_label = {(s.strategy, s.label): s for s in systems}
    per_query = out / "per_query.csv"
    if not per_query.exists() and (out / "per_query.csv.gz").exists():  # recorded folders keep it compressed
        import gzip

        opener, per_query = gzip.open, out / "per_query.csv.gz"
    else:
        opener = open
    with opener(per_query, "rt", newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        metrics = [c for c in reader.fieldnames or [] if c not in PER_QUERY_COLUMNS]
        questions: dict[str, str] = {}
        for row in reader:
            s = by_label[(row["strategy"], row["label"])]
            if row.get("question"):
                questions[row["query_id"]] = row["question"]
            if row.get("top_hits"):
                s.top_hits[row["query_id"]] = row["top_hits"]
            for m in metrics:
                if row[m] != "":
                    s.per_query.setdefault(m, {})[row["query_id"]] = float(row[m])
    return CompareResult(CompareConfig.from_dict(data["config"]), systems, data["comparisons"], data["metric_names"],
                         data["headline"], data["main_k"], data["manifest"], questions=questions)
