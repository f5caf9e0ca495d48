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
    """Wraps ``encoder.model.forward`` and records every ``input_ids`` row sent to the model (``rows``, unpadded)
    and each call's ``input_ids`` shape (``shapes``: rows x padded length)."""

    def __init__(self, encoder: Encoder) -> None:
        self.rows: list[list[int]] = []
        self.shapes: list[tuple[int, int]] = []
        self.calls = 0
        model = encoder.model
        inner = model.forward

        def forward(*args, **kwargs):
            ids = kwargs["input_ids"]
            mask = kwargs.get("attention_mask")
            mask = torch.ones_like(ids) if mask is None else mask
            self.calls += 1
            self.shapes.append(tuple(ids.shape))
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


def save_tiny_remote_code(folder):
    """:func:`save_tiny_bert` as a model that ships its own Python code (``auto_map`` in config.json pointing at
    ``configuration_tiny.py``/``modeling_tiny.py`` in the folder, as jina-embeddings-v2 does on the hub): it loads
    only with ``trust_remote_code=True``."""
    import json
    from pathlib import Path

    folder = save_tiny_bert(folder)
    (Path(folder) / "configuration_tiny.py").write_text(
        "from transformers import BertConfig\n\n\nclass TinyConfig(BertConfig):\n    model_type = 'tiny_custom'\n",
        encoding="utf-8")
    (Path(folder) / "modeling_tiny.py").write_text(
        "from transformers import BertModel\n\nfrom .configuration_tiny import TinyConfig\n\n\n"
        "class TinyModel(BertModel):\n    config_class = TinyConfig\n", encoding="utf-8")
    config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    config.update(model_type="tiny_custom", architectures=["TinyModel"],
                  auto_map={"AutoConfig": "configuration_tiny.TinyConfig", "AutoModel": "modeling_tiny.TinyModel"})
    (Path(folder) / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def save_tiny_pooled(folder, pooling: str = "cls"):
    """:func:`save_tiny_bert` with its sentence-transformers Pooling config set to ``pooling`` (``cls``,
    ``lasttoken``, ``max``, ``mean``), in the older ``pooling_mode_*`` flag format the bundled model uses: a
    model whose own pooling is not mean, for the late-pooling checks (issue 10, fault 7)."""
    import json
    from pathlib import Path

    folder = save_tiny_bert(folder)
    flags = {"cls": "pooling_mode_cls_token", "lasttoken": "pooling_mode_lasttoken", "max": "pooling_mode_max_tokens",
             "mean": "pooling_mode_mean_tokens"}
    cfg = {"word_embedding_dimension": 32, **{flag: name == pooling for name, flag in flags.items()}}
    (Path(folder) / "1_Pooling" / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    return folder


# --- tiny tokenizers of the other two families (BR-023) ------------------------------------------------------

_TOKENIZER_CORPUS = [
    "The quick brown fox jumps over the lazy dog. It rained all day; we stayed in.\n",
    "# Setup\n\nInstall the package.\n\n## Usage\n\nRun it   twice.\n\n```python\nx = load(1)\n```\n",
    "| Part | Unit | Price |\n|---|---|---|\n| bolt | box | 3.50 |\n\n- item one\n- item two\n",
    "Dr. Smith said so, e.g. at 3.14 p.m. in the U.S.\r\n\r\n\tTabs\tand  spaces.\n",
]


@functools.cache
def tiny_fast_tokenizer(kind: str):
    """A tiny fast tokenizer trained here with ``tokenizers`` (vocabulary of a few hundred), wrapped as a
    transformers ``PreTrainedTokenizerFast``, for checks that must hold with any tokenizer family:

    - ``"bpe"``: byte-level BPE as in RoBERTa (``<s> ... </s>``, ``trim_offsets=True``: whitespace-only tokens
      get zero-width offsets);
    - ``"bpe-untrimmed"``: byte-level BPE as in GPT-2 (no trimming: ``" fox"`` covers its space, ``"\\n\\n"`` and
      ``"   "`` are tokens of their own);
    - ``"unigram"``: a SentencePiece-style Unigram model (NFKC, ``▁`` metaspace, ``<s> ... </s>``; newlines and
      tabs are tokens).

    Every character is representable (bytes for BPE, ``<unk>`` for Unigram), so no text loses characters.
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    special = ["<s>", "</s>", "<pad>", "<unk>"]
    if kind in ("bpe", "bpe-untrimmed"):
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=400, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        )
        tok.train_from_iterator(_TOKENIZER_CORPUS, trainer)
        tok.post_processor = processors.RobertaProcessing(("</s>", 1), ("<s>", 0), trim_offsets=kind == "bpe")
    elif kind == "unigram":
        tok = Tokenizer(models.Unigram())
        tok.normalizer = normalizers.NFKC()
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        trainer = trainers.UnigramTrainer(vocab_size=200, special_tokens=special, unk_token="<unk>")
        tok.train_from_iterator(_TOKENIZER_CORPUS, trainer)
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 1)]
        )
    else:
        raise ValueError(f"tiny_fast_tokenizer: unknown kind {kind!r}; kinds are bpe, bpe-untrimmed, unigram")
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>"
    )


@functools.cache
def tiny_document_tokenizer(kind: str):
    """The :class:`~latechunk.tokenize.DocumentTokenizer` of :func:`tiny_fast_tokenizer`; ``"wordpiece"``: the
    bundled MiniLM's."""
    from latechunk.tokenize import DocumentTokenizer

    if kind == "wordpiece":
        return DocumentTokenizer.from_pretrained(resolve_model_path(None))
    return DocumentTokenizer(tiny_fast_tokenizer(kind))
