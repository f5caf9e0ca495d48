"""The sentence-transformers face of an :class:`~latechunk.encoder.Encoder`: ``encode``, ``encode_query``,
``encode_document``, ``prompts``, ``default_prompt_name`` (:class:`SentenceTransformerEncode`, a base class of
the Encoder), so code written for a ``SentenceTransformer`` can take an Encoder.

Tests: ``tests/encoder/test_encoder.py``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from latechunk.tokenize import DocumentTokenizer

if TYPE_CHECKING:
    from latechunk.macro_window import MacroWindow

PROMPT_NAMES = ("query", "document")
"""The prompt names every encoder has (:attr:`Encoder.prompts`; sentence-transformers' ``prompt_name``); a model's
sentence-transformers config may define more; ``None`` = no prompt."""


class SentenceTransformerEncode:
    """sentence-transformers' ``encode`` API over an encoder's token states (a base class of
    :class:`~latechunk.encoder.Encoder`, which gives it ``settings``, ``path``, the tokenizers, ``dim``,
    ``max_length``, :meth:`~latechunk.encoder.Encoder.macro_window`, :meth:`~latechunk.encoder.Encoder.token_states`
    and :meth:`~latechunk.encoder.Encoder.pool_model`)."""

    # ------------------------------------------------------------------ prompts (sentence-transformers names)
    @functools.cached_property
    def prompts(self) -> dict[str, str]:
        """The model's prompts by name, as sentence-transformers' ``SentenceTransformer.prompts``: every prompt of
        its ``config_sentence_transformers.json`` (a local folder's; ``{}`` where there is none), with ``query``
        and ``document`` always present and set to the prompts this encoder uses (the model's own, or the
        constructor's overrides; ``""`` where none).

        Returns:
            ``{prompt name: prompt text}``.
        """
        own = _st_config(self.path).get("prompts")
        found = {str(k): v for k, v in own.items() if isinstance(v, str)} if isinstance(own, dict) else {}
        return {**found, "query": self.query_tokenizer.prefix, "document": self.tokenizer.prefix}

    @property
    def default_prompt_name(self) -> str | None:
        """The prompt :meth:`encode` uses when given none (sentence-transformers' ``default_prompt_name``, from
        the model's ``config_sentence_transformers.json``); ``None`` where the model sets none."""
        name = _st_config(self.path).get("default_prompt_name")
        return name if isinstance(name, str) and name in self.prompts else None

    def _prompt_tokenizer(self, prompt_name: str | None, prompt: str | None) -> DocumentTokenizer:
        """The tokenizer that puts a prompt in the lead frame: ``prompt`` itself when given, else the prompt
        named ``prompt_name`` (else :attr:`default_prompt_name`, else none)."""
        if prompt is not None:
            if not isinstance(prompt, str):
                raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
            text = prompt
        else:
            name = prompt_name if prompt_name is not None else self.default_prompt_name
            if name is None:
                return self.plain_tokenizer
            if name == "query":
                return self.query_tokenizer
            if name == "document":
                return self.tokenizer
            if name not in self.prompts:
                others = "".join(f", {n!r}" for n in sorted(self.prompts) if n not in PROMPT_NAMES)
                raise ValueError(f"prompt_name must be None, 'query' or 'document'{others}, got {name!r} (the "
                                 "prompts of the model's sentence-transformers config)")
            text = self.prompts[name]
        cache = self.__dict__.setdefault("_prompt_tokenizers", {})
        if text not in cache:
            cache[text] = DocumentTokenizer(self.hf_tokenizer, prefix=text)
        return cache[text]

    # ------------------------------------------------------------------ naive / query encoding
    def encode(
        self,
        texts: str | Sequence[str],
        prompt_name: str | None = None,
        prompt: str | None = None,
        batch_size: int | None = None,
        show_progress_bar: bool | None = None,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        normalize_embeddings: bool | None = None,
        *,
        normalize: bool | None = None,
        progress: bool = False,
        macro_window: MacroWindow | None = None,
    ):
        """Encode texts each on its own with the model's pooling: sentence-transformers' ``encode``.

        Each text is one input ``[lead frame with the prompt] + text + [trail frame]``, pooled as the model's
        sentence-transformers Pooling does (:meth:`pool_model`). Unlike sentence-transformers, a text longer than
        :attr:`max_length` is never truncated: it goes through macro windows (its token states stitched, then
        pooled), so a text within ``max_seq_length`` gives sentence-transformers' vector and a longer one the
        pooling of all its tokens.

        Args:
            texts: One text (then one vector comes back) or a sequence of texts.
            prompt_name: A prompt name of :attr:`prompts` (``"query"``, ``"document"``, or another the model's
                sentence-transformers config defines); ``None``: :attr:`default_prompt_name` (none for most
                models: no prompt).
            prompt: A prompt text, used instead of ``prompt_name`` (as in sentence-transformers).
            batch_size: Accepted for sentence-transformers compatibility; forward batches are formed by the token
                budget ``batch_tokens`` instead (length-sorted), which never changes a vector.
            show_progress_bar: Show a progress bar (tokens); alias of ``progress``.
            convert_to_numpy: Return a numpy array (default); False (and not ``convert_to_tensor``): a list of
                (dim,) float32 CPU tensors, as sentence-transformers does.
            convert_to_tensor: Return one (n, dim) float32 CPU ``torch.Tensor``.
            normalize_embeddings: sentence-transformers' flag: True L2-normalises every vector; False gives the
                model's output as sentence-transformers gives it (L2-normalised only where the model has a
                ``Normalize`` module); ``None`` (default): latechunk's default, L2-normalised (chunk vectors are
                normalised too, so queries and chunks compare by cosine).
            normalize: latechunk's own keyword (kept for its callers): True L2-normalises, False returns the raw
                pooled vectors (no ``Normalize`` module applied). Give at most one of ``normalize`` and
                ``normalize_embeddings``.
            progress: Show a progress bar (tokens).
            macro_window: Plan for texts longer than one macro window; default ``macro_window(size=max_length,
                overlap=0)``: one forward per text up to :attr:`max_length` tokens (frame included), longer texts
                in windows of :attr:`max_length`, never truncated.

        Returns:
            (len(texts), dim) float32 numpy array on the host, in input order ((dim,) for one str); or a tensor /
            list of tensors as ``convert_to_tensor`` / ``convert_to_numpy`` say.

        Raises:
            ValueError: on an unknown ``prompt_name``, or ``normalize`` and ``normalize_embeddings`` both given
                and different.
            TypeError: if a text is not a str.
        """
        single = isinstance(texts, str)
        items = [texts] if single else list(texts)
        for i, t in enumerate(items):
            if not isinstance(t, str):
                raise TypeError(f"encode: texts[{i}] must be a str, got {type(t).__name__}")
        if normalize is not None and normalize_embeddings is not None and bool(normalize) != bool(normalize_embeddings):
            raise ValueError(f"give one of normalize={normalize!r} and normalize_embeddings={normalize_embeddings!r}")
        if normalize is not None:
            unit = bool(normalize)
        elif normalize_embeddings is not None:
            unit = bool(normalize_embeddings) or self.settings.normalize
        else:
            unit = True
        tokenizer = self._prompt_tokenizer(prompt_name, prompt)
        toks = [tokenizer(t) for t in items]
        if macro_window is None:
            # a text encoded on its own uses the model's whole input (max_length), not the late default
            # (max_seq_length): a 256-token chunk of MiniLM is one 258-token forward, not two 256-token windows
            # (the second pushed back to be full: twice the tokens; issue 15's peer benchmark)
            macro_window = self.macro_window(size=self.max_length, overlap=0)
        if toks:
            states = self.token_states(toks, macro_window, progress=progress or bool(show_progress_bar))
            vecs = torch.stack([self.pool_model(s, t) for s, t in zip(states, toks)])
            if unit:
                vecs = torch.nn.functional.normalize(vecs, p=2.0, dim=1)
            out = vecs.cpu().float()
        else:
            out = torch.zeros((0, self.dim), dtype=torch.float32)
        if convert_to_tensor:
            return out[0] if single else out
        if not convert_to_numpy:
            rows = list(out)
            return rows[0] if single else rows
        arr = out.numpy().astype(np.float32, copy=False)
        return arr[0] if single else arr

    def encode_query(self, texts: str | Sequence[str], normalize: bool | None = None, progress: bool = False,
                     **kwargs) -> np.ndarray:
        """:meth:`encode` with the query prompt (sentence-transformers' ``encode_query``).

        Args:
            texts: The queries (one str: one vector).
            normalize: L2-normalise the output rows (default True; see :meth:`encode`).
            progress: Show a progress bar (tokens).
            **kwargs: Other :meth:`encode` arguments (``normalize_embeddings``, ``convert_to_tensor``, ...;
                ``prompt_name``/``prompt`` replace the query prompt).

        Returns:
            (len(texts), dim) float32 on the host, in input order (as :meth:`encode`).
        """
        kwargs.setdefault("prompt_name", "query")
        return self.encode(texts, normalize=normalize, progress=progress, **kwargs)

    def encode_document(
        self,
        texts: str | Sequence[str],
        normalize: bool | None = None,
        progress: bool = False,
        macro_window: MacroWindow | None = None,
        **kwargs,
    ) -> np.ndarray:
        """:meth:`encode` with the document prompt (sentence-transformers' ``encode_document``): naive chunks.

        Args:
            texts: The texts (e.g. chunk texts; one str: one vector).
            normalize: L2-normalise the output rows (default True; see :meth:`encode`).
            progress: Show a progress bar (tokens).
            macro_window: Plan for texts longer than one macro window; default as :meth:`encode`.
            **kwargs: Other :meth:`encode` arguments (``normalize_embeddings``, ``convert_to_tensor``, ...).

        Returns:
            (len(texts), dim) float32 on the host, in input order (as :meth:`encode`).
        """
        kwargs.setdefault("prompt_name", "document")
        return self.encode(texts, normalize=normalize, progress=progress, macro_window=macro_window, **kwargs)


def _st_config(path: str) -> dict:
    """A local model folder's ``config_sentence_transformers.json`` (``{}`` where there is none or it is not an
    object: a hub id, a model built in memory, a plain Hugging Face folder)."""
    f = Path(path) / "config_sentence_transformers.json"
    try:
        obj = json.loads(f.read_text(encoding="utf-8")) if f.is_file() else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return obj if isinstance(obj, dict) else {}
