"""How many content tokens the macro-window plan sends through the encoder more than once, per corpus.

With overlap 0 each token is encoded once, except that a long document's last window is moved back to end at the
document's end, so that it is full (:meth:`latechunk.macro_window.MacroWindow.plan`): its start repeats tokens of
the window before it. This script counts that repeat over a corpus with the model's own tokenizer, without loading
any weights (the number recorded in README.md and results/map.md).

Example:
    python3 scripts/window_repeat.py ../shared/data/chroma_chunking_eval/corpora --window 256 --overlap 0
"""

from __future__ import annotations

import argparse


def count(inputs: list[str], window: int, overlap: int = 0, model: str | None = None) -> dict:
    """Content tokens of ``inputs`` and the content tokens the macro-window plan encodes.

    Args:
        inputs: Files and folders, read as ``latechunk embed`` reads them.
        window: Macro-window size in tokens (frame included).
        overlap: Content tokens shared by consecutive windows.
        model: The tokenizer's model (default: the bundled one).

    Returns:
        ``{"documents", "content_tokens", "encoded_tokens", "repeat"}``; ``repeat`` is ``encoded / content - 1``
        (0 for a corpus of one-window documents), ``encoded_tokens`` counts content tokens only (no frame).
    """
    from latechunk.io import iter_inputs
    from latechunk.macro_window import MacroWindow
    from latechunk.models import resolve_model_path
    from latechunk.tokenize import DocumentTokenizer
    from latechunk.types import Document

    tok = DocumentTokenizer.from_pretrained(resolve_model_path(model))
    plan = MacroWindow(window, overlap)
    docs = content = encoded = 0
    for item in iter_inputs(inputs):
        if not isinstance(item, Document):
            continue
        t = tok(item)
        n = int(t.n_content)
        n_frame = int(t.input_ids.shape[0]) - n
        windows = plan.plan(n, n_frame)
        docs += 1
        content += n
        encoded += sum(w.end - w.start for w in windows)
    return {"documents": docs, "content_tokens": content, "encoded_tokens": encoded,
            "repeat": encoded / content - 1 if content else 0.0}


def main() -> None:  # pragma: no cover
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--window", type=int, default=256)
    ap.add_argument("--overlap", type=int, default=0)
    ap.add_argument("--model", default=None)
    a = ap.parse_args()
    r = count(a.inputs, a.window, a.overlap, a.model)
    print(f"{r['documents']} documents, {r['content_tokens']:,} content tokens, {r['encoded_tokens']:,} encoded "
          f"(window {a.window}, overlap {a.overlap}): {100 * r['repeat']:.2f}% repeated")


if __name__ == "__main__":  # pragma: no cover
    main()
