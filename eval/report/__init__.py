"""The report folder of ``latechunk compare``: ``report.md``, ``results.json``, ``per_query.csv``, ``plot.png``.

Nothing here computes a metric: every number comes from a :class:`~latechunk.eval.harness.CompareResult`; this package
only formats (quality metrics as percentages, i.e. the mean over queries times 100, one decimal) and draws.
Confidence intervals of a single system's mean (the plot's error bars) use the same paired bootstrap as the
comparisons, paired against zero. Two diagnostics of the chunks themselves are added to the manifest here, from
the result's pipeline runs, by :func:`add_diagnostics` (before ``results.json`` is written): parse alarms per
strategy (:func:`latechunk.alarms.parse_alarms`) and the boundary agreement of every strategy pair
(:func:`latechunk.agree.agreement_report`). Tests: ``tests/eval/test_eval_harness.py``,
``tests/eval/test_eval_report.py``.

The package, by concern: ``formatting.py`` (how a value, an interval and a column name print; the Markdown
table), ``tables.py`` (report.md's tables), ``markdown.py`` (:func:`markdown_report`, section by section),
``diagnostics.py`` (:func:`add_diagnostics`, :func:`print_alarms`), ``plot.py`` (:func:`write_plot`),
``terminal.py`` (:func:`print_table`) and ``folder.py`` (:func:`write_report`, :func:`load_result`,
:func:`per_query_rows`). Every name other modules import is importable from ``latechunk.eval.report`` itself.
"""

from ..plots import short_spec
from .diagnostics import add_diagnostics, print_alarms
from .folder import PER_QUERY_COLUMNS, REPORT_FILES, load_result, per_query_rows, write_report
from .formatting import _ci as _ci
from .formatting import _fmt as _fmt
from .markdown import SMALL_CORPUS_DOCUMENTS, markdown_report
from .plot import _pair_series as _pair_series
from .plot import _renderer as _renderer
from .plot import write_plot
from .tables import _compact_metrics as _compact_metrics
from .tables import _metric_table as _metric_table
from .terminal import STRATEGY_COLUMN_WIDTH, print_table

__all__ = ["PER_QUERY_COLUMNS", "REPORT_FILES", "SMALL_CORPUS_DOCUMENTS", "STRATEGY_COLUMN_WIDTH", "add_diagnostics",
           "load_result", "markdown_report", "per_query_rows", "print_alarms", "print_table", "short_spec",
           "write_plot", "write_report"]
