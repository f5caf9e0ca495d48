"""SQuAD v1.1/v2.0 and XQuAD JSON (Rajpurkar et al. 2016; Artetxe et al. 2019), one document per article.
:func:`load_squad`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal

from latechunk.types import Document

from .dataset import EvalDataset, Query
from .files import _check_slice, _left_out_notes, _read_text


def load_squad(
    path: str | os.PathLike,
    *,
    answers: Literal["first", "all"] = "first",
    skip_unanswerable: bool = False,
    name: str | None = None,
) -> EvalDataset:
    r"""Load SQuAD v1.1/v2.0 or XQuAD JSON with one document per article.

    An article's document is its paragraphs' ``context`` strings joined in file order with ``"\n\n"``;
    ``doc_id`` is the article ``title``. An answer ``answer_start`` (a char offset into its paragraph) is
    shifted by ``sum(len(previous contexts) + 2)``, so span = ``(title, shift + answer_start,
    shift + answer_start + len(text))``. ``query_id`` is the question ``id``. The file is read as ``embed`` reads
    one (UTF-8 or the encoding of its byte-order mark, see the module doc). A question whose text is blank is left
    out and counted in the dataset's ``notes``.

    Args:
        path: The JSON file.
        answers: ``"first"`` keeps the first listed answer (XQuAD and SQuAD train have exactly one; SQuAD dev
            lists up to three annotators' answers, and the others are not used); ``"all"`` keeps every distinct
            answer span (they are alternatives, so span metrics that need every span would be stricter than the
            task).
        skip_unanswerable: SQuAD v2.0 questions without answers raise unless this is True, in which case they
            are left out and counted in the dataset's ``notes`` (:func:`load_dataset`, and so ``compare`` and
            ``train``, leave them out: a span metric needs an answer).
        name: Dataset name; defaults to the file stem.

    Returns:
        The :class:`EvalDataset`, without document qrels (derived from the spans).

    Raises:
        ValueError: on a file that does not decode or is not SQuAD JSON (a missing field is named with its
            article and question), a duplicate title or question id, a question without answers (unless
            skipped) or an answer whose slice does not match its text.
    """
    if answers not in ("first", "all"):
        raise ValueError(f"load_squad: answers must be 'first' or 'all', got {answers!r}")
    path = Path(path)
    try:
        payload = json.loads(_read_text(path, "load_squad"))
    except json.JSONDecodeError as err:
        raise ValueError(f"load_squad: {path}:{err.lineno}:{err.colno}: not JSON ({err.msg})") from err
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
        # a malformed file, not a wrong argument type: ValueError, like every other format error here
        raise ValueError(f"load_squad: {path} is not SQuAD JSON (expected an object with a 'data' list)")  # noqa: TRY004
    documents = []
    queries = []
    unanswerable = 0
    blank: list[str] = []
    seen_ids: set[str] = set()
    for n_article, article in enumerate(payload["data"]):
        where = f"article {n_article}"
        try:
            title = article["title"]
            where = f"article {n_article} ({title!r})"
            if any(d.doc_id == title for d in documents):
                raise ValueError(
                    f"load_squad: duplicate article title {title!r} in {path}; titles are the doc_ids"
                )
            parts = []
            paragraph_spans = []
            shifted = []  # (query_id, question, char_start, char_end, answer text) in article coordinates
            shift = 0
            for paragraph in article["paragraphs"]:
                context = paragraph["context"]
                parts.append(context)
                paragraph_spans.append([shift, shift + len(context)])
                for qa in paragraph["qas"]:
                    qid = qa["id"]
                    where = f"article {n_article} ({title!r}), question {qid!r}"
                    if qid in seen_ids:
                        raise ValueError(f"load_squad: {path}: {where}: duplicate query_id {qid!r}")
                    seen_ids.add(qid)
                    question = qa["question"]
                    if not isinstance(question, str) or not question.strip():
                        blank.append(repr(qid))
                        continue
                    answer_list = [] if qa.get("is_impossible") else qa.get("answers", [])
                    if not answer_list:
                        if skip_unanswerable:
                            unanswerable += 1
                            continue
                        raise ValueError(
                            f"load_squad: question {qid!r} ({question[:80]!r}) has no answer; pass "
                            "skip_unanswerable=True to leave such questions out"
                        )
                    if answers == "first":
                        answer_list = answer_list[:1]
                    spans = []
                    for answer in answer_list:
                        start = int(answer["answer_start"])
                        end = start + len(answer["text"])
                        _check_slice("load_squad", str(path), qid, question, title, context, start, end,
                                     answer["text"])
                        span = (title, shift + start, shift + end)
                        shifted.append((qid, question, shift + start, shift + end, answer["text"]))
                        if span not in spans:
                            spans.append(span)
                    queries.append(Query(qid, question, tuple(spans)))
                shift += len(context) + 2
        except (KeyError, TypeError) as err:
            raise ValueError(f"load_squad: {path}: {where}: not SQuAD JSON ({type(err).__name__}: {err}; an "
                             "article has title and paragraphs, a paragraph context and qas, a question id, "
                             "question and answers)") from err
        text = "\n\n".join(parts)
        for query_id, question, start, end, expected in shifted:  # guards the shift arithmetic
            _check_slice("load_squad", str(path), query_id, question, title, text, start, end, expected)
        documents.append(Document(title, text, {"title": title, "paragraph_char_spans": paragraph_spans}))
    total = unanswerable + len(queries) + len(blank)
    notes = ((f"{unanswerable} of {total} questions left out: no answer (SQuAD v2.0 "
             "unanswerable; a span metric needs one)"),) if unanswerable else ()
    notes += _left_out_notes(total, "questions", {"blank question": blank})
    return EvalDataset(name or path.stem, tuple(documents), tuple(queries), None, notes)
