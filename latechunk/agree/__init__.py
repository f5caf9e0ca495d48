"""Boundary agreement: where two chunking strategies cut one document alike, and where they do not (see
:mod:`latechunk.agree.matching`).

Every name is importable from ``latechunk.agree`` as it was from the one module before.

Tests: ``tests/test_agree.py``.
"""

from latechunk.agree.matching import _CSS as _CSS
from latechunk.agree.matching import CONTEXT_CHARS as CONTEXT_CHARS
from latechunk.agree.matching import (
    DEFAULT_TOLERANCE,
    Agreement,
    AgreeRun,
    Cut,
    Match,
    Residual,
    agreement,
    agreement_markdown,
    agreement_report,
    cuts_of,
    render_document_html,
    render_index_html,
    run_agree,
    summarize,
    write_html,
)
from latechunk.agree.matching import PALETTE as PALETTE
from latechunk.agree.matching import _check_boundaries as _check_boundaries
from latechunk.agree.matching import _cut_array as _cut_array
from latechunk.agree.matching import _distance as _distance
from latechunk.agree.matching import _labels as _labels
from latechunk.agree.matching import _nearest as _nearest
from latechunk.agree.matching import _nonspace_prefix as _nonspace_prefix
from latechunk.agree.matching import _page as _page
from latechunk.agree.matching import _pairwise as _pairwise
from latechunk.agree.matching import _residual as _residual
from latechunk.agree.matching import _share as _share
from latechunk.agree.matching import _slug as _slug
from latechunk.agree.matching import _space_codes as _space_codes

__all__ = [
    "DEFAULT_TOLERANCE",
    "Cut",
    "Match",
    "Residual",
    "Agreement",
    "AgreeRun",
    "cuts_of",
    "agreement",
    "summarize",
    "agreement_report",
    "agreement_markdown",
    "run_agree",
    "render_document_html",
    "render_index_html",
    "write_html",
]
