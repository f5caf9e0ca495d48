"""scripts/bench_peers.py (issue 15 part 1): a dry run on a tiny model and two small documents writes the table."""

from __future__ import annotations

import pytest

pytest.importorskip("chonkie")
pytest.importorskip("sentence_transformers")

from tests.models import save_tiny_bert
from tests.scripts import load_script


def _script():
    return load_script("bench_peers")


def _dry_run(tmp_path, *extra):
    bench = _script()
    data = tmp_path / "corpora"
    data.mkdir()
    (data / "a.md").write_text("# Alpha\n\n" + "Late chunking pools token states per chunk. " * 60, encoding="utf-8")
    (data / "b.md").write_text("Short document.\nSecond line of it.\n", encoding="utf-8")
    model = save_tiny_bert(tmp_path / "tiny")
    out = tmp_path / "peers.md"
    res = bench.main(["--data", str(data), "--corpora", "a", "b", "--fraction", "1", "--model", str(model),
                      "--rounds", "1", "--batch-sizes", "2", "--window", "128", "--overlap", "0",
                      "--strategy", "fixed:size=32", "--out", str(out), "--note", "dry run", *extra])
    return res, out.read_text(encoding="utf-8")


def test_dry_run_writes_every_system(tmp_path):
    res, text = _dry_run(tmp_path)  # conftest pins LATECHUNK_CPU_DTYPE=float32: every system in fp32
    for name in ("raw model(...) bs=2", "latechunk late", "latechunk late x5", "latechunk naive",
                 "chonkie LateChunker", "st naive (same spans)"):
        assert f"| {name} | float32 |" in text
        assert res["median_s"][name] > 0
    assert res["dtype"] == "float32" and set(res["dtypes"].values()) == {"float32"}
    assert "bf16" not in " ".join(res["median_s"])  # no fairness rows when latechunk runs fp32
    assert "macro window 128, overlap 0" in text and "note: dry run" in text
    assert 0 <= res["padding"] < 1
    assert res["model_tokens"] >= res["corpus_tokens"]  # every token once, plus frames of extra windows
    assert "Targets (issue 15, CPU):" in text and len(res["targets"]) == 4
    assert res["corpus_tokens"] > 3 * 128  # a.md needs several 128-token windows


def test_a_bf16_default_adds_the_peers_in_bf16_and_judges_against_chonkie_at_its_default(tmp_path, monkeypatch):
    """latechunk's CPU default is bf16 where the CPU has AMX: its rows say bfloat16, the peers stay at their fp32
    defaults, and fairness rows run the raw forward (fp32, bf16, bf16 autocast), chonkie (under autocast: it cannot
    take a bf16 model) and sentence-transformers in bf16; the targets stay against chonkie at fp32, plus two
    lines against chonkie in bf16."""
    monkeypatch.setenv("LATECHUNK_CPU_DTYPE", "bfloat16")
    res, text = _dry_run(tmp_path, "--skip", "latechunk naive")
    rows = {"raw model(...) bf16 bs=2": "bfloat16", "raw model(...) fp32 bs=2": "float32",
            "raw model(...) bf16 autocast bs=2": "bfloat16 (autocast)", "latechunk late": "bfloat16",
            "latechunk late x5": "bfloat16", "chonkie LateChunker": "float32",
            "chonkie LateChunker bf16 (autocast)": "bfloat16 (autocast)", "st naive (same spans)": "float32",
            "st naive (same spans) bf16": "bfloat16"}
    assert res["dtypes"] == rows and res["dtype"] == "bfloat16"
    for name, dtype in rows.items():
        assert f"| {name} | {dtype} |" in text
        assert res["median_s"][name] > 0
    assert "latechunk naive" not in res["median_s"]  # --skip still works
    assert "vs raw: against `raw model(...) bf16 bs=2`" in text and "latechunk bfloat16" in text
    med = res["median_s"]
    first = res["targets"][0]
    assert first.startswith(f"latechunk late (bfloat16) vs chonkie LateChunker (speed): "
                            f"{med['chonkie LateChunker'] / med['latechunk late']:.2f}x, target >= 1.2x")
    assert len(res["targets"]) == 6 and "no target" in res["targets"][4] and "no target" in res["targets"][5]
    assert f"{med['chonkie LateChunker bf16 (autocast)'] / med['latechunk late']:.2f}x" in res["targets"][4]


def test_raw_rows_cover_the_corpus_once():
    bench = _script()
    from latechunk.tokenize import DocumentTokenizer
    from latechunk.types import Document
    from tests.models import minilm_parts

    tok = DocumentTokenizer(minilm_parts()[1])(Document("d", "word " * 300))
    rows = bench.raw_rows([tok], 128)
    assert all(len(r) <= 128 for r in rows)
    assert sum(len(r) - 2 for r in rows) == tok.n_content  # no overlap, nothing dropped


