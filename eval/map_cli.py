"""``python -m latechunk.eval.map_cli --out DIR REPORT_DIR...``: the late-chunking map of report folders.

Several ``latechunk compare`` report folders of one dataset and model (e.g. one run per window overlap) are read
back (:func:`latechunk.eval.report.load_result`), merged (:func:`latechunk.eval.plots.merge_results`) and drawn:
``map.png`` (late − naive per chunk size x macro window x overlap), ``frontier.png`` (quality vs encoder cost)
and ``map.md`` (the same numbers as tables). Tests: ``tests/eval/test_eval_plots.py``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from .plots import has_map, map_markdown, merge_results, write_frontier, write_map

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m latechunk.eval.map_cli --out DIR REPORT_DIR...``: the map of one or more report folders.

    Writes ``map.png``, ``frontier.png`` and ``map.md`` into ``--out`` (created) from the merged report folders
    (:func:`merge_results`).

    Args:
        argv: The arguments (default ``sys.argv[1:]``).

    Returns:
        0 on success.

    Raises:
        SystemExit: on bad arguments (argparse) or folders that cannot be merged or drawn (the message says why).
    """
    from .report import load_result  # the report module draws the map too: import it only here

    ap = argparse.ArgumentParser(prog="python -m latechunk.eval.map_cli",
                                 description="Draw the late − naive map and the quality/cost frontier of one or "
                                             "more `latechunk compare` report folders of one dataset and model.")
    ap.add_argument("folders", nargs="+", help="report folders written by latechunk compare")
    ap.add_argument("--out", required=True, help="folder for map.png, frontier.png and map.md")
    args = ap.parse_args(argv)
    try:
        merged = merge_results([load_result(f) for f in args.folders])
    except (OSError, KeyError, ValueError) as err:
        ap.exit(2, f"error: {err}\n")
    if not has_map(merged):
        ap.exit(2, "error: nothing to map: the folders need late and naive and more than one late pass\n")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_map(merged, out / "map.png")
    write_frontier(merged, out / "frontier.png")
    (out / "map.md").write_text(map_markdown(merged, images=True) + "\n", encoding="utf-8")
    print(f"wrote {out / 'map.png'}, {out / 'frontier.png'}, {out / 'map.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
