"""The macro-window plan: how a document longer than the model's input limit becomes overlapping model inputs.

Late chunking (Günther et al., arXiv:2409.04701) encodes a whole document in one pass; a document longer than the
model's input limit is encoded in overlapping **macro windows** (the paper's "long late chunking"). Each window is
a proper model input: the document's frame (special tokens and instruction prefix) around ``size - n_frame``
content tokens. Consecutive windows share ``overlap`` content tokens, and each token's state is taken from the
window where it has the most context on both sides.

:class:`MacroWindow` is the plan as a value (``size`` and ``overlap``, both in tokens); :meth:`MacroWindow.check`
is the one place where a plan is validated against a frame and a model input limit, and :meth:`MacroWindow.plan`
cuts a document's content tokens into windows. The encoder gives the default plan
(:meth:`latechunk.encoder.Encoder.macro_window`) and runs it (:meth:`latechunk.encoder.Encoder.token_states`).
Tests: ``tests/test_macro_window.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

__all__ = ["DEFAULT_WINDOW_OVERLAP", "MIN_WINDOW_CONTENT_TOKENS", "MacroWindow", "PlannedWindow"]

DEFAULT_WINDOW_OVERLAP = 0
"""Content tokens shared by consecutive macro windows when the overlap is not given: none. Chosen by measurement
(results/map.md): over the ``latechunk compare`` sweep of chunk size x macro window x overlap 0/32/64 on
XQuAD, overlap 0 is the cheapest setting on the quality/cost Pareto front (each token goes through the encoder
once, plus one frame per window), and a larger overlap bought no recall@5 or IoU@5 gain beyond noise for the
default ``fixed`` strategy. (Before: a quarter of the window's content tokens, 127 for 512, which sent 1.34x the
corpus's tokens through the encoder.)"""

MIN_WINDOW_CONTENT_TOKENS = 16
"""The least content tokens a macro window (and an encoder's ``max_length``) must hold beside its frame (special
tokens and instruction prefix): ``size >= n_frame + MIN_WINDOW_CONTENT_TOKENS``. Smaller windows give each token
almost no context and multiply the forward passes; they are rejected before any work."""


class PlannedWindow(NamedTuple):
    """One window of a plan, in content-token units (token 0 is the first token after the lead frame).

    Attributes:
        start / end: The window's content tokens ``[start, end)``, ``end - start <= capacity``.
        keep_start / keep_end: The tokens whose states come from this window, ``start <= keep_start < keep_end
            <= end``; over a plan these ranges tile ``[0, n_content)``.
    """

    start: int
    end: int
    keep_start: int
    keep_end: int


@dataclass(frozen=True)
class MacroWindow:
    """A macro-window plan: model inputs of ``size`` tokens whose content overlaps by ``overlap`` tokens.

    The value alone does not know the frame or the model; :meth:`check` validates it against both, and every
    user of a plan goes through it (the encoder when it gives or runs a plan, :meth:`plan` itself).

    Attributes:
        size: Tokens per model input, frame included (special tokens and instruction prefix). Valid for a frame
            of ``n_frame`` tokens and a model limit of ``max_length`` tokens when
            ``n_frame + MIN_WINDOW_CONTENT_TOKENS <= size <= max_length``.
        overlap: Content tokens shared by consecutive windows, ``0 <= overlap < size - n_frame``.

    Raises:
        TypeError: if ``size`` or ``overlap`` is not an int.
    """

    size: int
    overlap: int

    def __post_init__(self) -> None:
        for name in ("size", "overlap"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"MacroWindow.{name} must be an int (tokens), got {type(value).__name__} {value!r}")

    @classmethod
    def default(cls, max_length: int, n_frame: int, size: int | None = None, overlap: int | None = None,
                default_size: int | None = None) -> MacroWindow:
        """The plan with unset fields resolved, validated by :meth:`check`.

        Args:
            max_length: The model's input limit in tokens, frame included.
            n_frame: Frame tokens of every input (special tokens and instruction prefix).
            size: Tokens per macro window, frame included; ``None`` = ``default_size``.
            overlap: Content tokens shared by consecutive macro windows; ``None`` = :data:`DEFAULT_WINDOW_OVERLAP`
                (0).
            default_size: The model's default macro window (:attr:`latechunk.models.ModelFacts.default_window`:
                its sentence-transformers ``max_seq_length``, 256 for all-MiniLM-L6-v2), capped at ``max_length``;
                ``None`` = ``max_length``.

        Returns:
            The checked :class:`MacroWindow`.

        Raises:
            ValueError: as :meth:`check`.
        """
        if size is None:
            size = max_length if default_size is None else min(int(default_size), int(max_length))
        size = int(size)
        if overlap is None:
            overlap = DEFAULT_WINDOW_OVERLAP
        mw = cls(size, int(overlap))
        mw.check(n_frame, max_length)
        return mw

    def capacity(self, n_frame: int) -> int:
        """Content tokens per macro window.

        Args:
            n_frame: Frame tokens of the inputs (special tokens and instruction prefix).

        Returns:
            ``size - n_frame`` (tokens; not checked, see :meth:`check`).
        """
        return self.size - n_frame

    def check(self, n_frame: int, max_length: int | None = None) -> None:
        """The one validation of a plan, for inputs with ``n_frame`` frame tokens and a model of ``max_length``.

        Args:
            n_frame: Frame tokens of the inputs (special tokens and instruction prefix).
            max_length: The model's input limit in tokens; ``None`` skips that bound.

        Raises:
            ValueError: if ``size > max_length``, ``size < n_frame + MIN_WINDOW_CONTENT_TOKENS`` or the overlap is
                outside ``[0, size - n_frame)``; the message names the values and the bound.
        """
        if max_length is not None and self.size > max_length:
            raise ValueError(f"macro_window={self.size} exceeds max_length={max_length} (the model input limit; "
                             "the window is --macro-window on the command line, macro_window= in Python)")
        minimum = n_frame + MIN_WINDOW_CONTENT_TOKENS
        if self.size < minimum:
            raise ValueError(
                f"macro_window={self.size} is too small: the minimum is {minimum} tokens ({n_frame} frame tokens: "
                f"special tokens and instruction prefix, + at least {MIN_WINDOW_CONTENT_TOKENS} content tokens; "
                "--macro-window on the command line)"
            )
        capacity = self.capacity(n_frame)
        if not 0 <= self.overlap < capacity:
            raise ValueError(
                f"macro_window_overlap={self.overlap} must be >= 0 and < {capacity}, the window's content tokens "
                f"(macro_window={self.size} minus {n_frame} frame tokens; --macro-window-overlap on the command line)"
            )

    def plan(self, n_content: int, n_frame: int, ends: Sequence[int] | np.ndarray | None = None
             ) -> list[PlannedWindow]:
        """Cut a document's content tokens into overlapping windows.

        Without ``ends`` (token-aligned windows): windows start every ``capacity - overlap`` tokens; the last one
        is pushed back to end at the document's end, so it is full. A token lying in two windows takes its state
        from the one where it has the most context on both sides: for consecutive windows ``[a0, b0)`` and
        ``[a1, b1)`` the switch is at the midpoint of the overlap, ``p > (a1 + b0 - 1) / 2`` goes to the later
        window (ties to the earlier one).

        With ``ends`` (chunk-aligned windows, :meth:`plan_aligned`): each window keeps its states up to the last
        of ``ends`` it holds, so a chunk that ends at one of them and fits a window is pooled from one window
        (one context) instead of from two cut at an arbitrary token.

        Args:
            n_content: The document's content tokens (frame excluded), ``>= 0``.
            n_frame: Its frame tokens (special tokens and instruction prefix).
            ends: Content-token positions where a window may stop keeping states (chunk ends), any order;
                positions outside ``(0, n_content)`` are ignored. ``None``: token-aligned windows.

        Returns:
            One :class:`PlannedWindow` per model input, in content-token units; a single ``(0, n_content,
            0, n_content)`` when the document fits one window. The ``[keep_start, keep_end)`` ranges tile
            ``[0, n_content)``.

        Raises:
            ValueError: as :meth:`check` (without the model bound).
        """
        self.check(n_frame)
        capacity = self.capacity(n_frame)
        if n_content <= capacity:
            return [PlannedWindow(0, n_content, 0, n_content)]
        if ends is not None:
            return self.plan_aligned(n_content, n_frame, ends)
        stride = capacity - self.overlap
        starts = list(range(0, n_content - capacity, stride)) + [n_content - capacity]
        if len(starts) > 1 and starts[-1] == starts[-2]:
            starts.pop()
        wins = [(a, a + capacity) for a in starts]
        out = []
        keep_start = 0
        for i, (a, b) in enumerate(wins):
            keep_end = (wins[i + 1][0] + b - 1) // 2 + 1 if i + 1 < len(wins) else n_content
            out.append(PlannedWindow(a, b, keep_start, keep_end))
            keep_start = keep_end
        return out

    def plan_aligned(self, n_content: int, n_frame: int, ends: Sequence[int] | np.ndarray) -> list[PlannedWindow]:
        """Chunk-aligned windows: each window keeps the states of whole chunks (issue 38).

        Token-aligned windows (:meth:`plan` without ``ends``) cut a document every ``capacity`` tokens, so a chunk
        that crosses a cut is pooled from two model inputs, i.e. from two contexts cut at an arbitrary place. Here
        window ``i`` keeps ``[keep_start, e)`` with ``e`` the last of ``ends`` in ``(keep_start, keep_start +
        capacity - overlap]``, and starts ``overlap`` tokens before ``keep_start`` (left context for its first
        kept token; it reads ``[keep_start - overlap, keep_start - overlap + capacity)``, clipped to the document,
        so right context beyond ``e`` too). Where no end falls in that range (a chunk longer than a window), the
        window keeps all it can and the chunk is cut by tokens as in :meth:`plan`. The last window is pushed
        back to end at the document's end (full). Cost: a window keeps at most ``capacity - overlap`` tokens, as
        in :meth:`plan`, and fewer when it stops at a chunk end; so a few more windows than :meth:`plan` (measured
        in results/issue38.md).

        Args:
            n_content: The document's content tokens (frame excluded), ``> capacity``.
            n_frame: Its frame tokens (special tokens and instruction prefix).
            ends: Content-token positions where a window may stop keeping states, any order.

        Returns:
            :class:`PlannedWindow` list whose ``[keep_start, keep_end)`` ranges tile ``[0, n_content)``, each
            inside its window's ``[start, end)``.
        """
        capacity = self.capacity(n_frame)
        step = capacity - self.overlap
        e = np.unique(np.asarray(ends, dtype=np.int64).reshape(-1))
        e = e[(e > 0) & (e < n_content)]
        out: list[PlannedWindow] = []
        keep_start = 0
        while keep_start < n_content:
            start = max(keep_start - self.overlap, 0)
            if start + capacity >= n_content:  # the last window: pushed back to end at the document's end
                start = n_content - capacity
                out.append(PlannedWindow(start, n_content, keep_start, n_content))
                break
            limit = min(keep_start + step, start + capacity)
            k = int(np.searchsorted(e, limit, side="right")) - 1
            keep_end = int(e[k]) if k >= 0 and e[k] > keep_start else limit
            out.append(PlannedWindow(start, start + capacity, keep_start, keep_end))
            keep_start = keep_end
        return out
