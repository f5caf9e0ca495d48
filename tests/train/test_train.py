"""``latechunk train`` (latechunk/train/) on a tiny random BERT: the loss falls, the saved folder loads and
differs from the base, the training forward pools as ``embed`` does, ``--ict`` runs, bad input fails clearly."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from models import save_tiny_bert
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.train import (
    TrainConfig,
    TrainExample,
    _late_step_vectors,
    _plan_documents,
    ict_examples,
    train,
)
from latechunk.types import Document

TOPICS = [
    ("Volcanoes", ["Mount Etna erupts often and lava reaches the villages below.",
                   "The crater of Vesuvius buried Pompeii under ash in the year 79.",
                   "Geologists measure sulfur gas to forecast the next eruption.",
                   "Basalt forms when lava cools quickly near the surface."]),
    ("Bakery", ["Sourdough bread rises slowly because of wild yeast in the starter.",
                "Croissants need cold butter folded into the dough many times.",
                "The oven must reach two hundred and fifty degrees for baguettes.",
                "Rye flour gives a dense crumb and a sour taste."]),
    ("Chess", ["The queen is the strongest piece on the chess board.",
               "Castling moves the king two squares toward a rook.",
               "A pawn that reaches the last rank becomes a queen or a knight.",
               "The Sicilian defence answers the king pawn opening with c5."]),
]


def _squad(tmp_path):
    """A SQuAD file: one article per topic, one paragraph per sentence, one question per sentence."""
    data = []
    for title, sents in TOPICS:
        paragraphs = []
        for i, s in enumerate(sents):
            words = s.rstrip(".").split()
            answer = " ".join(words[-2:])
            q = f"What about {' '.join(words[:4]).lower()}?"
            paragraphs.append({"context": s, "qas": [{"id": f"{title}-{i}", "question": q,
                                                       "answers": [{"text": answer, "answer_start": s.index(answer)}]}]})
        data.append({"title": title, "paragraphs": paragraphs})
    path = tmp_path / "toy.json"
    path.write_text(json.dumps({"version": "1.1", "data": data}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("tiny") / "base")


@pytest.fixture(scope="module")
def trained(tiny, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("train")
    out = tmp / "model"
    cfg = TrainConfig(out=str(out), dataset=str(_squad(tmp)), model=str(tiny), strategy="fixed:size=8",
                      macro_window=32, window_overlap=4, epochs=6, lr=2e-3, batch_size=6, naive_weight=0.5,
                      device="cpu", seed=0)
    return train(cfg, progress=False)


def test_loss_decreases(trained):
    means = trained.epoch_means()
    assert trained.steps == 12 and len(trained.losses) == 12  # 12 queries, 6 per step, 6 epochs
    assert all(np.isfinite(trained.losses))
    assert means[-1] < 0.8 * means[0], means
    assert trained.n_examples == 12 and not trained.n_skipped


def test_saved_folder_loads_and_differs(trained, tiny):
    from latechunk.encoder import Encoder

    out = trained.out
    for name in ("model.safetensors", "config.json", "modules.json", "config_sentence_transformers.json",
                 "sentence_bert_config.json", "tokenizer.json", "latechunk_train.json"):
        assert (out / name).is_file(), name
    record = json.loads((out / "latechunk_train.json").read_text())
    assert record["loss"] == trained.losses and record["macro_window"] == {"size": 32, "overlap": 4}
    base, new = Encoder(str(tiny), device="cpu"), Encoder(str(out), device="cpu")
    assert new.settings.pooling == "mean" and new.max_seq_length == base.max_seq_length
    texts = ["Where did the lava go?", TOPICS[0][1][0]]
    vb, vn = base.encode(texts), new.encode(texts)
    assert vb.shape == vn.shape
    assert not np.allclose(vb, vn, atol=1e-3)


def test_training_forward_pools_as_embed(tiny):
    """In eval mode the step's late vectors are embed's late vectors of the same chunks (macro windows included)."""
    from latechunk.encoder import Encoder
    from latechunk.pipeline import late_vectors

    enc = Encoder(str(tiny), device="cpu")
    text = " ".join(s for _, sents in TOPICS for s in sents)
    doc = Document("long", text)
    mw = enc.macro_window(32, 4)
    exs = [TrainExample("q0", "lava", doc, (5, 10)), TrainExample("q1", "queen", doc, (len(text) - 20, len(text) - 2))]
    plans, pairs, _ = _plan_documents(exs, enc, "fixed:size=8", mw, progress=False)
    p = plans["long"]
    assert len(p.plan) > 2  # the document needs several macro windows
    with torch.no_grad():
        vecs, targets, keys, _ = _late_step_vectors(pairs, plans, enc, pad_id=0)
    states = enc.token_states([p.tok], mw)
    ref = late_vectors(states, [p.tok], [p.bounds], normalize=False)
    got = vecs.numpy()
    rows = [j for _, j in keys]
    np.testing.assert_allclose(got, ref[rows], atol=1e-4)
    assert [keys[t][1] for t in targets] == [j for _, j in pairs]
    cs = p.bounds.char_spans
    assert pairs[0][1] == 0
    assert cs[pairs[1][1], 0] <= len(text) - 11 < cs[pairs[1][1], 1]  # the chunk holding most of the answer span


def test_a_chunk_not_whole_in_the_steps_macro_windows_is_counted_not_dropped_silently(tiny, tmp_path):
    """A chunk that a step's macro windows hold only in part cannot be pooled whole, so it is no candidate of that
    step: it is counted (per step, in the result, in latechunk_train.json and in the log), never left out silently.
    Every chunk of a step's documents is either pooled, counted, or wholly outside the step's macro windows."""
    from latechunk.encoder import Encoder

    enc = Encoder(str(tiny), device="cpu")
    text = " ".join(s for _, sents in TOPICS for s in sents)
    doc = Document("long", text)
    mw = enc.macro_window(32, 4)
    plans, pairs, _ = _plan_documents([TrainExample("q0", "lava", doc, (5, 10)),
                                       TrainExample("q1", "crater", doc, (70, 80))], enc, "fixed:size=8", mw,
                                      progress=False)
    p = plans["long"]
    run = sorted({w for _, j in pairs for w in p.windows_of(j)})
    assert len(p.plan) > len(run)  # the step runs some of the document's macro windows, not all
    covered = np.zeros(p.tok.n_content, dtype=bool)
    for w in run:
        covered[p.plan[w].keep_start:p.plan[w].keep_end] = True
    spans = p.bounds.token_spans - p.tok.n_lead
    part = {j for j, (a, b) in enumerate(spans.tolist()) if covered[a:b].any() and not covered[a:b].all()}
    outside = {j for j, (a, b) in enumerate(spans.tolist()) if not covered[a:b].any()}
    assert part  # the fixture makes such a chunk: 8-token chunks across a window's kept edge
    with torch.no_grad():
        step = _late_step_vectors(pairs, plans, enc, pad_id=0)
    pooled = {j for _, j in step.keys}
    assert step.unpooled == len(part)
    assert pooled.isdisjoint(part) and pooled | part | outside == set(range(len(spans)))

    # a whole run reports the count: in the result (per step), the record and the log
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "all.md").write_text(" ".join(s for _, sents in TOPICS for s in sents * 3) + "\n", encoding="utf-8")
    lines = []
    res = train(TrainConfig(out=str(tmp_path / "m"), ict=(str(corpus),), model=str(tiny), strategy="fixed:size=8",
                            macro_window=32, window_overlap=4, ict_queries=8, batch_size=4, naive_weight=0.0,
                            device="cpu", seed=0), progress=False, log=lines.append)
    assert len(res.unpooled) == len(res.losses) and res.n_unpooled == sum(res.unpooled) > 0
    record = json.loads((tmp_path / "m" / "latechunk_train.json").read_text())
    assert record["unpooled_chunks"] == res.n_unpooled and record["unpooled_chunks_per_step"] == res.unpooled
    assert f"{res.n_unpooled} chunks left out of a step's candidates as not whole in its macro windows" in lines[-1]


def test_ict_examples_masking_rule():
    docs = [Document("d", " ".join(s for _, sents in TOPICS for s in sents))]
    exs = ict_examples(docs, n_queries=20, passage_chars=400, seed=1, keep_prob=0.0)
    assert exs
    for ex in exs:
        assert ex.query not in ex.doc.text  # held out of its passage
        s, e = ex.span
        assert 0 <= s < e <= len(ex.doc.text)
    kept = ict_examples(docs, n_queries=5, passage_chars=400, seed=1, keep_prob=1.0)
    assert all(ex.doc.text[ex.span[0]:ex.span[1]] == ex.query for ex in kept)


def test_ict_passages_have_unique_ids(tiny):
    """A document shorter than a passage gives every draw the same passage start; the examples' passages differ
    (each removes its own sentence), so their ids must too: the trainer plans documents by id, and with a shared id
    every example after the first was trained on the first one's passage (its target span in another text, its
    held-out sentence possibly still in the passage)."""
    from latechunk.encoder import Encoder

    docs = [Document("d", " ".join(s for _, sents in TOPICS for s in sents))]
    exs = ict_examples(docs, n_queries=8, passage_chars=10_000, seed=0, keep_prob=0.0)
    assert len(exs) == 8
    assert len({ex.doc.doc_id for ex in exs}) == len(exs)
    enc = Encoder(str(tiny), device="cpu")
    plans, pairs, _ = _plan_documents(exs, enc, "fixed:size=8", enc.macro_window(32, 0), progress=False)
    for ex, _j in pairs:
        assert ex.query not in plans[ex.doc.doc_id].doc.text  # the passage trained on is the example's own

def test_cli_ict_runs(tiny, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for title, sents in TOPICS:
        (corpus / f"{title}.md").write_text(f"# {title}\n\n" + " ".join(sents * 2) + "\n", encoding="utf-8")
    out = tmp_path / "ict-model"
    from transformers.utils import logging as hf_logging

    hf_logging.enable_progress_bar()  # as in a fresh process (another test may have turned them off)
    res = CliRunner().invoke(app, ["train", "--ict", str(corpus), "--out", str(out), "--model", str(tiny),
                                   "--strategy", "fixed:size=8", "--window", "32", "--ict-queries", "8",
                                   "--batch-size", "4", "--device", "cpu", "--quiet"])
    assert res.exit_code == 0, res.output
    assert "Loading weights" not in res.output  # trial finding: --quiet showed transformers' bars
    assert (out / "model.safetensors").is_file()
    record = json.loads((out / "latechunk_train.json").read_text())
    assert record["examples"] == 8 and record["steps"] == 2 and "inverse cloze" in record["data"]


def test_ict_without_a_sentence_to_hold_out_says_the_rule(tiny, tmp_path):
    """Fresh-user trial: documents of one or two sentences gave "no training example left: {}"."""
    corpus = tmp_path / "few"
    corpus.mkdir()
    (corpus / "a.md").write_text("Only one sentence here.\n", encoding="utf-8")
    (corpus / "b.md").write_text("Two sentences. Here is the second one.\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["train", "--ict", str(corpus), "--out", str(tmp_path / "m"), "--model", str(tiny),
                                   "--device", "cpu", "--quiet"])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "a sentence of 5 to 60 words that is neither the first nor the last" in said, said
    assert "{}" not in said
    (tmp_path / "file.md").write_text("x", encoding="utf-8")
    res = CliRunner().invoke(app, ["train", "--ict", str(corpus), "--out", str(tmp_path / "file.md"), "--model",
                                   str(tiny), "--device", "cpu", "--quiet"])
    assert res.exit_code == 2 and "is a file; give a new folder" in " ".join(res.output.split()), res.output
    res = CliRunner().invoke(app, ["train", "--ict", str(corpus), "--out", str(corpus), "--model", str(tiny),
                                   "--device", "cpu", "--quiet"])
    assert res.exit_code == 2 and "is a folder that is not empty" in " ".join(res.output.split()), res.output


def test_cli_bad_dataset_fails_clearly(tiny, tmp_path):
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text('{"_id": "d1", "title": "", "text": "Some text here."}\n', encoding="utf-8")
    (beir / "queries.jsonl").write_text('{"_id": "q1", "text": "what text"}\n', encoding="utf-8")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    runner = CliRunner()
    res = runner.invoke(app, ["train", "--dataset", str(beir), "--out", str(tmp_path / "m"), "--model", str(tiny),
                              "--device", "cpu", "--quiet"])
    assert res.exit_code == 2
    assert "no answer spans" in res.output and "--ict" in res.output
    assert not (tmp_path / "m").exists()
    res = runner.invoke(app, ["train", "--out", str(tmp_path / "m"), "--model", str(tiny)])
    assert res.exit_code == 2 and "exactly one of --dataset" in res.output
    res = runner.invoke(app, ["train", "--dataset", str(beir), "--out", str(tmp_path / "m"), "--strategy", "semantic"])
    assert res.exit_code == 2 and "semantic" in res.output


def test_trained_model_keeps_the_base_models_limits(tmp_path):
    """Fresh-user trial: sentence-transformers 6 saves ``max_seq_length`` (256) as the tokenizer's
    ``model_max_length``, so a model trained from the bundled MiniLM read back with an input limit of 256 (512 in
    the base) and no ``max_seq_length``; ``search -m TRAINED`` over an index built with the base failed. The
    saved folder gets both back (checked on the real model, saved as ``train`` saves it)."""
    from sentence_transformers import SentenceTransformer

    from latechunk.encoder import Encoder
    from latechunk.models import resolve_model_path
    from latechunk.train import _keep_base_limits

    base_path = resolve_model_path(None)
    st = SentenceTransformer(base_path, device="cpu")
    out = tmp_path / "saved"
    st.save(str(out))
    base = Encoder(base_path, device="cpu")
    assert Encoder(str(out), device="cpu").max_length < base.max_length  # what sentence-transformers alone gives
    _keep_base_limits(out, type(out)(base_path), st.max_seq_length)
    kept = Encoder(str(out), device="cpu")
    assert (kept.max_length, kept.max_seq_length) == (base.max_length, base.max_seq_length) == (512, 256)
    assert SentenceTransformer(str(out), device="cpu").max_seq_length == 256  # sentence-transformers as before


def test_fused_term_adds_the_served_fused_vector_to_the_loss(trained, tiny, tmp_path):
    """--fused-weight: a third InfoNCE term over the target chunks' unit late + unit naive vectors (what --mode fused
    serves). Same seed and data as the `trained` run: the first step's late and naive terms are that run's, the
    loss is their weighted sum plus the fused term, the fused term falls, and the weights end elsewhere."""
    out = tmp_path / "fused"
    cfg = TrainConfig(out=str(out), dataset=str(_squad(tmp_path)), model=str(tiny), strategy="fixed:size=8",
                      macro_window=32, window_overlap=4, epochs=6, lr=2e-3, batch_size=6, naive_weight=0.5,
                      fused_weight=1.0, device="cpu", seed=0)
    res = train(cfg, progress=False)
    assert len(res.fused_losses) == res.steps == 12 and all(np.isfinite(res.fused_losses))
    assert res.late_losses[0] == pytest.approx(trained.late_losses[0], rel=1e-5)
    assert res.naive_losses[0] == pytest.approx(trained.naive_losses[0], rel=1e-5)
    for total, late, naive, fused in zip(res.losses, res.late_losses, res.naive_losses, res.fused_losses):
        assert total == pytest.approx(late + 0.5 * naive + fused, rel=1e-5)
    assert np.mean(res.fused_losses[-2:]) < 0.8 * np.mean(res.fused_losses[:2])
    record = json.loads((out / "latechunk_train.json").read_text())
    assert record["fused_loss"] == res.fused_losses and record["config"]["fused_weight"] == 1.0
    assert "fused_weight * fused" in record["loss_definition"]
    assert "fused_loss" not in json.loads((trained.out / "latechunk_train.json").read_text())
    from latechunk.encoder import Encoder

    v_plain = Encoder(str(trained.out), device="cpu").encode([TOPICS[1][1][0]])
    v_fused = Encoder(str(out), device="cpu").encode([TOPICS[1][1][0]])
    assert not np.allclose(v_plain, v_fused, atol=1e-4)
    with pytest.raises(ValueError, match="--fused-weight must be a finite number >= 0"):
        TrainConfig(out=str(out), dataset="xquad", fused_weight=-1.0)


def test_fused_targets_line_up_late_and_naive_rows_when_queries_share_a_chunk():
    """Two queries of a batch may share a target chunk: the naive rows are the distinct chunks, the late rows the
    step's candidates; each fused row must sum the same chunk's two views."""
    import torch.nn.functional as F

    from latechunk.train import _fused_targets

    late = torch.randn(6, 4)
    naive = torch.randn(3, 4)
    targets = [4, 1, 4, 2]  # queries 0 and 2 share candidate row 4
    cols = [0, 1, 0, 2]  # ... which is distinct chunk 0
    got = _fused_targets(late, targets, naive, cols)
    want = torch.stack([F.normalize(late[r], dim=0) + F.normalize(naive[c], dim=0)
                        for r, c in ((4, 0), (1, 1), (2, 2))])
    assert got.shape == (3, 4) and torch.allclose(got, want)


def test_ict_naive_and_fused_terms_leave_out_the_other_passages_of_the_source_document(tiny, tmp_path, monkeypatch):
    """Inverse cloze with --fused-weight: the naive and fused terms' softmaxes leave out the other passages of the
    query's own source document (they may hold the held-out sentence), as the late term's does."""
    from latechunk.train import loop as train_mod

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for title, sents in TOPICS:
        (corpus / f"{title}.md").write_text(f"# {title}\n\n" + " ".join(sents * 2) + "\n", encoding="utf-8")
    calls = []
    real = train_mod._info_nce

    def spy(q, c, targets, temperature, exclude=None):
        calls.append(exclude)
        return real(q, c, targets, temperature, exclude)

    monkeypatch.setattr(train_mod, "_info_nce", spy)
    cfg = TrainConfig(out=str(tmp_path / "m"), ict=(str(corpus),), model=str(tiny), strategy="fixed:size=8",
                      macro_window=32, ict_queries=8, batch_size=8, naive_weight=0.5, fused_weight=1.0,
                      device="cpu", seed=0)
    res = train(cfg, progress=False)
    assert res.steps == 1 and len(calls) == 3  # late, naive, fused
    late_ex, naive_ex, fused_ex = calls
    assert late_ex is not None and late_ex.any()
    assert fused_ex is not None and fused_ex.any()  # 8 passages from 3 documents: some share a source
    # the naive term's candidates are the fused term's (the distinct target chunks): the same ones are left out
    assert naive_ex is not None and (naive_ex == fused_ex).all()


def test_saved_files_share_one_mode(trained):
    """Trial finding: model.safetensors was written 0600 while every other file of the folder was 0644."""
    import os

    umask = os.umask(0o022)
    os.umask(umask)
    modes = {p.name: p.stat().st_mode & 0o777 for p in trained.out.rglob("*") if p.is_file()}
    assert set(modes.values()) == {0o666 & ~umask}, modes
    assert not list(trained.out.glob(".latechunk-mode-probe-*"))


def test_ict_log_counts_passages_and_the_documents_they_come_from(tiny, tmp_path):
    """Trial finding: `train --ict` on 3 documents said "8 examples over 8 documents": the passages cut from them."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for title, sents in TOPICS:
        (corpus / f"{title}.md").write_text(f"# {title}\n\n" + " ".join(sents * 2) + "\n", encoding="utf-8")
    lines: list[str] = []
    train(TrainConfig(out=str(tmp_path / "m"), ict=(str(corpus),), model=str(tiny), strategy="fixed:size=8",
                      macro_window=32, ict_queries=8, batch_size=4, epochs=1, device="cpu"), progress=False,
          log=lines.append)
    (line,) = [x for x in lines if " examples over " in x]
    assert line.startswith("8 examples over 8 passages cut from 3 documents ("), line


