"""Safety: no pickle in the package, weights through safetensors where the model has them, remote code only on
an explicit flag and with a warning."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from latechunk.encoder import Encoder
from latechunk.models import LoadedModel, resolve_model_path
from tests.models import minilm_loaded, tiny_bert

REPO = Path(__file__).resolve().parents[2]
CHECKED = ("latechunk", "kernels", "scripts", "eval")


def _sources():
    for folder in CHECKED:
        yield from sorted((REPO / folder).rglob("*.py"))


# The one exception: the Ray engine hands its own in-memory objects (input items, prepared groups, the run's
# config) between the processes of one job as pickled bytes, as Ray itself does for any Python object. It never
# reads or writes a pickle file: no `pickle.load(`/`pickle.dump(` (file forms) even there.
IN_MEMORY_PICKLE = {"latechunk/ingest/ray_engine.py"}


def test_no_pickle_anywhere_in_the_code():
    bad = []
    for f in _sources():
        rel = f.relative_to(REPO).as_posix()
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if rel in IN_MEMORY_PICKLE:
                if re.search(r"\bpickle\.(load|dump)\(|\btorch\.load\(|allow_pickle\s*=\s*True|\bjoblib\b", code):
                    bad.append(f"{rel}:{i}: {line.strip()} (file pickle)")
                continue
            if re.search(r"\bimport pickle\b|\bpickle\.|\btorch\.load\(|allow_pickle\s*=\s*True|\bjoblib\b", code):
                bad.append(f"{f.relative_to(REPO)}:{i}: {line.strip()}")
            if re.search(r"\bnp\.load\(", code) and "allow_pickle=False" not in code:
                bad.append(f"{f.relative_to(REPO)}:{i}: np.load without allow_pickle=False")
    assert not bad, "\n".join(bad)


class _Recorder:
    def __init__(self):
        self.kwargs = []

    def __call__(self, path, **kwargs):
        self.kwargs.append(kwargs)
        return tiny_bert(layers=1, heads=2)


def _model_folder(tmp_path: Path, weights: str) -> Path:
    src = Path(resolve_model_path(None))
    folder = tmp_path / "m"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        (folder / name).write_bytes((src / name).read_bytes())
    (folder / weights).write_bytes(b"not read in this test")
    return folder


def test_weights_load_through_safetensors_when_present(tmp_path, monkeypatch):
    import transformers

    rec = _Recorder()
    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", rec)
    folder = _model_folder(tmp_path, "model.safetensors")
    (folder / "pytorch_model.bin").write_bytes(b"a pickle that must never be opened")
    LoadedModel.load(str(folder))
    assert rec.kwargs and all(k["use_safetensors"] is True for k in rec.kwargs)
    assert all(k["trust_remote_code"] is False for k in rec.kwargs)


def test_bin_only_model_loads_with_a_warning(tmp_path, monkeypatch, caplog):
    import transformers

    rec = _Recorder()
    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", rec)
    folder = _model_folder(tmp_path, "pytorch_model.bin")
    with caplog.at_level(logging.WARNING, logger="latechunk"):
        LoadedModel.load(str(folder))
    assert rec.kwargs[-1]["use_safetensors"] is False
    assert "no safetensors weights" in caplog.text


def test_bundled_model_is_safetensors():
    folder = Path(resolve_model_path(None))
    assert (folder / "model.safetensors").is_file()
    assert not list(folder.glob("*.bin")) and not list(folder.glob("*.pkl"))


def test_remote_code_only_on_explicit_flag_with_a_warning(tmp_path, monkeypatch):
    import inspect

    import transformers

    loaded = minilm_loaded()  # before from_pretrained is replaced: the shared cached MiniLM must stay the real one
    rec = _Recorder()
    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", rec)
    folder = _model_folder(tmp_path, "model.safetensors")
    with pytest.warns(UserWarning, match="trust_remote_code"):
        LoadedModel.load(str(folder), trust_remote_code=True)
    assert rec.kwargs and all(k["trust_remote_code"] is True for k in rec.kwargs)
    with pytest.raises(ValueError, match="already loaded"):  # remote code only ever runs when loading
        Encoder(loaded, device="cpu", trust_remote_code=True)
    for fn in (Encoder, LoadedModel.load):
        assert inspect.signature(fn).parameters["trust_remote_code"].default is False
    from latechunk import cli

    assert inspect.signature(cli.embed).parameters["trust_remote_code"].default is False
