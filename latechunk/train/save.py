"""The trained model folder: the base model's input limits kept, and the usual file modes.

Tests: ``tests/train/test_train.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def _keep_base_limits(out: Path, base: Path, max_seq_length: int | None) -> None:
    """Give the saved model its base's input limit and ``max_seq_length`` back.

    sentence-transformers 6 saves ``max_seq_length`` as the tokenizer's ``model_max_length`` and no longer in
    ``sentence_bert_config.json``, so a model trained from all-MiniLM-L6-v2 read back with an input limit of 256
    tokens (the base: 512) and no ``max_seq_length``: ``search`` over an index built with the base model failed
    with "max_length=512 exceeds the model's limit of 256 tokens". The base's ``model_max_length`` goes back into
    ``tokenizer_config.json`` and ``max_seq_length`` into ``sentence_bert_config.json``, which
    sentence-transformers reads first (it then caps its tokenizer at that length, as for the base model).
    """
    tok_path, sb_path = out / "tokenizer_config.json", out / "sentence_bert_config.json"
    try:
        base_mml = json.loads((base / "tokenizer_config.json").read_text(encoding="utf-8")).get("model_max_length")
    except (OSError, ValueError):
        base_mml = None
    if isinstance(base_mml, int) and tok_path.is_file():
        tok = json.loads(tok_path.read_text(encoding="utf-8"))
        tok["model_max_length"] = base_mml
        tok_path.write_text(json.dumps(tok, indent=2) + "\n", encoding="utf-8")
    if isinstance(max_seq_length, int) and sb_path.is_file():
        sb = json.loads(sb_path.read_text(encoding="utf-8"))
        sb["max_seq_length"] = max_seq_length
        sb_path.write_text(json.dumps(sb, indent=4) + "\n", encoding="utf-8")


def _usual_file_modes(out: Path) -> None:
    """Give every file of the saved folder the mode a new file gets here (``0666`` less the umask: ``0644`` under
    umask 022). safetensors writes ``model.safetensors`` ``0600`` (a private temp file renamed), while every other
    file of the folder is ``0644``: a model folder shared with other users or served read it as unreadable."""
    probe = out / f".latechunk-mode-probe-{os.getpid()}"
    probe.touch()  # the mode open() gives a new file under this process's umask (os.umask would set it, racily)
    mode = probe.stat().st_mode & 0o777
    probe.unlink()
    for path in out.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.stat().st_mode & 0o777 != mode:
            path.chmod(mode)