def test_a_stopped_run_resumes_to_the_model_an_uninterrupted_run_makes(tiny, tmp_path, monkeypatch):
    """Checkpoints every 2 steps; a run stopped after step 5 of 8 (its last checkpoint: step 4, in the middle of the
    second epoch) and resumed ends with the same losses and the same weights as a run that was never stopped; the
    checkpoint is gone afterwards. Without --resume the folder is refused, naming it; other settings too."""
    from safetensors.numpy import load_file

    from latechunk.train import loop as train_mod

    data = _squad(tmp_path)

    def cfg(out, **kw):
        base = {"out": str(out), "dataset": str(data), "model": str(tiny), "strategy": "fixed:size=8",
                "macro_window": 32, "window_overlap": 4, "epochs": 2, "lr": 2e-3, "batch_size": 3, "device": "cpu",
                "seed": 0, "precision": "float32"}
        return TrainConfig(**{**base, **kw})

    whole = train(cfg(tmp_path / "whole"), progress=False, checkpoint_every=2)
    assert whole.steps == 8 and not (tmp_path / "whole" / ".checkpoint").exists()

    class Stop(Exception):
        pass

    def stop_after_5(step):
        if step == 5:
            raise Stop

    monkeypatch.setattr(train_mod, "_after_step", stop_after_5)
    with pytest.raises(Stop):
        train(cfg(tmp_path / "part"), progress=False, checkpoint_every=2)
    monkeypatch.undo()
    assert (tmp_path / "part" / ".checkpoint" / "state.safetensors").is_file()
    with pytest.raises(ValueError, match="checkpoint of a training run that did not finish: --resume"):
        train(cfg(tmp_path / "part"), progress=False)
    with pytest.raises(ValueError, match=r"other settings \(--lr 0.002 there, 0.001 now\)"):
        train(cfg(tmp_path / "part", lr=1e-3), progress=False, resume=True)
    with pytest.raises(ValueError, match="trained with float32 autocast, --dtype bfloat16 gives bfloat16 here"):
        train(cfg(tmp_path / "part", precision="bfloat16"), progress=False, resume=True)
    resumed = train(cfg(tmp_path / "part"), progress=False, checkpoint_every=2, resume=True)
    assert resumed.losses == whole.losses and len(resumed.losses) == 8
    assert resumed.unpooled == whole.unpooled and len(resumed.unpooled) == 8  # the count survives a resume
    assert not (tmp_path / "part" / ".checkpoint").exists()
    a = load_file(str(tmp_path / "whole" / "model.safetensors"))
    b = load_file(str(tmp_path / "part" / "model.safetensors"))
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    record = json.loads((tmp_path / "part" / "latechunk_train.json").read_text())
    assert record["resumed_after_step"] == 4
    with pytest.raises(ValueError, match="holds no checkpoint"):
        train(cfg(tmp_path / "fresh"), progress=False, resume=True)
    with pytest.raises(ValueError, match="this run finished"):
        train(cfg(tmp_path / "part"), progress=False, resume=True)
