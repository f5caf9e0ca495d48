"""Regression tests: BOM-marked text inputs (UTF-8/16/32), the macro-window minimum, failing fast on an
unreachable Hugging Face hub, and the removal of stale pickle files from the dataset cache."""

from __future__ import annotations

import codecs
import http.server
import json
import logging
import shutil
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from latechunk import encoder as encoder_mod
from latechunk.cli import app
from latechunk.encoder import MIN_WINDOW_CONTENT_TOKENS, Encoder, hub_reachable, resolve_model_path
from latechunk.io import iter_inputs, read_text_file
from latechunk.types import Document, Skipped
from tests.models import minilm_encoder

TEXT = "Caf\u00e9 cr\u00e8me \u2014 \u65e5\u672c\u8a9e.\r\nThe river Nile flows north.\n\nSecond paragraph here.\n"
BOMS = {
    "utf-8": codecs.BOM_UTF8,
    "utf-16-le": codecs.BOM_UTF16_LE,
    "utf-16-be": codecs.BOM_UTF16_BE,
    "utf-32-le": codecs.BOM_UTF32_LE,
    "utf-32-be": codecs.BOM_UTF32_BE,
}
CLOSED_ENDPOINT = "http://127.0.0.1:9"  # the discard port: nothing listens, the connection is refused


