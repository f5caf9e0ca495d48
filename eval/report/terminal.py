"""The main table of ``latechunk compare`` in the terminal (:func:`print_table`, rich): strategy x mode, the
headline metrics and costs, fitted to the terminal's width by leaving out the least important columns first;
and the compact-vector settings beside each other.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..plots import short_spec
from .formatting import _best, _col_name, _fmt
from .tables import _compact_metrics

#: The widest the strategy column of :func:`print_table` grows (characters; a longer SPEC folds onto more lines)
STRATEGY_COLUMN_WIDTH = 24


def _fitted_table(console, title: str, names: list[str], rows: list[list], priority: list[int], keep: int,
                  caption: str | None = None):
    """A rich table of the columns ``names`` that fits ``console.width``: the columns are taken in ``priority``
    order (indices into ``names``, most important first) as long as rich's own measure of the table stays within
    the width, and shown in their order in ``names``; the first ``keep`` of ``priority`` are always shown (rich
    folds their cells when even they are too wide).

    Returns:
        ``(table, left_out)``: the ``rich.table.Table`` and the names of the columns left out, in table order.
    """
    from rich.markup import escape
    from rich.measure import Measurement
    from rich.table import Table

    def build(shown: list[int]):
        t = Table(title=escape(title), caption=caption)
        for i in shown:
            t.add_column(escape(names[i]), overflow="fold",
                         max_width=STRATEGY_COLUMN_WIDTH if names[i] == "strategy" else None)
        for row in rows:
            t.add_row(*(row[i] for i in shown))
        return t

    n = len(priority)
    while True:
        shown = sorted(priority[:n])
        table = build(shown)
        # measured unbounded: rich clamps a measure to the options' width, which would always "fit"
        natural = Measurement.get(console, console.options.update(max_width=1 << 20), table).maximum
        if n <= keep or natural <= console.width:
            return table, [names[i] for i in range(len(names)) if i not in shown]
        n -= 1


def print_table(result, console=None, report: str | Path | None = None) -> None:
    """The main table in the terminal (rich): rows strategy x mode, headline metrics and costs, fitted to the
    terminal's width (a trial's was ~240 characters wide): columns are left out, the least important first (the
    costs, the metrics beyond the headline, then headline metrics at other k than the main one), until the table
    fits, and a line under it names them and says where every column is (``report``: report.md).

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult`.
        console: A ``rich.console.Console``; None: a new one (the terminal's width, ``$COLUMNS`` when set; 200
            columns when writing to a file or pipe without ``$COLUMNS``, so a log keeps more of the table).
        report: The report.md that holds the full table, named under a table that lost columns.
    """
    from rich.console import Console
    from rich.text import Text

    if console is None:
        console = Console()
        if not console.is_terminal and not os.environ.get("COLUMNS"):  # a log file: a wider table
            console = Console(width=max(console.width, 200))
    full = f"every column is in {report}" if report is not None else "every column is in the report folder's report.md"
    k = result.main_k
    metrics = list(result.headline) + [m for m in (f"SpanIoU@{k}", "PrecisionOmega", f"Dup@{k}", "nDCG@10")
                                       if m in result.metric_names and m not in result.headline]
    # names (dataset, strategy SPECs, labels, faiss factories) are data, printed literally, never as rich markup:
    # every cell is a Text and every title escaped (a dataset folder "docs [v2]" or a SPEC with a [/...] path)
    costs = ["chunks", "tokens enc.", "index bytes", "s (enc. + pool)"]
    names = ["strategy", "mode"] + [_col_name(m) for m in metrics] + costs
    best = {m: _best([s.aggregates.get(m) for s in result.systems], m) for m in metrics}
    rows = []
    for s in result.systems:
        cells = [Text(short_spec(s.strategy)), Text(s.label)]
        for m in metrics:
            v = s.aggregates.get(m)
            cells.append(Text(_fmt(m, v), style="bold" if v is not None and v == best[m] else ""))
        c = s.costs
        mark = " (shared)" if c.get("tokens_encoded_shared") else ""
        seconds = (f"{c['seconds_encode']:.1f}{mark} + {c['seconds_pool']:.2f}"
                   if s.mode == "late" and "seconds_encode" in c and "seconds_pool" in c else f"{c['seconds']:.1f}")
        cells += [Text(f"{c['chunks']:,}"), Text(f"{c['tokens_encoded']:,}{mark}"), Text(f"{c['index_bytes']:,}"),
                  Text(seconds)]
        rows.append(cells)
    headline = [2 + i for i, m in enumerate(metrics) if m in result.headline]
    at_k = [i for i in headline if metrics[i - 2].endswith(f"@{k}")]
    extra = [2 + i for i, m in enumerate(metrics) if m not in result.headline]
    cost = {name: 2 + len(metrics) + i for i, name in enumerate(costs)}
    priority = [0, 1, *at_k, *[i for i in headline if i not in at_k], cost["chunks"], cost["s (enc. + pool)"],
                *extra, cost["tokens enc."], cost["index bytes"]]
    shared = any(s.costs.get("tokens_encoded_shared") for s in result.systems)
    title = (f"latechunk compare: {result.manifest['dataset']['name']} "
             f"({result.manifest['dataset']['queries']} queries, %, best in bold)")
    t, left_out = _fitted_table(console, title, names, rows, priority, keep=2 + min(1, len(metrics)))
    if shared and not {"tokens enc.", "s (enc. + pool)"} <= set(left_out):
        # late systems of one macro window share one encoder pass: say so instead of repeating its cost
        t.caption = ("(shared): late rows of one macro window share one encoder pass; its tokens and encode "
                     "seconds are shown on each, pooling seconds after the +")
    console.print(t)
    if left_out:
        console.print(Text(f"{len(left_out)} column(s) left out to fit {console.width} columns "
                           f"({', '.join(left_out)}); {full}"))
    if any(s.compact for s in result.systems):  # one row per system and compact-vector setting
        cm = _compact_metrics(result)
        names = ["strategy", "mode", "setting", "faiss"] + [_col_name(m) for m in cm] + ["top-k kept %", "index bytes"]
        rows = [[Text(str(v)) for v in (short_spec(s.strategy), s.label, label, x["faiss_factory"],
                                        *[_fmt(m, x["metrics"].get(m)) for m in cm],
                                        f"{100 * x['overlap_with_main']:.1f}", f"{x['index_bytes']:,}")]
                for s in result.systems for label, x in s.compact.items()]
        n = len(names)
        priority = [0, 1, 2, *range(4, n - 2), n - 2, n - 1, 3]
        c, left_out = _fitted_table(console, "compact vectors: each setting beside the first (same vectors, same "
                                    "queries)", names, rows, priority, keep=3)
        console.print(c)
        if left_out:
            console.print(Text(f"{len(left_out)} column(s) left out to fit {console.width} columns "
                               f"({', '.join(left_out)}); {full}"))
