"""Evaluation datasets: one corpus, one query set, answer spans in characters, optional document qrels.

Every loader returns an :class:`EvalDataset`. Units: a span is ``(doc_id, char_start, char_end)``, half-open
character offsets (Python ``str`` indices, Unicode code points) into ``Document.text``; every loader checks
``text[char_start:char_end]`` against the annotated answer text and raises ``ValueError`` on a mismatch.

Formats read (tests: ``tests/eval/test_eval_datasets.py``):

- **Chroma** (Smith & Troynikov, "Evaluating Chunking Strategies for Retrieval", Chroma 2024,
  https://research.trychroma.com/evaluating-chunking): ``corpora/*.md`` (one document per file) and
  ``questions_df.csv`` with a JSON ``references`` column. :func:`load_chroma`.
- **SQuAD / XQuAD** JSON (Rajpurkar et al. 2016; Artetxe et al. 2019): one document per
  article. :func:`load_squad`.
- **BEIR** (Thakur et al. 2021): ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``; document-level
  relevance only, no spans. :func:`load_beir`.

Encodings, as ``embed`` reads a file (:func:`latechunk.io.read_text_file`): every file is UTF-8 unless it starts
with a byte-order mark (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE), which selects that encoding and is not part of the
text; there is no newline translation. A corpus document's offsets therefore count from the character after its
BOM, as the offsets of ``embed``'s chunks do. A file that does not decode is a ``ValueError`` naming the file and
the byte (and, for UTF-8, the line).

Nothing is dropped silently: a record a loader cannot use (a blank question, a question without an answer, a
query without a relevant document, a repeated row) is left out and counted in :attr:`EvalDataset.notes`, one line
per reason with where the first ones are (``file:line``); a malformed record (a missing field, a duplicate id) is
a ``ValueError`` naming ``file:line``.

The package, by concern: ``dataset.py`` (:class:`EvalDataset`, :class:`Query`, :data:`SpanRef`), ``files.py``
(a dataset file read as ``embed`` reads one, an annotated slice checked, the notes of what was left out), one
module per format (``chroma.py``, ``squad.py``, ``beir.py``) and ``named.py`` (:func:`data_root`,
:func:`dataset_path`, :func:`load_dataset`). Every name other modules import is importable from
``latechunk.eval.datasets`` itself.
"""

from .beir import BEIR_ID_FIELDS as BEIR_ID_FIELDS
from .beir import load_beir
from .chroma import CHROMA_CORPUS_SUFFIXES as CHROMA_CORPUS_SUFFIXES
from .chroma import load_chroma
from .dataset import EvalDataset, Query, SpanRef
from .files import _read_text as _read_text
from .named import _NAMED as _NAMED
from .named import DATA_ENV_VAR, data_root, dataset_path, load_dataset
from .squad import load_squad

__all__ = [
    "DATA_ENV_VAR",
    "EvalDataset",
    "Query",
    "SpanRef",
    "data_root",
    "dataset_path",
    "load_beir",
    "load_chroma",
    "load_dataset",
    "load_squad",
]
