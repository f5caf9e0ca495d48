"""The small corpus shared by the ingest, ranks and pipeline tests: the two smallest Chroma corpora, each cut into
parts at a line end or space, plus one empty file, and a tiny random BERT saved as a model folder (safetensors);
with a small group budget (``ARGS``) a run writes about ten shards. Tests that use it skip without
``../shared/data``."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from latechunk.eval.datasets import data_root
from tests.models import save_tiny_bert

REPO = Path(__file__).resolve().parents[1]
DATA = data_root() / "chroma_chunking_eval" / "corpora"
SMALL = ("chatlogs.md", "state_of_the_union.md")
PARTS = 6
ARGS = ["--strategy", "fixed:size=128", "--device", "cpu", "--quiet", "--group-tokens", "1500"]


def split_text(text: str, parts: int) -> list[str]:
    """Cut ``text`` after a newline (else a space) into ``parts`` pieces of about equal length (their
    concatenation is ``text``)."""
    cuts, target = [0], len(text) / parts
    for i in range(1, parts):
        at = text.find("\n", int(i * target), int((i + 0.5) * target))
        at = at if at >= 0 else text.find(" ", int(i * target))
        if at < 0 or at <= cuts[-1]:
            break
        cuts.append(at + 1)
    cuts.append(len(text))
    return [text[a:b] for a, b in itertools.pairwise(cuts)]


def make_corpus(tmp_path_factory, tag: str = "") -> tuple[Path, Path]:
    """``(corpus folder, model folder)``: the SMALL corpora cut into PARTS files each plus one empty file, and a
    tiny random BERT saved as a model folder (skips the test without ../shared/data)."""
    if not all((DATA / n).exists() for n in SMALL):
        pytest.skip("../shared/data is not present")
    root = tmp_path_factory.mktemp(f"chroma_small{tag}")
    for name in SMALL:
        folder = root / Path(name).stem
        folder.mkdir()
        for i, piece in enumerate(split_text((DATA / name).read_text(encoding="utf-8"), PARTS)):
            (folder / f"part{i}.md").write_text(piece, encoding="utf-8")
    (root / "empty.md").write_text("  \n", encoding="utf-8")  # one skipped input, accounted for
    model = save_tiny_bert(tmp_path_factory.mktemp(f"tiny_bert{tag}"))
    return root, model


def index_vectors(out: Path) -> np.ndarray:
    import faiss

    index = faiss.read_index(str(out / "index.faiss"))
    return index.reconstruct_n(0, index.ntotal)


def assert_same_output(out_ref: Path, out_new: Path) -> None:
    m_ref = json.loads((out_ref / "manifest.json").read_text())
    m_new = json.loads((out_new / "manifest.json").read_text())
    t_ref, t_new = pq.read_table(out_ref / "chunks.parquet"), pq.read_table(out_new / "chunks.parquet")
    assert t_new.column("doc_id").to_pylist() == t_ref.column("doc_id").to_pylist()  # same ids, same order
    assert t_new.equals(t_ref)  # same chunk rows
    v_ref, v_new = index_vectors(out_ref), index_vectors(out_new)
    assert v_new.shape == v_ref.shape
    np.testing.assert_allclose(v_new, v_ref, rtol=0, atol=1e-6)
    for key in ("documents", "skipped", "counts", "dim", "index", "strategy"):
        if key == "counts":
            assert {k: v for k, v in m_new[key].items()} == m_ref[key]
        else:
            assert m_new[key] == m_ref[key], key
    assert [s["rows"] for s in m_new["shards"]] == [s["rows"] for s in m_ref["shards"]]


