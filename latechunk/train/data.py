"""What ``latechunk train`` trains on: examples (a dataset's answer spans or the inverse cloze task), the record
of what a model was trained on, and each document planned once (tokens, chunks, macro-window inputs).

Tests: ``tests/train/test_train.py``, ``tests/train/test_trained_on.py``.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from latechunk.train.config import DEFAULT_ICT_QUERIES, ICT_KEEP_PROB, TRAIN_FILE
from latechunk.types import Document

if TYPE_CHECKING:
    from latechunk.encoder import Encoder
    from latechunk.macro_window import MacroWindow, PlannedWindow
    from latechunk.train.config import TrainConfig
    from latechunk.types import Boundaries, Tokenization


# ------------------------------------------------------------------------------------------------ examples
@dataclass(frozen=True)
class TrainExample:
    """One training query with the place of its answer.

    Attributes:
        query_id: Stable identifier.
        query: The query text.
        doc: The document that holds the answer (shared by the examples of one document).
        span: ``(char_start, char_end)``, half-open character offsets into ``doc.text`` of the answer; the
            target chunk is the one holding most of it.
    """

    query_id: str
    query: str
    doc: Document
    span: tuple[int, int]


def supervised_examples(dataset) -> list[TrainExample]:
    """The examples of a dataset with answer spans: one per query, its first answer span.

    Args:
        dataset: A :class:`latechunk.eval.datasets.EvalDataset` (Chroma, SQuAD/XQuAD, or any format with spans).

    Returns:
        One :class:`TrainExample` per query that has an answer span, in query order.

    Raises:
        ValueError: if no query has an answer span (e.g. a BEIR folder, whose relevance is per document).
    """
    out = []
    for q in dataset.queries:
        if not q.spans:
            continue
        doc_id, start, end = q.spans[0]
        out.append(TrainExample(q.query_id, q.text, dataset.document(doc_id), (int(start), int(end))))
    if not out:
        raise ValueError(
            f"dataset {dataset.name!r} has no answer spans ({len(dataset.queries)} queries, relevance per "
            "document only?): latechunk train needs queries with answer spans (Chroma, SQuAD/XQuAD formats); "
            "to train without labels use --ict CORPUS"
        )
    return out


def _passage(text: str, centre: int, n_chars: int) -> tuple[int, int]:
    """A passage of about ``n_chars`` characters around ``centre``, its ends moved to whitespace."""
    a = max(0, centre - n_chars // 2)
    b = min(len(text), a + n_chars)
    a = max(0, b - n_chars)
    if a > 0:
        ws = text.find(" ", a)
        nl = text.find("\n", a)
        cands = [x for x in (ws, nl) if 0 <= x < centre]
        a = min(cands) + 1 if cands else a
    if b < len(text):
        cands = [x for x in (text.rfind(" ", centre, b), text.rfind("\n", centre, b)) if x > centre]
        b = max(cands) if cands else b
    return a, b


def ict_examples(
    documents: Sequence[Document],
    n_queries: int = DEFAULT_ICT_QUERIES,
    passage_chars: int = 1200,
    seed: int = 0,
    keep_prob: float = ICT_KEEP_PROB,
    segmenter=None,
) -> list[TrainExample]:
    """Label-free examples by the inverse cloze task (Lee et al., ACL 2019, arXiv:1906.00300).

    The masking rule: draw a document (weighted by length) and a character in it, uniformly; cut a *passage*
    of about ``passage_chars`` characters around it (ends moved to whitespace; about one MiniLM macro window);
    segment the passage into sentences (:class:`~latechunk.sentences.SentenceSegmenter`, pysbd) and pick one
    of 5 to 60 words that is neither its first nor its last sentence (so it has context on both sides). The
    sentence is the query. With probability ``1 - keep_prob`` it is removed from the passage (the passage
    becomes ``before + after``, the target span the two characters around the gap: the chunk where the
    sentence stood); else it stays and is its own target span. The passage is the example's document.

    Args:
        documents: The corpus (only its text is read; no questions, no labels).
        n_queries: Examples to draw (fewer if the corpus has too few usable sentences).
        passage_chars: Characters per passage, about.
        seed: Seed of the draw (``random.Random``).
        keep_prob: Share of examples whose sentence stays in the passage.
        segmenter: A :class:`~latechunk.sentences.SentenceSegmenter` (default a new in-process one).

    Returns:
        Up to ``n_queries`` :class:`TrainExample`, each with its own passage document (``doc_id``
        ``"<doc_id>@<start>:<example number>"``, unique per example; ``metadata["source_doc"]``).

    Raises:
        ValueError: if no document has text, or ``n_queries < 1``.
    """
    if n_queries < 1:
        raise ValueError(f"ict: the number of queries must be >= 1, got {n_queries}")
    docs = [d for d in documents if d.text.strip()]
    if not docs:
        raise ValueError("ict: the corpus has no document with text")
    if segmenter is None:
        from latechunk.sentences import SentenceSegmenter

        segmenter = SentenceSegmenter()
    rng = random.Random(seed)
    weights = [len(d.text) for d in docs]
    out: list[TrainExample] = []
    seen: set[tuple[str, int]] = set()
    tries = 0
    while len(out) < n_queries and tries < 20 * n_queries:
        tries += 1
        doc = rng.choices(docs, weights)[0]
        a, b = _passage(doc.text, rng.randrange(len(doc.text)), passage_chars)
        passage = doc.text[a:b]
        spans = np.asarray(segmenter.char_spans(passage, cache=False)).reshape(-1, 2)
        inner = [(int(s), int(e)) for s, e in spans[1:-1] if 5 <= len(passage[s:e].split()) <= 60]
        if not inner:
            continue
        s, e = rng.choice(inner)
        if (doc.doc_id, a + s) in seen:
            continue
        seen.add((doc.doc_id, a + s))
        query = " ".join(passage[s:e].split())
        if rng.random() < keep_prob:
            text, span = passage, (s, e)
        else:
            before, after = passage[:s].rstrip(), passage[e:].lstrip()
            text = f"{before} {after}" if before and after else before or after
            cut = len(before)
            span = (max(0, cut - 1), min(len(text), cut + 1))
        # one passage document per example: two examples can share a passage start (a short document gives every
        # draw a == 0) but not its text (each removes its own sentence), and the trainer plans documents by id
        pdoc = Document(f"{doc.doc_id}@{a}:{len(out)}", text,
                        {"source_doc": doc.doc_id, "source": doc.metadata.get("source", "")})
        out.append(TrainExample(f"ict:{len(out)}", query, pdoc, span))
    return out


def _dataset_path(spec: str | None) -> str | None:
    """The resolved path of a ``--dataset`` (a bundled name's file or folder under the data root), recorded so
    that ``compare`` recognises the dataset from any directory and under any of its names; None without one."""
    if not spec:
        return None
    from latechunk.eval.datasets import dataset_path

    try:
        return str(dataset_path(spec).resolve())
    except (OSError, ValueError, FileNotFoundError):
        return None


def same_dataset(recorded: str, path: str | None, spec: str) -> bool:
    """Whether a training record's dataset (its ``--dataset`` text and resolved ``dataset_path``) is the dataset
    ``spec`` (a bundled name or a path) names: the same name, or the same resolved path (or the folder holding
    the other's file: ``xquad`` is ``DATA/xquad_en/xquad.en.json``, named also by ``DATA/xquad_en``).

    Args:
        recorded: The ``--dataset`` the model was trained on, as given.
        path: Its resolved path as recorded (None in records written before it).
        spec: The dataset to compare with.

    Returns:
        True when both name one dataset.
    """
    if recorded.strip() == spec.strip():
        return True
    mine = _dataset_path(spec)
    theirs = path or _dataset_path(recorded)
    if mine is None or theirs is None:
        return False
    a, b = Path(mine), Path(theirs)
    return a == b or a.parent == b or b.parent == a  # a dataset's file, or the folder that holds it


def trained_on(model: str | Path | None, depth: int = 8) -> list[tuple[str, str | None]]:
    """The labelled datasets a model folder was trained on by ``latechunk train --dataset``, its base models'
    included (each folder's :data:`TRAIN_FILE` names its base model): what ``compare`` checks its dataset
    against, since a score on questions the model was trained on is not a held-out score.

    Args:
        model: A model folder (a name or a folder without :data:`TRAIN_FILE`: ``[]``).
        depth: Base models followed at most.

    Returns:
        ``(--dataset as given, its resolved path or None)`` per training, nearest first; ``--ict`` runs (no
        questions) are not listed.
    """
    out: list[tuple[str, str | None]] = []
    path = Path(model) if model else None
    for _ in range(depth):
        if path is None or not (path / TRAIN_FILE).is_file():
            break
        try:
            record = json.loads((path / TRAIN_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            break
        dataset = (record.get("config") or {}).get("dataset")
        if dataset:
            out.append((str(dataset), record.get("dataset_path")))
        base = record.get("base_model")
        path = Path(base) if isinstance(base, str) and base and Path(base) != path else None
    return out



# ------------------------------------------------------------------------------------------------ documents
@dataclass
class _DocPlan:
    """One document as trained on: its tokenization, chunks and macro-window inputs (computed once)."""

    doc: Document
    tok: Tokenization
    bounds: Boundaries
    rows: list[np.ndarray]  # model inputs (token ids), one per macro window
    plan: list[PlannedWindow]
    keep_ends: np.ndarray  # (n_windows,) content-token keep_end of each window (for searchsorted)

    def target(self, span: tuple[int, int]) -> int:
        """The chunk holding most of a char span (-1 if none touches it)."""
        cs = self.bounds.char_spans.astype(np.int64)
        s, e = span
        overlap = np.minimum(cs[:, 1], e) - np.maximum(cs[:, 0], s)
        j = int(np.argmax(overlap))
        return j if overlap[j] > 0 else -1

    def windows_of(self, j: int) -> range:
        """The macro windows whose kept tokens hold chunk ``j``'s tokens."""
        a, b = (self.bounds.token_spans[j] - self.tok.n_lead).tolist()
        w0 = int(np.searchsorted(self.keep_ends, a, side="right"))
        w1 = int(np.searchsorted(self.keep_ends, b - 1, side="right"))
        return range(w0, w1 + 1)


def _plan_documents(examples: Sequence[TrainExample], encoder: Encoder, strategy: str, mw: MacroWindow,
                    progress: bool) -> tuple[dict[str, _DocPlan], list[tuple[TrainExample, int]], dict[str, int]]:
    from latechunk.sentences import SentenceSegmenter
    from latechunk.strategies import get_strategy

    strat = get_strategy(strategy).for_model(encoder.max_length - encoder.tokenizer.n_frame)
    docs: dict[str, Document] = {}
    for ex in examples:
        docs.setdefault(ex.doc.doc_id, ex.doc)
    plans: dict[str, _DocPlan] = {}
    skipped: dict[str, int] = {}
    seg = SentenceSegmenter()
    it = docs.values()
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, total=len(docs), desc="chunk", unit="doc", leave=False, file=sys.stderr,
                  disable=None)  # on a terminal only
    for doc in it:
        tok = encoder.tokenizer(doc)
        if tok.n_content == 0:
            continue
        b = strat.split(doc, tok, None, sentences=seg)
        rows, plan = encoder.model_inputs(tok, mw)
        plans[doc.doc_id] = _DocPlan(doc, tok, b, rows, plan, np.asarray([w.keep_end for w in plan], dtype=np.int64))
    pairs = []
    for ex in examples:
        p = plans.get(ex.doc.doc_id)
        if p is None:
            skipped["document without tokens"] = skipped.get("document without tokens", 0) + 1
            continue
        j = p.target(ex.span)
        if j < 0:
            skipped["answer span in no chunk"] = skipped.get("answer span in no chunk", 0) + 1
            continue
        pairs.append((ex, j))
    return plans, pairs, skipped



def _examples(config: TrainConfig, progress: bool) -> tuple[list[TrainExample], str]:
    if config.dataset is not None:
        from latechunk.eval.datasets import load_dataset

        try:
            ds = load_dataset(config.dataset)
        except FileNotFoundError as err:
            raise ValueError(str(err)) from err
        return supervised_examples(ds), (f"dataset {ds.name!r}: {len(ds.documents)} documents, {len(ds.queries)} "
                                         "queries" + "".join(f"; {n}" for n in ds.notes))
    from latechunk.io import iter_inputs
    from latechunk.types import Skipped

    docs, skipped = [], 0
    for item in iter_inputs(list(config.ict or ())):
        if isinstance(item, Skipped):
            skipped += 1
        else:
            docs.append(item)
    if not docs:
        raise ValueError(f"--ict {' '.join(config.ict or ())}: no documents read ({skipped} inputs skipped)")
    ex = ict_examples(docs, config.ict_queries, seed=config.seed)
    return ex, f"inverse cloze over {len(docs)} documents ({skipped} inputs skipped): {len(ex)} examples"