def _run(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


# --------------------------------------------------------------------------- 1. BOM-marked inputs
@pytest.mark.parametrize("codec", sorted(BOMS))
def test_bom_text_file_is_decoded_without_its_bom(tmp_path, codec):
    f = tmp_path / f"{codec}.txt"
    f.write_bytes(BOMS[codec] + TEXT.encode(codec))
    text, reason = read_text_file(f)
    assert reason == "" and text == TEXT  # BOM gone, no newline translation
    (item,) = list(iter_inputs([f]))
    assert isinstance(item, Document) and item.text == TEXT


@pytest.mark.parametrize(
    "data,needle",
    [
        (b"\x00\x01\x02binary", "NUL bytes"),
        ("plain UTF-16 without a mark".encode("utf-16-le"), "byte-order mark"),
        (codecs.BOM_UTF16_LE + b"a\x00\x00\xd8b\x00", "not valid UTF-16LE"),  # a lone surrogate
        (codecs.BOM_UTF16_LE + b"a\x00b", "not valid UTF-16LE"),  # odd length: truncated
        (codecs.BOM_UTF32_BE + b"\x00\x11\x00\x00", "not valid UTF-32BE"),  # beyond U+10FFFF
        (codecs.BOM_UTF16_BE + "abc\x00def".encode("utf-16-be"), "NUL characters"),
        (codecs.BOM_UTF16_LE + bytes(range(0xE0, 0xF8)) * 8, "non-text"),  # private-use code points
    ],
)
def test_binary_files_are_still_skipped_with_a_reason(tmp_path, data, needle):
    f = tmp_path / "x.txt"
    f.write_bytes(data)
    text, reason = read_text_file(f)
    assert text is None and "binary" in reason and needle in reason
    (item,) = list(iter_inputs([f]))
    assert isinstance(item, Skipped) and item.reason == reason


def test_jsonl_with_a_bom_keeps_its_first_line(tmp_path):
    lines = '{"id": "a", "text": "first doc"}\r\n{"id": "b", "text": "second \u00e9"}\n'
    (tmp_path / "u8.jsonl").write_bytes(codecs.BOM_UTF8 + lines.encode("utf-8"))
    (tmp_path / "u16.jsonl").write_bytes(codecs.BOM_UTF16_LE + lines.replace('"a"', '"c"').replace('"b"', '"d"')
                                         .encode("utf-16-le"))
    (tmp_path / "bad16.jsonl").write_bytes(codecs.BOM_UTF16_BE + b"\xdc\x00\x00a")
    items = list(iter_inputs([tmp_path]))
    docs = {i.doc_id: i.text for i in items if isinstance(i, Document)}
    assert docs == {"a": "first doc", "b": "second \u00e9", "c": "first doc", "d": "second \u00e9"}
    (bad,) = [i for i in items if isinstance(i, Skipped)]
    assert bad.source == "bad16.jsonl:1" and "UTF-16BE" in bad.reason


def test_utf16_file_is_embedded_and_verifies(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "le.md").write_bytes(codecs.BOM_UTF16_LE + ("# Rivers\n\n" + TEXT).encode("utf-16-le"))
    (src / "be.txt").write_bytes(codecs.BOM_UTF16_BE + ("Bread rises. " + TEXT).encode("utf-16-be"))
    (src / "bin.txt").write_bytes(codecs.BOM_UTF16_LE + b"a\x00\x00\xd8")
    out = tmp_path / "out"
    res = _run("embed", src, "--out", out, "--device", "cpu", "--quiet", "--strategy", "fixed:size=16")
    assert res.exit_code == 0, res.output
    m = json.loads((out / "manifest.json").read_text())
    assert {d["doc_id"] for d in m["documents"]} == {"le.md", "be.txt"}
    assert [(s["doc_id"], "binary" in s["reason"]) for s in m["skipped"]] == [("bin.txt", True)]
    assert m["counts"]["documents_in"] == 3
    assert _run("verify", out).exit_code == 0


# --------------------------------------------------------------------------- 2. macro-window minimum
def test_window_too_small_for_frame_and_content_is_rejected():
    n_frame = 2  # [CLS] ... [SEP]
    minimum = n_frame + MIN_WINDOW_CONTENT_TOKENS
    for bad in (3, minimum - 1):
        with pytest.raises(ValueError, match=rf"window={bad} is too small: the minimum is {minimum} tokens"):
            minilm_encoder(window=bad)
    enc = minilm_encoder(window=minimum)
    assert enc.window == minimum and 0 <= enc.window_overlap < MIN_WINDOW_CONTENT_TOKENS
    with pytest.raises(ValueError, match=rf"window_overlap={MIN_WINDOW_CONTENT_TOKENS} must be >= 0 and < 16"):
        minilm_encoder(window=minimum, window_overlap=MIN_WINDOW_CONTENT_TOKENS)
    with pytest.raises(ValueError, match="max_length=10 is too small"):
        minilm_encoder(max_length=10)
    tok = enc.tokenizer("A short text about rivers.")
    with pytest.raises(ValueError, match=rf"window=5 is too small: the minimum is {minimum}"):
        enc.token_states([tok], window=5)


def test_window_minimum_counts_the_prompt():
    enc = minilm_encoder(document_prompt="search_document: ")
    n_frame = enc.tokenizer.n_frame
    assert n_frame > 2
    with pytest.raises(ValueError, match=rf"minimum is {n_frame + MIN_WINDOW_CONTENT_TOKENS} tokens"):
        minilm_encoder(document_prompt="search_document: ", window=n_frame + MIN_WINDOW_CONTENT_TOKENS - 1)


def test_cli_rejects_a_tiny_window_before_work(tmp_path):
    src = tmp_path / "a.md"
    src.write_text("Some text about rivers and the sea.\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["embed", str(src), "--out", str(tmp_path / "o"), "--device", "cpu", "--window", "3"])
    assert res.exit_code != 0 and "window=3" in res.output and "minimum" in res.output
    assert not (tmp_path / "o" / "manifest.json").exists()


# --------------------------------------------------------------------------- 3. hub model ids offline
@pytest.fixture
def fresh_probe(monkeypatch):
    """No remembered probe answers, no offline flag from the environment."""
    monkeypatch.setattr(encoder_mod, "_hub_probes", {})
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.delenv(encoder_mod.HUB_PROBE_ENV_VAR, raising=False)
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


def _assert_fast_clear_failure(name: str, max_s: float = 30.0) -> str:
    t0 = time.monotonic()
    with pytest.raises(ValueError) as info:
        Encoder(name, device="cpu")
    elapsed = time.monotonic() - t0
    msg = str(info.value)
    assert elapsed < max_s, f"took {elapsed:.1f} s"
    assert repr(name) in msg and "not a local path" in msg and "HF_HUB_OFFLINE" in msg
    return msg


def test_unreachable_hub_fails_fast_naming_the_model(fresh_probe, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_ENDPOINT", CLOSED_ENDPOINT)
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty_cache"))
    msg = _assert_fast_clear_failure("jinaai/jina-embeddings-v2-small-en")
    assert "could not be reached" in msg and CLOSED_ENDPOINT in msg


def test_real_hub_unreachable_here_fails_fast(fresh_probe, monkeypatch, tmp_path):
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    if hub_reachable():
        pytest.skip("the Hugging Face hub is reachable from this machine")
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty_cache"))
    _assert_fast_clear_failure("jinaai/jina-embeddings-v2-small-en")


def test_offline_flag_fails_fast_for_an_uncached_model(fresh_probe, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(encoder_mod, "hub_reachable", lambda *a, **k: pytest.fail("probed while offline"))
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty_cache"))
    msg = _assert_fast_clear_failure("acme/not-cached", max_s=5.0)
    assert "HF_HUB_OFFLINE is set" in msg


def _fake_hub_cache(root: Path, repo_id: str) -> Path:
    """A Hugging Face cache holding the bundled MiniLM under ``repo_id`` (as huggingface_hub lays it out)."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = root / ("models--" + repo_id.replace("/", "--"))
    snap = repo / "snapshots" / commit
    shutil.copytree(resolve_model_path(None), snap)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return snap


@pytest.mark.parametrize("offline", [False, True])
def test_cached_hub_model_loads_without_the_hub(fresh_probe, monkeypatch, tmp_path, offline):
    monkeypatch.setenv("HF_ENDPOINT", CLOSED_ENDPOINT)
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from huggingface_hub import constants

    snap = _fake_hub_cache(tmp_path / "hub", "acme/mini-lm")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    t0 = time.monotonic()
    enc = Encoder("acme/mini-lm", device="cpu")
    assert time.monotonic() - t0 < 30
    assert enc.name == "acme/mini-lm" and Path(enc.path) == snap and enc.dim == 384
    assert enc.settings.normalize is True and len(enc.model_hash) == 64


def test_reachable_hub_keeps_the_id(fresh_probe, monkeypatch):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
        assert resolve_model_path("acme/some-model") == "acme/some-model"
    finally:
        server.shutdown()
        server.server_close()


def test_local_paths_and_default_model_never_probe(fresh_probe, monkeypatch):
    monkeypatch.setattr(encoder_mod, "hub_reachable", lambda *a, **k: pytest.fail("probed for a local model"))
    folder = resolve_model_path(None)
    assert Path(folder).is_dir() and resolve_model_path(folder) == folder


# --------------------------------------------------------------------------- 4. stale pickles in the cache
def test_dataset_cache_removes_stale_pickles(tmp_path, monkeypatch, caplog):
    from eval.cache import load_cached

    squad = tmp_path / "tiny_squad.json"
    ctx = "The Nile flows north. The Amazon is wide."
    squad.write_text(json.dumps({"version": "1.1", "data": [{"title": "rivers", "paragraphs": [{
        "context": ctx,
        "qas": [{"id": "q1", "question": "Which way does the Nile flow?",
                 "answers": [{"text": "north", "answer_start": ctx.index("north")}]}]}]}]}), encoding="utf-8")
    cache = tmp_path / "lc"
    folder = cache / "datasets"
    folder.mkdir(parents=True)
    for name in ("0a1b.pkl", "old-dataset.pkl"):
        (folder / name).write_bytes(b"\x80\x04not to be unpickled")
    (folder / "notes.txt").write_text("kept")
    monkeypatch.setenv("LATECHUNK_CACHE", str(cache))
    with caplog.at_level(logging.INFO, logger="latechunk.eval"):
        ds, info = load_cached(squad)
    assert not list(folder.glob("*.pkl")) and (folder / "notes.txt").is_file()
    assert Path(info["cache_file"]).parent == folder and Path(info["cache_file"]).is_file()
    lines = [r.getMessage() for r in caplog.records if "pickle" in r.getMessage()]
    assert len(lines) == 1 and "removed 2" in lines[0]
    assert len(ds.queries) == 1
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="latechunk.eval"):
        _, again = load_cached(squad)
    assert again["cache_hit"] and not [r for r in caplog.records if "pickle" in r.getMessage()]
