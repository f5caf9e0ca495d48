"""Contextual mode (issue 12 item 1): naive encoding of ``[title > section path]`` + a blank line + the chunk text,
beside late and naive, in the pipeline, ``embed --mode contextual`` and ``compare --modes late,naive,contextual``.

The bundled all-MiniLM-L6-v2 runs on the CPU (the point is the real model's vectors); inputs are a few short
documents.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from latechunk.config import PipelineConfig
from latechunk.pipeline import contextual_headers, contextual_texts, contextual_vectors, embed
from latechunk.titles import contextual_header, document_title
from latechunk.types import Document
from tests.models import minilm_encoder

GUIDE = """# Install guide

Read this before you start.

## Linux

Download the tarball and unpack it into /opt. Then run the installer as root.

## Windows

Run setup.exe and follow the wizard. Reboot when it asks.
"""
TABLE = "# Prices\n\n| Part | Price |\n|---|---|\n" + "".join(f"| bolt {i} | {i} cents |\n" for i in range(40))
PLAIN = "Plain words with neither title nor heading nor file name."

STRATEGIES = ("heading:max_tokens=40", "fixed:size=32")


@pytest.fixture(scope="module")
def encoder():
    return minilm_encoder()


@pytest.fixture(scope="module")
def docs():
    return [Document("guide", GUIDE, {"source": "docs/guide.md"}),
            Document("prices", TABLE, {"source": "prices.md"}),
            Document("record-7", "Body of a record without a heading.", {"title": "Seven  Seas"}),
            Document("plain", PLAIN, {})]


@pytest.fixture(scope="module")
def result(encoder, docs):
    return embed(docs, encoder, PipelineConfig(STRATEGIES, modes=("late", "naive", "contextual")))


def test_contextual_vectors_equal_encoding_header_and_text_by_hand(result, encoder):
    for spec in result.runs:
        run = result.run(spec)
        texts = []
        for doc, b in zip(result.documents, run.boundaries):
            title = document_title(doc)[0]
            for (cs, ce), path, ctx in zip(b.char_spans.tolist(), b.heading_paths, b.contexts):
                chunk = doc.text[cs:ce]
                naive = f"{ctx}\n{chunk}" if ctx else chunk
                header = contextual_header(title, path)
                texts.append(f"{header}\n\n{naive}" if header else naive)
        by_hand = encoder.encode_document(texts, normalize=True)
        got = run.vectors["contextual"].vectors
        assert got.shape == by_hand.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, by_hand, atol=1e-5)
        assert run.vectors["contextual"].mode == "contextual"
        # the header changes the vector wherever there is one, and nowhere else
        heads = [h for d, b in zip(result.documents, run.boundaries) for h in contextual_headers(d, b)]
        naive = run.vectors["naive"].vectors
        same = np.abs(got - naive).max(axis=1) <= 1e-6
        assert [h == "" for h in heads] == same.tolist()
        assert any(h == "" for h in heads) and not all(h == "" for h in heads)


def test_headers_follow_title_origins_and_heading_paths(result, docs):
    b = result.run("heading:max_tokens=40").boundaries
    by_doc = {d.doc_id: contextual_headers(d, bb) for d, bb in zip(result.documents, b)}
    assert by_doc["guide"][0] == "[Install guide]"  # the first heading is the title: said once
    assert "[Install guide > Linux]" in by_doc["guide"] and "[Install guide > Windows]" in by_doc["guide"]
    assert set(by_doc["record-7"]) == {"[Seven Seas]"}  # a record's title, whitespace collapsed
    assert set(by_doc["plain"]) == {""}  # no title, no heading: encoded as naive
    assert [document_title(d)[1] for d in docs] == ["heading", "heading", "record", "none"]


def test_stored_text_stays_the_exact_slice(result):
    for spec in result.runs:
        run = result.run(spec)
        for doc, b in zip(result.documents, run.boundaries):
            slices = [doc.text[s:e] for s, e in b.char_spans.tolist()]
            assert b.texts(doc.text) == slices  # Boundaries (what the chunk table stores) never hold a header
            for text, head, piece in zip(contextual_texts(doc, b), contextual_headers(doc, b), slices):
                assert text.endswith(piece)
                assert text.startswith(head + "\n\n") if head else text == piece or "\n" + piece in text


def test_table_context_line_comes_after_the_header(result):
    run = result.run("heading:max_tokens=40")
    i = [d.doc_id for d in result.documents].index("prices")
    doc, b = result.documents[i], run.boundaries[i]
    with_ctx = [k for k, c in enumerate(b.contexts) if c]
    assert with_ctx, "the long table should be cut between rows with its header as context"
    k = with_ctx[0]
    text = contextual_texts(doc, b)[k]
    assert text.startswith("[Prices]\n\n| Part | Price |\n|---|---|\n")


def test_one_pass_counts_tokens_per_mode(result):
    st = result.stats
    assert set(st.tokens) >= {"late", "naive", "contextual"}
    assert st.tokens["contextual"] > st.tokens["naive"]  # headers cost tokens
    assert st.seconds["contextual_encode"] > 0
    for spec in result.runs:
        assert result.run(spec).tokens_encoded["contextual"] == st.contextual_tokens_by_strategy[spec]


def test_a_long_chunk_with_its_header_goes_through_macro_windows(encoder):
    """A chunk whose header pushes it past the model's limit is encoded in macro windows, never truncated."""
    body = " ".join(f"word{i}" for i in range(300))  # about 900 tokens
    doc = Document("long", "# A title\n\n" + body, {})
    res = embed([doc], encoder, PipelineConfig(("fixed:size=2000",), modes=("naive", "contextual")))
    run = res.run("fixed:size=2000")
    assert len(run.boundaries[0]) == 1
    (text,) = contextual_texts(doc, run.boundaries[0])
    assert text.startswith("[A title]\n\n# A title")
    n = len(encoder.tokenizer(Document("x", text)))
    assert n > encoder.max_length
    np.testing.assert_allclose(run.vectors["contextual"].vectors, encoder.encode_document([text], normalize=True),
                               atol=1e-5)
    v, tokens, _calls = contextual_vectors(encoder, res.documents, run.boundaries)
    assert tokens > n  # overlapping macro windows: some tokens go through the encoder twice, none are cut
    np.testing.assert_array_equal(v, run.vectors["contextual"].vectors)