def test_targets_are_judged_plainly():
    bench = _script()
    med = {"raw": 10.0, "latechunk late": 10.0, "latechunk late x5": 10.5, "chonkie LateChunker": 11.0}
    lines = bench.targets(med, "raw")
    assert lines[0].startswith("latechunk late vs chonkie LateChunker (speed): 1.10x, target >= 1.2x: NOT met")
    assert len(lines) == 4
    assert "5.24x, target >= 5x: met" in lines[1]
    assert "1.05x, target <= 1.1x: met" in lines[2]
    assert "1.00x, target >= 0.95x: met" in lines[3]
    assert bench.targets({"latechunk late": 1.0}, "raw") == []  # nothing to judge without the peers
    # with chonkie in bf16 too: the targets stay against chonkie's default, two lines more without a target
    lines = bench.targets(med | {"chonkie LateChunker bf16 (autocast)": 5.0}, "raw", "bfloat16")
    assert lines[0].startswith("latechunk late (bfloat16) vs chonkie LateChunker (speed): 1.10x")
    assert lines[3].startswith("latechunk late vs the raw forward (bfloat16) (speed): 1.00x")
    assert lines[4].endswith("(speed, same dtype, no target: the part that is not the dtype): 0.50x")
    assert lines[5].endswith("run once per strategy (speed, no target): 2.38x")


@pytest.mark.slow  # inductor compiles the tiny BERT's few batch shapes: ~30 s on 2 cores; the default run has the dry run
def test_compile_adds_a_compiled_row_and_its_warm_up_time(tmp_path):
    res, text = _dry_run(tmp_path, "--compile", "--skip", "latechunk late x5", "latechunk naive",
                         "st naive (same spans)")
    assert "| latechunk late compiled | float32 (torch.compile) |" in text
    assert res["median_s"]["latechunk late compiled"] > 0
    line = next(t for t in res["targets"] if t.startswith("torch.compile: warm-up pass"))
    assert "x latechunk late (eager)" in line and "x chonkie" in line


def test_budgets_add_one_row_each_and_latechunk_runs_its_default_budget(tmp_path):
    """issue 15: latechunk runs its own default token budget (not the best raw batch), and --budgets adds a row per
    budget, sharing the loaded model."""
    from latechunk.encoder import CPU_BATCH_TOKENS

    res, text = _dry_run(tmp_path, "--budgets", "64,512", "--skip", "latechunk late x5", "latechunk naive",
                         "chonkie LateChunker", "st naive (same spans)")
    assert res["batch_tokens"] == CPU_BATCH_TOKENS and f"latechunk batch_tokens {CPU_BATCH_TOKENS}" in text
    for b in (64, 512):
        assert f"| latechunk late bt={b} | float32 |" in text and res["median_s"][f"latechunk late bt={b}"] > 0
    (tmp_path / "best").mkdir()
    (tmp_path / "bad").mkdir()
    res, text = _dry_run(tmp_path / "best", "--batch-tokens", "best", "--skip", "latechunk late x5",
                         "latechunk naive", "chonkie LateChunker", "st naive (same spans)")
    assert res["batch_tokens"] == 2 * 128  # --batch-sizes 2 x --window 128
    with pytest.raises(SystemExit):
        _dry_run(tmp_path / "bad", "--budgets", "64,x")


def test_stock_linear_adds_a_row_and_a_ratio_line(tmp_path):
    """--stock-linear: the same encoder's model with onednn_linear=False beside the default (oneDNN linear on in
    fp32 where the operator works), and one line giving the ratio."""
    from latechunk.encoder import onednn_linear_available

    res, text = _dry_run(tmp_path, "--stock-linear", "--skip", "latechunk late x5", "latechunk naive",
                         "st naive (same spans)")
    assert "| latechunk late stock linear | float32 (BLAS addmm) |" in text
    assert res["median_s"]["latechunk late stock linear"] > 0
    assert f"oneDNN linear {'on' if onednn_linear_available() else 'off'}" in text
    line = res["targets"][-1]
    med = res["median_s"]
    assert line == (f"oneDNN linear: latechunk late {med['latechunk late stock linear'] / med['latechunk late']:.2f}x "
                    "itself with PyTorch's stock linear (BLAS addmm)")


def test_stock_linear_adds_nothing_where_the_onednn_linear_is_off(tmp_path, monkeypatch):
    """Review: with the oneDNN linear off (here by $LATECHUNK_ONEDNN_LINEAR=0; bf16 and Arm likewise) the extra row
    was the same path labelled "BLAS addmm", and its ratio line claimed a comparison."""
    monkeypatch.setenv("LATECHUNK_ONEDNN_LINEAR", "0")
    res, text = _dry_run(tmp_path, "--stock-linear", "--skip", "latechunk late x5", "latechunk naive",
                         "st naive (same spans)")
    assert "latechunk late stock linear" not in text and "latechunk late stock linear" not in res["median_s"]
    assert "oneDNN linear off" in text and not any("oneDNN linear:" in t for t in res["targets"])
