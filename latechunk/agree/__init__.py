"""Boundary agreement: where two chunking strategies cut one document alike, and where they do not.

Two strategies that both claim to find the author's own divisions (``heading`` reads the headings, ``semantic``
the drop in similarity between neighbouring sentences) can be checked against each other: list each one's
*cuts*, match them one to one, and account for every cut left over (a *residual*) with the text around it. On
a well-written page the residuals are few and each has a reason (a section introduction leading into its
first subsection is a heading cut with no change of subject). See the late-chunking paper (arXiv:2409.04701)
for the pipeline the boundaries come from, and :func:`agreement` for the rules.

Units: ``token_*`` fields are positions in the document's one :class:`~latechunk.types.Tokenization` (frame
included, as in :class:`~latechunk.types.Boundaries` and the chunk table), ``char_*`` fields are Python string
indices into the document text.

The core (:func:`agreement`, :func:`agreement_report`, :func:`agreement_markdown`, :func:`render_document_html`)
is pure: it reads Boundaries and text. :func:`run_agree` gets the Boundaries of several strategies from one
late pass of :func:`latechunk.pipeline.iter_embed` (``semantic`` needs the encoder).

The package, one module per concern: :mod:`~latechunk.agree.matching` (:class:`Cut`, :func:`cuts_of`,
:func:`agreement`), :mod:`~latechunk.agree.report` (:func:`summarize`, :func:`agreement_report`,
:func:`agreement_markdown`), :mod:`~latechunk.agree.run` (:func:`run_agree`, :class:`AgreeRun`) and
:mod:`~latechunk.agree.view` (the HTML view: :func:`write_html`). Every name is importable from ``latechunk.agree``
as it was from the one module before.

Tests: ``tests/test_agree.py``.
"""

from latechunk.agree.matching import CONTEXT_CHARS as CONTEXT_CHARS
from latechunk.agree.matching import DEFAULT_TOLERANCE, Agreement, Cut, Match, Residual, agreement, cuts_of
from latechunk.agree.matching import _check_boundaries as _check_boundaries
from latechunk.agree.matching import _cut_array as _cut_array
from latechunk.agree.matching import _distance as _distance
from latechunk.agree.matching import _nearest as _nearest
from latechunk.agree.matching import _nonspace_prefix as _nonspace_prefix
from latechunk.agree.matching import _residual as _residual
from latechunk.agree.matching import _space_codes as _space_codes
from latechunk.agree.report import _labels as _labels
from latechunk.agree.report import _pairwise as _pairwise
from latechunk.agree.report import _share as _share
from latechunk.agree.report import agreement_markdown, agreement_report, summarize
from latechunk.agree.run import AgreeRun, run_agree
from latechunk.agree.view import _CSS as _CSS
from latechunk.agree.view import PALETTE as PALETTE
from latechunk.agree.view import _page as _page
from latechunk.agree.view import _slug as _slug
from latechunk.agree.view import render_document_html, render_index_html, write_html

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
