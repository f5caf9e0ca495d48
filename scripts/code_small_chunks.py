"""How many chunks of the ``code`` strategy fall under its ``min_tokens``, over source files (the README's
"26 to 2" on latechunk's own source at 256/24).

    python3 scripts/code_small_chunks.py --strategy code:max_tokens=256 'latechunk/**/*.py'
    python3 scripts/code_small_chunks.py --strategy code:max_tokens=64 --show 10 'latechunk/**/*.py'

Tokenizer: the bundled all-MiniLM-L6-v2's (or ``--model``), as ``latechunk chunk`` uses it; no model weights load.
Prints the files, chunks, chunks under ``min_tokens`` and, with ``--show N``, the first N of them (path, tokens,
heading path, text).
"""

from __future__ import annotations

import argparse
import glob
from collections.abc import Sequence


def count(patterns: Sequence[str], spec: str, model: str | None = None) -> dict:
    """Chunks under ``min_tokens`` of ``spec`` (a ``code`` SPEC) over the files the glob ``patterns`` match.

    Args:
        patterns: Glob patterns (``**`` recursive), relative to the working directory.
        spec: A ``code`` SPEC (its ``min_tokens`` is the threshold).
        model: Model folder or name for the tokenizer; None: the bundled default.

    Returns:
        ``{"files", "chunks", "small": [(path, tokens, heading_path, text), ...]}`` (tokens: content tokens).

    Raises:
        ValueError: on a bad SPEC or no file matched.
    """
    from latechunk.models import ModelSettings, resolve_model_path
    from latechunk.strategies import get_strategy
    from latechunk.tokenize import DocumentTokenizer
    from latechunk.types import Document

    strategy = get_strategy(spec)
    if strategy.name != "code":
        raise ValueError(f"{spec!r} is not a code SPEC")
    files = sorted({f for p in patterns for f in glob.glob(p, recursive=True)})
    if not files:
        raise ValueError(f"no file matches {list(patterns)}")
    path = resolve_model_path(model)
    tok = DocumentTokenizer.from_pretrained(path, prefix=ModelSettings.read(path).document_prompt)
    chunks, small = 0, []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        doc = Document(f, text, {"source": f})
        b = strategy.split(doc, tok(doc))
        for (s, e), (c0, c1), hp in zip(b.token_spans.tolist(), b.char_spans.tolist(), b.heading_paths):
            chunks += 1
            if e - s < strategy.min_tokens:
                small.append((f, e - s, tuple(hp), text[c0:c1]))
    return {"files": len(files), "chunks": chunks, "small": small}


def main(argv: Sequence[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("patterns", nargs="+", help="glob patterns of source files ('latechunk/**/*.py')")
    ap.add_argument("--strategy", default="code", help="a code SPEC (default: code, 256/24)")
    ap.add_argument("--model", default=None, help="tokenizer's model (default: the bundled all-MiniLM-L6-v2)")
    ap.add_argument("--show", type=int, default=0, help="print the first N small chunks")
    args = ap.parse_args(argv)
    res = count(args.patterns, args.strategy, args.model)
    print(f"{args.strategy}: {res['files']} files, {res['chunks']} chunks, {len(res['small'])} under min_tokens")
    for f, n, hp, text in res["small"][: args.show]:
        print(f"--- {f} ({n} tokens) {list(hp)}\n{text!r}"[:300])
    return res


if __name__ == "__main__":
    main()
