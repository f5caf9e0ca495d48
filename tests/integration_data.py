"""What the LangChain and LlamaIndex tests share: the Chroma question they answer and its reference span."""

from __future__ import annotations

import ast
import csv

from latechunk.eval.datasets import data_root
from latechunk.io import iter_inputs
from latechunk.types import Document

CHROMA = data_root() / "chroma_chunking_eval"
QUESTION = "How much is the administration cutting credit card late fees to?"
ANSWER = "My administration announced we’re cutting credit card late fees from $32 to $8."
CORPORA = ("state_of_the_union.md", "chatlogs.md")  # the one that holds the answer, and one other
TEXT = ("# Fees\n\nLate chunking encodes a document once. Each chunk vector is the mean of its token states.\n\n"
        "## Cards\n\nThe late fee on a credit card falls from $32 to $8.\n")


def reference_span() -> tuple[str, int, int]:
    """The answer's reference span in the Chroma questions file: (corpus file, char_start, char_end)."""
    with open(CHROMA / "questions_df.csv", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            for ref in ast.literal_eval(row["references"]):
                if ref["content"] == ANSWER:
                    return row["corpus_id"] + ".md", ref["start_index"], ref["end_index"]
    raise AssertionError(f"{ANSWER!r} is not a reference in questions_df.csv")


def corpus_documents() -> list[Document]:
    """The two Chroma corpora of :data:`CORPORA`, as latechunk Documents."""
    docs = [d for d in iter_inputs([CHROMA / "corpora" / name for name in CORPORA]) if isinstance(d, Document)]
    assert [d.doc_id for d in docs] == list(CORPORA)
    return docs
