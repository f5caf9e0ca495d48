"""Model builders for tests: the bundled all-MiniLM-L6-v2 (offline) and tiny random-weight models from configs."""

from __future__ import annotations

import functools

import torch

from latechunk.encoder import Encoder
from latechunk.models import LoadedModel, ModelSettings, resolve_model_path


@functools.lru_cache(maxsize=1)
def minilm_parts():
    from transformers import AutoModel, AutoTokenizer

    path = resolve_model_path(None)
    return AutoModel.from_pretrained(path), AutoTokenizer.from_pretrained(path), ModelSettings.read(path)


def minilm_loaded() -> LoadedModel:
    """A fresh :class:`LoadedModel` around a copy of the (shared, read-only) bundled MiniLM weights."""
    import copy

    model, tok, settings = minilm_parts()
    return LoadedModel("all-MiniLM-L6-v2", copy.deepcopy(model), tok, settings)


def minilm_encoder(**kwargs) -> Encoder:
    """A fresh Encoder around the (shared, read-only) bundled MiniLM weights; ``kwargs`` go to :class:`Encoder`."""
    return Encoder(minilm_loaded(), device="cpu", **kwargs)


def tiny_modernbert(max_positions: int = 8192, hidden: int = 32, layers: int = 2) -> torch.nn.Module:
    """A random-weight ModernBERT with ``max_positions`` positions and the BERT uncased vocabulary."""
    from transformers import ModernBertConfig, ModernBertModel

    torch.manual_seed(0)
    cfg = ModernBertConfig(
        vocab_size=30522, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
        num_attention_heads=4, max_position_embeddings=max_positions, pad_token_id=0, cls_token_id=101,
        sep_token_id=102, bos_token_id=101, eos_token_id=102, local_attention=64, global_attn_every_n_layers=2,
    )
    return ModernBertModel(cfg).eval()


def tiny_modernbert_encoder(max_positions: int = 8192, **kwargs) -> Encoder:
    _, tok, _ = minilm_parts()
    import copy

    tok = copy.deepcopy(tok)
    tok.model_max_length = max_positions
    loaded = LoadedModel("tiny-modernbert", tiny_modernbert(max_positions), tok, ModelSettings(pooling="mean", normalize=True))
    return Encoder(loaded, device="cpu", **kwargs)


class ForwardRecorder:
    """Wraps ``encoder.model.forward`` and records every ``input_ids`` row sent to the model."""

    def __init__(self, encoder: Encoder) -> None:
        self.rows: list[list[int]] = []
        self.calls = 0
        model = encoder.model
        inner = model.forward

        def forward(*args, **kwargs):
            ids = kwargs["input_ids"]
            mask = kwargs.get("attention_mask")
            mask = torch.ones_like(ids) if mask is None else mask
            self.calls += 1
            for r, m in zip(ids.tolist(), mask.tolist()):
                self.rows.append(r[: sum(m)])
            return inner(*args, **kwargs)

        model.forward = forward


def tiny_bert(hidden: int = 32, layers: int = 2, heads: int = 4) -> torch.nn.Module:
    """A random-weight BERT (seed 0) with the uncased vocabulary and 512 positions, in eval mode."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                     intermediate_size=2 * hidden, max_position_embeddings=512)
    return BertModel(cfg).eval()


def save_tiny_bert(folder, hidden: int = 32, layers: int = 2):
    """Write :func:`tiny_bert` as a model folder with safetensors weights, the bundled MiniLM tokenizer and its
    sentence-transformers settings: a fast stand-in for ``--model PATH``."""
    import shutil
    from pathlib import Path

    folder = Path(folder)
    tiny_bert(hidden, layers).save_pretrained(folder, safe_serialization=True)
    src = Path(resolve_model_path(None))
    for f in src.iterdir():
        if f.name in ("config.json", "model.safetensors", "README.md") or f.suffix in (".bin", ".onnx"):
            continue
        if f.is_dir():
            shutil.copytree(f, folder / f.name, dirs_exist_ok=True)
        else:
            shutil.copy2(f, folder / f.name)
    return folder