def test_bad_mode_names_the_choices():
    with pytest.raises(ValueError, match="contextual"):
        PipelineConfig(("fixed",), modes=("context",))


def test_embed_mode_contextual_writes_exact_slices(tmp_path):
    from typer.testing import CliRunner

    from latechunk.cli import app
    from latechunk.output import OutputFolder

    src = tmp_path / "in"
    src.mkdir()
    (src / "guide.md").write_text(GUIDE, encoding="utf-8")
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["embed", str(src), "--out", str(out), "--mode", "contextual", "--strategy",
                                 "heading:max_tokens=40", "--device", "cpu", "--quiet"])
    assert r.exit_code == 0, r.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["mode"] == "contextual"
    table = OutputFolder(out).read_chunks().to_pydict()
    texts = table["text"]
    assert texts and all(GUIDE[s:e] == t for s, e, t in zip(table["char_start"], table["char_end"], texts))
    assert not any(t.startswith("[") for t in texts)
    # the chunk table's header column holds what was encoded before each text
    assert table["header"][0] == "[Install guide]" and "[Install guide > Linux]" in table["header"]
    assert set(table["title_from"]) == {"heading"}


# ------------------------------------------------------------------------------------------------ compare
@pytest.fixture(scope="module")
def compared(tmp_path_factory, encoder):
    from latechunk.eval.harness import run_compare
    from tests.eval.test_eval_harness import _config, _write_dataset

    root = _write_dataset(tmp_path_factory.mktemp("ctx") / "tiny_chroma")
    tmp = tmp_path_factory.mktemp("ctx_out")
    # two macro windows: semantic's cuts depend on the late pass, so its naive and contextual vectors are made
    # again from the second window's cuts
    cfg = _config(root, tmp, strategies=("fixed:size=24", "semantic"), modes=("late", "naive", "contextual"),
                  max_queries=8, windows=(64, 512))
    return run_compare(cfg, tmp / "report", encoder=encoder, command="latechunk compare --modes late,naive,contextual"), tmp


def test_compare_three_modes_gives_both_interval_rows(compared):
    res, tmp = compared
    modes = {s.mode for s in res.systems}
    assert modes == {"late", "naive", "contextual"}
    kinds = {c["kind"] for c in res.comparisons}
    assert {"late-naive", "late-contextual", "naive-contextual"} <= kinds
    for spec in ("fixed:size=24,overlap=0", res.systems[-1].strategy):
        late, ctx = res.system(spec, "late"), res.system(spec, "contextual")
        assert late.chunks_sha256 == ctx.chunks_sha256  # one set of chunk records in every mode
        c = next(c for c in res.comparisons if c["kind"] == "late-contextual" and c["strategy"] == late.strategy
                 and c["metric"] == "AR@3")
        diff = np.mean([late.per_query["AR@3"][q] - ctx.per_query["AR@3"][q] for q in late.per_query["AR@3"]])
        assert c["mean_diff"] == pytest.approx(diff) and c["ci_low"] <= c["mean_diff"] <= c["ci_high"]
    sem = res.systems[-1].strategy
    assert [s.window for s in res.systems if s.strategy == sem and s.mode == "contextual"] == [64, 512]
    assert [s.window for s in res.systems if s.strategy != sem and s.mode == "contextual"] == [None]
    for w in (64, 512):  # each window's contextual vectors index that window's cuts
        assert res.system(sem, "contextual", w).chunks_sha256 == res.system(sem, "late", w).chunks_sha256
    assert res.manifest["windows"][1]["contextual_tokens"] > 0
    report = (tmp / "report" / "report.md").read_text()
    assert "## Late minus naive" in report and "## Late minus contextual" in report
    assert "## Naive minus contextual" in report
    assert "late − contextual [95% CI]" in report
    assert res.manifest["titles"]["origins"] == {"file_name": 3}  # corpora/*.md, no headings
    assert "3 documents from file name" in report


def test_compare_rejects_an_unknown_mode():
    from latechunk.eval.config import CompareConfig

    with pytest.raises(ValueError, match="late, naive, contextual"):
        CompareConfig(dataset="chroma", modes=("late", "ctx"))
