"""The encoder: runs a loaded model; token ids in, unpadded token states out (it never sees strategies).

Loading is :mod:`latechunk.models` (name resolution, hub probe, sentence-transformers settings, weight hash);
this module runs what it loads: device and dtype, length-sorted token-budget batches, and documents longer than
a macro window through overlapping macro windows (:class:`~latechunk.macro_window.MacroWindow`): each one is
a proper model input (its own special tokens and instruction prefix), and each token's state is taken from the
macro window where it has the most context on both sides. The plan is a value passed to
:meth:`Encoder.iter_token_states` (one forward batch at a time, so that a caller can pool as it goes and never
hold a long document's states) and :meth:`Encoder.token_states` (whole documents); the encoder gives the default
(:meth:`Encoder.macro_window`) and stores none.

The encoder speaks sentence-transformers (``SentenceTransformer``): :meth:`Encoder.encode` (``prompt_name``,
``prompt``, ``batch_size``, ``show_progress_bar``, ``convert_to_numpy``, ``convert_to_tensor``,
``normalize_embeddings``; no prompt unless asked or the model sets a default), :meth:`Encoder.encode_query`,
:meth:`Encoder.encode_document`, :attr:`Encoder.prompts`, :attr:`Encoder.default_prompt_name`,
:attr:`Encoder.max_seq_length`, so code written for a ``SentenceTransformer`` can take an Encoder.
The sentence-transformers methods are :class:`~latechunk.encoder.st_encode.SentenceTransformerEncode`, a base
class of :class:`Encoder`; the device and dtype rules are :mod:`latechunk.encoder.isa`, the batch budget
:mod:`latechunk.encoder.batching`, the oneDNN linears :mod:`latechunk.encoder.linears` and the attention choice
:mod:`latechunk.encoder.attention`.
Tests: ``tests/encoder/test_encoder.py``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from latechunk.encoder.attention import _set_attention, attention_implementation
from latechunk.encoder.batching import StateBatch, StateBlock, budget_batches, default_batch_tokens
from latechunk.encoder.isa import _DTYPES, _pick_device, default_dtype
from latechunk.encoder.linears import ONEDNN_MIN_TOKENS, OneDNNLinear, _want_onednn_linear
from latechunk.encoder.st_encode import SentenceTransformerEncode
from latechunk.macro_window import MIN_WINDOW_CONTENT_TOKENS, MacroWindow, PlannedWindow
from latechunk.models import HubProbe, LoadedModel, ModelFacts, canonical_dtype
from latechunk.onnx_backend import BACKENDS
from latechunk.tokenize import DocumentTokenizer
from latechunk.types import Tokenization

if TYPE_CHECKING:
    from latechunk.config import ModelConfig

#: what torch raises when a device runs out of memory (``torch.OutOfMemoryError`` from torch 2.5, the CUDA one
#: before)
_OUT_OF_MEMORY = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)


def _caller_stacklevel() -> int:
    """The ``stacklevel`` for a ``warnings.warn`` called by this module's caller's caller chain that points at the
    first frame outside the latechunk package (the user's line, not an internal one)."""
    import sys

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # latechunk/, not latechunk/encoder/
    frame, level = sys._getframe(1), 1  # the frame that calls warnings.warn is level 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


class Encoder(SentenceTransformerEncode):
    """Runs a Hugging Face encoder: unpadded token states per document, and the model's own pooling.

    Args:
        model: Model id or local folder, loaded through :meth:`LoadedModel.load
            <latechunk.models.LoadedModel.load>` (``None`` = bundled all-MiniLM-L6-v2, offline); or a
            :class:`~latechunk.models.LoadedModel` already in memory (tests, custom models), run as it is.
        device: ``"auto"`` (CUDA when present), ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"``.
        dtype: ``"float32"``, ``"bfloat16"``, ``"float16"``; default :func:`default_dtype` (bf16 on CUDA and on
            CPUs with AMX or AVX-512 BF16, else fp32; ``$LATECHUNK_CPU_DTYPE`` overrides the CPU rule).
        max_length: Model input limit in tokens, frame included; default the model's limit
            (:attr:`LoadedModel.input_limit <latechunk.models.LoadedModel.input_limit>`). It must hold the longer
            of the document and query frames plus :data:`~latechunk.macro_window.MIN_WINDOW_CONTENT_TOKENS` (16)
            content tokens.
        batch_tokens: Token budget per forward batch (padded tokens: ``batch_size * longest``); default
            :func:`default_batch_tokens` (4,096 on the CPU, 16,384 on a GPU).
        trust_remote_code: Allow the model repository's own Python code when loading by name (off unless asked;
            a warning is given).
        document_prompt / query_prompt: Override the model's prompts (``None`` = the model's own).
        hub_probe: The hub probe for a hub id (:class:`~latechunk.models.HubProbe`; default a new one).
        backend: What runs the forward passes: ``"torch"`` (default, any device), ``"onnx"`` (ONNX Runtime on
            the CPU, fp32; the model exported once and cached by its weight hash,
            :mod:`latechunk.onnx_backend`) or ``"onnx-int8"`` (the export dynamically quantized to int8). The
            ONNX backends need ``device`` cpu (or auto without CUDA), dtype float32 and the extra ``[onnx]``.
        compile: Run the forward passes through ``torch.compile`` (TorchInductor; the torch backend only). Each
            new batch shape is compiled on its first forward (seconds to tens of seconds; the full macro windows
            of late mode share one shape, shorter inputs take a shape-generic graph after the first recompile:
            ``dynamic=None``, torch's automatic dynamic shapes); token states equal the eager ones to float
            rounding. Measured (``results/peers.md``, "--compile"): 0.99-1.15x the eager pipeline on an fp32
            CPU in four runs, 0.97-1.01x in bf16 on an AVX-512 BF16 CPU, so it pays on large fp32 corpora at best
            (not yet measured on a GPU). Where the compile fails (no C++ compiler, an operator the compiler
            refuses) the encoder warns once and runs eager (:attr:`compiled` is then False). See
            https://pytorch.org/docs/stable/generated/torch.compile.html.
        onednn_linear: Run the model's linear layers through oneDNN (:class:`OneDNNLinear`; fp32, bias fused)
            instead of BLAS ``addmm``. ``None`` (default): on for the torch backend on the CPU in float32
            without ``compile`` on an x86-64 CPU, where the operator exists and passes a probe
            (:func:`onednn_linear_available`), unless ``$LATECHUNK_ONEDNN_LINEAR=0``; measured 1.07-1.19x the
            stock fp32 pipeline on an AMD EPYC (results/peers.md). Token states equal the stock ones to fp32
            rounding. The keyword sets this encoder only; the environment variable reaches every encoder a run
            makes (the sentence encoders of ``sentence_source``, Ray actors).

    Raises:
        ValueError: on a bad ``backend`` (or an ONNX backend on a GPU or with a 16-bit dtype, or with
            ``compile``), on a model that does not resolve or load, a bad device/dtype/``batch_tokens``,
            ``max_length`` out of range, ``trust_remote_code`` with a model already loaded, or
            ``onednn_linear=True`` where it cannot run (another backend, device or dtype, ``compile``, or no working
            operator).
        TypeError: if the tokenizer is not a fast tokenizer (character offsets are needed), or ``compile`` is not
            a bool, or ``onednn_linear`` not a bool or None.
    """

    def __init__(
        self,
        model: str | os.PathLike | LoadedModel | None = None,
        device: str = "auto",
        dtype: str | None = None,
        max_length: int | None = None,
        batch_tokens: int | None = None,
        trust_remote_code: bool = False,
        document_prompt: str | None = None,
        query_prompt: str | None = None,
        hub_probe: HubProbe | None = None,
        backend: str = "torch",
        compile: bool = False,
        onednn_linear: bool | None = None,
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        if not isinstance(compile, bool):
            raise TypeError(f"compile must be True or False, got {compile!r}")
        if compile and backend != "torch":
            raise ValueError(f"compile applies to the torch backend (torch.compile), not to {backend!r}")
        self.backend = backend
        if backend != "torch" and device == "auto":
            device = "cpu"
        self.device = _pick_device(device)
        dtype = canonical_dtype(dtype)  # bf16, FP32 ... -> torch's names; ValueError on anything else
        if backend != "torch" and (self.device.type != "cpu" or dtype not in (None, "float32")):
            raise ValueError(f"backend {backend!r} runs on the CPU in float32 (got device {str(self.device)!r}, dtype "
                             f"{dtype!r}); on a GPU use --backend torch")
        if dtype is None:
            dtype = default_dtype(self.device, backend)
        self.dtype = _DTYPES[dtype]
        if batch_tokens is None:
            batch_tokens = default_batch_tokens(self.device)
        if batch_tokens < 1:
            raise ValueError(f"batch_tokens must be >= 1, got {batch_tokens}")
        self.batch_tokens = int(batch_tokens)
        if isinstance(model, LoadedModel):
            if trust_remote_code:
                raise ValueError("trust_remote_code applies when a model is loaded by name; this one is already loaded")
            self.loaded = model
        else:
            self.loaded = LoadedModel.load(model, dtype=self.dtype, trust_remote_code=trust_remote_code, probe=hub_probe)
        self.loaded.model.eval()
        self.loaded.model.to(device=self.device, dtype=self.dtype)
        #: the attention implementation the model runs (:func:`attention_implementation`; varlen
        #: flash-attention on CUDA where available, else SDPA)
        model = self.loaded.model
        self.attention = (
            _set_attention(model, attention_implementation(model, self.device, self.dtype)) if backend == "torch"
            else str(getattr(getattr(model, "config", None), "_attn_implementation", None) or "eager"))

        hf_tok = self.loaded.tokenizer
        settings = self.loaded.settings
        self.tokenizer = DocumentTokenizer(hf_tok, prefix=settings.document_prompt if document_prompt is None else document_prompt)
        self.query_tokenizer = DocumentTokenizer(hf_tok, prefix=settings.query_prompt if query_prompt is None else query_prompt)
        self.plain_tokenizer = DocumentTokenizer(hf_tok, prefix="")

        model_limit = self.loaded.input_limit
        self.max_length = int(max_length) if max_length is not None else model_limit
        if self.max_length > model_limit:
            raise ValueError(f"max_length={self.max_length} exceeds the model's limit of {model_limit} tokens")
        # max_length is the input limit (and the default macro-window size): it must hold every prompt's frame
        # plus content
        frames = {"document": self.tokenizer.n_frame, "query": self.query_tokenizer.n_frame}
        prompt_name, frame = max(frames.items(), key=lambda kv: kv[1])
        if self.max_length < frame + MIN_WINDOW_CONTENT_TOKENS:
            raise ValueError(
                f"max_length={self.max_length} is too small: the minimum is {frame + MIN_WINDOW_CONTENT_TOKENS} tokens "
                f"({frame} frame tokens of the {prompt_name} input + {MIN_WINDOW_CONTENT_TOKENS} content tokens)"
            )
        self.dim = int(getattr(self.model.config, "hidden_size", 0) or 0)
        #: counters for accounting and instrumentation
        self.stats = {"forward_calls": 0, "rows": 0, "tokens": 0, "padded_tokens": 0, "seconds": 0.0}
        self._onnx = None
        if backend != "torch":
            from latechunk.onnx_backend import OnnxRunner, export_onnx

            variant = "int8" if backend == "onnx-int8" else "fp32"
            self._onnx = OnnxRunner(export_onnx(self.model, self.model_hash, variant))
        #: what runs the forward passes: the model, or ``torch.compile(model)`` with ``compile`` (the eager model
        #: again once a compile has failed); :attr:`model` stays the eager module
        self._forward_model: torch.nn.Module = self.model
        #: whether the forward passes run through ``torch.compile`` (False without ``compile``, or once it failed)
        self.compiled = bool(compile)
        if self.compiled:
            self._forward_model = torch.compile(self.model, dynamic=None)
        if onednn_linear is not None and not isinstance(onednn_linear, bool):
            raise TypeError(f"onednn_linear must be True, False or None, got {onednn_linear!r}")
        #: whether the eager forward passes run every ``nn.Linear`` through oneDNN (:class:`OneDNNLinear`)
        self.onednn_linear = _want_onednn_linear(onednn_linear, backend, self.device, self.dtype, self.compiled,
                                                 self.model)

    @classmethod
    def from_config(cls, config: ModelConfig, **overrides) -> Encoder:
        """The encoder of a :class:`~latechunk.config.ModelConfig` (name, device, dtype, batch_tokens,
        trust_remote_code, backend, compile).

        Args:
            config: The model config.
            **overrides: Constructor arguments that replace the config's (e.g. ``device="cuda:1"`` for a rank).

        Returns:
            The :class:`Encoder`.

        Raises:
            ValueError / TypeError: as the constructor.
        """
        kwargs = {"device": config.device, "dtype": config.dtype, "batch_tokens": config.batch_tokens,
                  "trust_remote_code": config.trust_remote_code, "backend": getattr(config, "backend", "torch"),
                  "compile": getattr(config, "compile", False)}
        return cls(config.name, **(kwargs | overrides))

    # ------------------------------------------------------------------ the loaded model
    @property
    def name(self) -> str:
        """The model as asked (``"all-MiniLM-L6-v2"`` for the default)."""
        return self.loaded.name

    @property
    def path(self) -> str:
        """Where the model was loaded from (folder or hub id; the name for a model built in memory)."""
        return self.loaded.path

    @property
    def model(self) -> torch.nn.Module:
        """The Hugging Face model, on :attr:`device` in :attr:`dtype`, in eval mode."""
        return self.loaded.model

    @property
    def settings(self):
        """The model's embedding settings (:class:`~latechunk.models.ModelSettings`)."""
        return self.loaded.settings

    @property
    def facts(self) -> ModelFacts:
        """The facts a run's checks need (:class:`~latechunk.models.ModelFacts`), of the model as loaded and run
        here: its settings, :attr:`max_length` as the input limit and the document tokenizer's frame."""
        return ModelFacts(name=self.name, path=self.path, settings=self.settings, input_limit=self.max_length,
                          document_frame=self.tokenizer.n_frame)

    @property
    def hf_tokenizer(self):
        """The underlying Hugging Face fast tokenizer."""
        return self.loaded.tokenizer

    @property
    def model_hash(self) -> str:
        """sha256 of the model's weight files (:attr:`LoadedModel.sha256 <latechunk.models.LoadedModel.sha256>`;
        computed once, lazily; ``""`` where there are none locally)."""
        return self.loaded.sha256

    @property
    def max_seq_length(self) -> int:
        """The sentence-transformers ``max_seq_length`` where the model has one (``sentence_bert_config.json``),
        capped at :attr:`max_length`; else :attr:`max_length`. In tokens, frame included.

        Recorded for callers that want sentence-transformers' input length (e.g. a default macro window); the
        encoder itself never truncates to it: naive chunks and queries longer than :attr:`max_length` go
        through macro windows.
        """
        st = self.settings.max_seq_length
        return min(int(st), self.max_length) if isinstance(st, int) and st > 0 else self.max_length

    # ------------------------------------------------------------------ the macro-window plan
    def macro_window(self, size: int | None = None, overlap: int | None = None) -> MacroWindow:
        """This model's macro-window plan, with defaults resolved and checked (:meth:`MacroWindow.check
        <latechunk.macro_window.MacroWindow.check>`) against the document frame and :attr:`max_length`.

        Args:
            size: Tokens per macro window, frame included; ``None`` = :attr:`max_seq_length` (the model's
                sentence-transformers ``max_seq_length`` where it has one, 256 for all-MiniLM-L6-v2; else
                :attr:`max_length`).
            overlap: Content tokens shared by consecutive macro windows; ``None`` =
                :data:`~latechunk.macro_window.DEFAULT_WINDOW_OVERLAP` (0).

        Returns:
            The :class:`~latechunk.macro_window.MacroWindow`.

        Raises:
            ValueError: if ``size > max_length``, ``size`` is under the frame plus 16 content tokens, or the
                overlap is outside ``[0, size - n_frame)``.
        """
        return MacroWindow.default(self.max_length, self.tokenizer.n_frame, size, overlap,
                                   default_size=self.max_seq_length)

    def describe(self, macro_window: MacroWindow | None = None) -> dict:
        """The manifest's model block.

        Args:
            macro_window: The run's plan, recorded as ``window`` and ``window_overlap`` (the manifest's keys
                for the macro window's size and overlap); default :meth:`macro_window`.

        Returns:
            ``name``, ``path``, ``sha256``, ``dim``, ``dtype``, ``device``, ``max_length`` (tokens), ``window``,
            ``window_overlap`` (tokens), ``pooling``, ``normalize``, ``document_prompt``, ``query_prompt``,
            and ``backend`` (``onnx`` or ``onnx-int8``) only where the model runs on ONNX Runtime (a torch run keeps
            the manifest keys it always had).
        """
        mw = macro_window or self.macro_window()
        return {
            "name": self.name,
            # absolute, so the folder's model is found from any working directory (a trial: `--model models/r`
            # recorded as typed could not be searched from elsewhere)
            "path": str(Path(self.path).absolute()) if Path(self.path).exists() else self.path,
            "sha256": self.model_hash,
            "dim": self.dim,
            "dtype": str(self.dtype).replace("torch.", ""),
            "device": str(self.device),
            "max_length": self.max_length,
            "window": mw.size,
            "window_overlap": mw.overlap,
            "pooling": self.settings.pooling,
            "normalize": self.settings.normalize,
            "document_prompt": self.tokenizer.prefix,
            "query_prompt": self.query_tokenizer.prefix,
            **({"backend": self.backend} if self.backend != "torch" else {}),
        }

    # ------------------------------------------------------------------ forward
    def _forward_packed(self, rows: list[np.ndarray]) -> tuple[torch.Tensor, int]:
        """Run one padded batch; return its states as (n * longest, dim) float32 on the device (row i's token p
        at ``i * longest + p``; padding rows included) and ``longest``."""
        n = len(rows)
        longest = max(len(r) for r in rows)
        ids = np.zeros((n, longest), dtype=np.int64)
        mask = np.zeros((n, longest), dtype=np.int64)
        pad_id = self.hf_tokenizer.pad_token_id if self.hf_tokenizer.pad_token_id is not None else 0
        ids.fill(pad_id)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = r
            mask[i, : len(r)] = 1
        if self._onnx is not None:
            t0 = time.perf_counter()
            hidden = torch.from_numpy(self._onnx(ids, mask))
            return self._account(n, longest, int(mask.sum()), hidden, t0)
        ids_t = torch.from_numpy(ids)
        mask_t = torch.from_numpy(mask)
        if self.device.type == "cuda":
            ids_t = ids_t.pin_memory().to(self.device, non_blocking=True)
            mask_t = mask_t.pin_memory().to(self.device, non_blocking=True)
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = self._run_model(ids_t, mask_t)
        hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
        del out
        return self._account(n, longest, int(mask.sum()), hidden, t0)

    def _run_model(self, ids: torch.Tensor, mask: torch.Tensor):
        """One forward of :attr:`_forward_model`. Where the compiled model raises and the eager one runs the same
        batch, the compile failed: warn once and run eager from then on (the same states, at the eager speed).
        An error the eager model raises too (the input's or the model's) propagates; so does running out of
        memory (the batch's, not the compiler's)."""
        if self._forward_model is self.model:
            if self.onednn_linear and ids.numel() >= ONEDNN_MIN_TOKENS:
                with OneDNNLinear():
                    return self.model(input_ids=ids, attention_mask=mask)
            return self.model(input_ids=ids, attention_mask=mask)
        try:
            return self._forward_model(input_ids=ids, attention_mask=mask)
        except Exception as err:  # dynamo and inductor raise many kinds (BackendCompilerFailed, ...)
            if isinstance(err, _OUT_OF_MEMORY):
                raise
            out = self.model(input_ids=ids, attention_mask=mask)  # raises where the batch, not the compile, is wrong
            import warnings

            root, seen = err, {id(err)}  # BackendCompilerFailed wraps the compiler's own error: name that one
            while (inner := getattr(root, "inner_exception", None) or root.__cause__) is not None and id(inner) not in seen:
                root = inner
                seen.add(id(inner))
            lines = str(root).strip().splitlines()
            warnings.warn(f"torch.compile failed ({type(root).__name__}: {lines[0][:300] if lines else ''}); the "
                          "encoder runs the model eager (the same token states, without the compiled speed-up)",
                          RuntimeWarning, stacklevel=_caller_stacklevel())
            self._forward_model = self.model
            self.compiled = False
            return out

    def _account(self, n: int, longest: int, tokens: int, hidden: torch.Tensor, t0: float) -> tuple[torch.Tensor, int]:
        """Count one forward batch in :attr:`stats`; its states as (n * longest, dim) float32 and ``longest``."""
        self.stats["forward_calls"] += 1
        self.stats["rows"] += n
        self.stats["tokens"] += tokens
        self.stats["padded_tokens"] += n * longest
        states = hidden.float().reshape(n * longest, hidden.shape[-1])
        self.stats["seconds"] += time.perf_counter() - t0
        return states, longest

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Greedy token-budget batches of row indices, longest first (so padding stays small;
        :func:`~latechunk.encoder.batching.budget_batches` with :attr:`batch_tokens`)."""
        return budget_batches(lengths, self.batch_tokens)

    def model_inputs(
        self, tok: Tokenization, macro_window: MacroWindow | None = None, ends: np.ndarray | None = None
    ) -> tuple[list[np.ndarray], list[PlannedWindow]]:
        """The model inputs of one document: one row when it fits one macro window, else one per macro window.

        Args:
            tok: The document's tokenization.
            macro_window: The plan; default :meth:`macro_window`.
            ends: Document token positions where a macro window may stop keeping states (chunk ends): chunk-aligned
                windows (:meth:`MacroWindow.plan_aligned <latechunk.macro_window.MacroWindow.plan_aligned>`);
                ``None``: token-aligned windows.

        Returns:
            ``(rows, plan)``: rows are (len_i,) int64 token-id arrays, each ``lead + content[a:b] + trail``;
            plan is :meth:`MacroWindow.plan <latechunk.macro_window.MacroWindow.plan>`'s list (content-token
            units).

        Raises:
            ValueError: if the plan does not fit this tokenization's frame or :attr:`max_length`
                (:meth:`MacroWindow.check <latechunk.macro_window.MacroWindow.check>`).
        """
        mw = macro_window or self.macro_window()
        n_frame = tok.n_lead + tok.n_trail
        mw.check(n_frame, self.max_length)
        content_ends = None if ends is None else np.asarray(ends, dtype=np.int64) - tok.content_start
        plan = mw.plan(tok.n_content, n_frame, content_ends)
        if len(plan) == 1:
            return [tok.input_ids], plan
        lead = tok.input_ids[: tok.n_lead]
        trail = tok.input_ids[tok.content_end :]
        content = tok.input_ids[tok.content_start : tok.content_end]
        return [np.concatenate([lead, content[w.start : w.end], trail]) for w in plan], plan

    def iter_token_states(
        self,
        toks: Sequence[Tokenization],
        macro_window: MacroWindow | None = None,
        allow_windows: bool = True,
        progress: bool = False,
        window_ends: Sequence[np.ndarray | None] | None = None,
    ) -> Iterator[StateBatch]:
        """Token states of many documents, one forward batch at a time (memory bounded by one batch).

        Every model input (a whole document, or one macro window of a longer one) gives one
        :class:`StateBlock`: the rows of the document's token states that this input keeps (a macro window keeps
        ``[keep_start, keep_end)`` of its content, the first one also the lead frame, the last one the trail
        frame). Over the whole iteration the blocks of document ``d`` tile ``[0, len(toks[d]))`` exactly once,
        so a caller that pools as it goes never holds a whole long document's states.

        Args:
            toks: Tokenizations (from ``self.tokenizer`` or another of this encoder's tokenizers).
            macro_window: The macro-window plan; default :meth:`macro_window`.
            allow_windows: If False, a document longer than the macro window raises instead of being
                encoded in several macro windows.
            progress: Show a progress bar (tokens; on stderr when it is a terminal).
            window_ends: Per document, the token positions where a macro window may stop keeping states (its
                chunk ends: chunk-aligned windows, see :meth:`model_inputs`), or ``None`` (token-aligned); ``None``
                for all: token-aligned windows everywhere.

        Yields:
            One :class:`StateBatch` per forward batch (length-sorted token-budget batches, longest first, so
            not in document order): ``states`` (rows, dim) float32 on ``self.device``, valid until the next
            batch is asked for, and its blocks.

        Raises:
            ValueError: with ``allow_windows=False``, for a document longer than the macro window (names
                token count and limit; never truncates silently); for a plan that does not fit a tokenization or
                the model (before any forward pass).
        """
        mw = macro_window or self.macro_window()
        all_rows: list[np.ndarray] = []
        # per model input: (doc, first kept document position, rows kept, document position - row position)
        keeps: list[tuple[int, int, int, int]] = []
        for d, tok in enumerate(toks):
            if not allow_windows and len(tok) > mw.size:
                raise ValueError(
                    f"document {d} has {len(tok)} tokens, more than max_length={mw.size}; "
                    "turn macro windows on or shorten it (latechunk never truncates silently)"
                )
            rows, plan = self.model_inputs(tok, mw, None if window_ends is None else window_ends[d])
            if len(plan) == 1:
                all_rows.append(rows[0])
                keeps.append((d, 0, len(tok), 0))
                continue
            nl, covered = tok.n_lead, 0
            for w, (a, _b, ks, ke) in enumerate(plan):
                # row = lead + content[a:b] + trail: content token p sits at row nl + p - a, document nl + p;
                # the first window also keeps the lead frame (rows 0..nl), the last one the trail frame
                lo = 0 if w == 0 else nl + ks
                hi = len(tok) if w == len(plan) - 1 else nl + ke
                all_rows.append(rows[w])
                keeps.append((d, lo, hi - lo, a))
                covered += hi - lo
            if covered != len(tok):
                raise RuntimeError(f"macro-window stitching gave {covered} rows for {len(tok)} tokens")
        lengths = [len(r) for r in all_rows]
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=sum(lengths), unit="tok", desc="encode", leave=False, file=sys.stderr,
                       disable=None)  # on a terminal only
        try:
            for batch in self._batches(lengths):
                states, longest = self._forward_packed([all_rows[i] for i in batch])
                blocks = []
                for j, i in enumerate(batch):
                    d, lo, n, shift = keeps[i]
                    blocks.append(StateBlock(d, lo, j * longest + lo - shift, n))
                yield StateBatch(states, blocks)
                del states
                if bar is not None:
                    bar.update(sum(lengths[i] for i in batch))
        finally:
            if bar is not None:
                bar.close()

    def token_states(
        self,
        toks: Sequence[Tokenization],
        macro_window: MacroWindow | None = None,
        allow_windows: bool = True,
        progress: bool = False,
    ) -> list[torch.Tensor]:
        """Token states of many documents, one unpadded tensor per document, in input order.

        Holds every document's states at once (one tensor of ``len(tok)`` rows each); the pipeline pools with
        :meth:`iter_token_states` instead, so a long document's states are never held whole.

        Args:
            toks: Tokenizations (from ``self.tokenizer`` or another of this encoder's tokenizers).
            macro_window: The macro-window plan; default :meth:`macro_window` (:attr:`max_seq_length`, no
                overlap).
            allow_windows: If False, a document longer than the macro window raises instead of being
                encoded in several macro windows.
            progress: Show a progress bar (tokens; on stderr when it is a terminal).

        Returns:
            list of (n_tokens_i, dim) float32 tensors on ``self.device``; row p is the state of token p of the
            document's tokenization (frame rows from the first/last macro window).

        Raises:
            ValueError: with ``allow_windows=False``, for a document longer than the macro window (names
                token count and limit; never truncates silently); for a plan that does not fit a tokenization or the model.
        """
        result: list[torch.Tensor | None] = [None] * len(toks)
        for batch in self.iter_token_states(toks, macro_window, allow_windows, progress):
            for blk in batch.blocks:
                rows = batch.states[blk.row : blk.row + blk.n]
                n_tok = len(toks[blk.doc])
                if blk.n == n_tok:  # the whole document in one input: a view of the batch output, as before
                    result[blk.doc] = rows
                    continue
                if result[blk.doc] is None:
                    result[blk.doc] = torch.empty((n_tok, self.dim), dtype=torch.float32, device=self.device)
                result[blk.doc][blk.start : blk.start + blk.n] = rows  # type: ignore[index]
        return result  # type: ignore[return-value]

    # ------------------------------------------------------------------ the model's own pooling
    def pool_model(self, states: torch.Tensor, tok: Tokenization) -> torch.Tensor:
        """The model's own pooling of one input's token states (naive chunks and queries).

        Args:
            states: (n_tokens, dim), float32. Token states of one model input, frame included.
            tok: Its tokenization (for the prompt tokens, ``tok.n_lead``).

        Returns:
            (dim,), dtype of ``states``: the mean over all tokens, special tokens included (prompt tokens
            dropped when ``settings.include_prompt`` is False), the first token (``cls``) or the last token
            (``lasttoken``), or the elementwise maximum over the tokens the mean would take (``max``), as
            sentence-transformers' ``Pooling`` does. Other modes (``weightedmean``, several concatenated) are
            taken as the mean. Not normalised (see :meth:`encode`).
        """
        mode = self.settings.pooling
        if mode == "cls":
            return states[0]
        if mode == "lasttoken":
            return states[-1]
        start = 0 if self.settings.include_prompt else tok.n_lead
        if mode == "max":
            return states[start:].amax(dim=0)
        return states[start:].mean(dim=0)
