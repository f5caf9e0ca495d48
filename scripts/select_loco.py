"""Leave-one-corpus-out selection over `latechunk compare` results on Chroma (results/fused.md): for each of
the five corpora, choose among every system of the given result folders the one with the best ``--metric`` on the
other four corpora's questions (among those whose ``--floor-metric`` there is at least ``--floor``), score the
chosen system on the held-out corpus, and pool the five folds' questions.

    python3 scripts/select_loco.py results/fused/chroma_xquad_3ep_sweep results/fused/chroma_xquad_3ep \\
        --metric SpanRecall@5 --floor-metric SpanIoU@5 --floor 7.2

A question's corpus is the ``corpus_id`` of its row in the Chroma questions file (``questions_df.csv``; query id =
row number). Values in % (means over questions). A system is ``folder|strategy|mode|window``.
"""

from __future__ import annotations

import argparse
import csv
import gzip
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = REPO.parent / "shared" / "data" / "chroma_chunking_eval" / "questions_df.csv"


def _rows(folder: Path):
    path = folder / "per_query.csv.gz"
    opener = gzip.open if path.is_file() else open
    with opener(path if path.is_file() else folder / "per_query.csv", "rt", encoding="utf-8", newline="") as fh:
        yield from csv.DictReader(fh)


def select(folders: Sequence[Path], questions: Path = QUESTIONS, metric: str = "SpanRecall@5",
           floor_metric: str = "SpanIoU@5", floor: float = 0.0) -> dict:
    """The leave-one-corpus-out selection (module docstring).

    Args:
        folders: `latechunk compare --out` folders of Chroma runs (``per_query.csv`` or ``.csv.gz``).
        questions: The Chroma questions file (its ``corpus_id`` column).
        metric: The metric maximised on the four training corpora, and reported.
        floor_metric: A metric the chosen system must reach on them (in %).
        floor: That floor (in %; 0: none).

    Returns:
        ``{"picks": {corpus: system}, "pooled": {metric: %, floor_metric: %}, "questions": n}``.

    Raises:
        ValueError: if no system reaches the floor on some fold's training corpora.
    """
    with open(questions, encoding="utf-8", newline="") as fh:
        corpus_of = {str(i): r["corpus_id"] for i, r in enumerate(csv.DictReader(fh))}
    scores: dict[str, dict[str, tuple[float, float]]] = defaultdict(dict)  # system -> query -> (metric, floor)
    for folder in folders:
        for r in _rows(Path(folder)):
            system = f"{Path(folder).name}|{r['strategy']}|{r['mode']}|w{r['window']}"
            scores[system][r["query_id"]] = (float(r[metric]), float(r[floor_metric]))
    corpora = sorted(set(corpus_of.values()))

    def mean(system: str, keep) -> tuple[float, float]:
        vals = [v for q, v in scores[system].items() if keep(corpus_of[q])]
        return (100 * sum(v[0] for v in vals) / len(vals), 100 * sum(v[1] for v in vals) / len(vals))

    picks, pooled = {}, []
    for c in corpora:
        train = {s: mean(s, lambda x, c=c: x != c) for s in scores}
        ok = [s for s, (_, f) in train.items() if f >= floor]
        if not ok:
            raise ValueError(f"no system reaches {floor_metric} >= {floor} without {c}")
        picks[c] = max(ok, key=lambda s: train[s][0])
        pooled += [v for q, v in scores[picks[c]].items() if corpus_of[q] == c]
    return {"picks": picks, "questions": len(pooled),
            "pooled": {metric: 100 * sum(v[0] for v in pooled) / len(pooled),
                       floor_metric: 100 * sum(v[1] for v in pooled) / len(pooled)}}


def main(argv: Sequence[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="+", type=Path, help="compare --out folders of Chroma runs")
    ap.add_argument("--questions", type=Path, default=QUESTIONS, help="Chroma's questions_df.csv")
    ap.add_argument("--metric", default="SpanRecall@5")
    ap.add_argument("--floor-metric", default="SpanIoU@5")
    ap.add_argument("--floor", type=float, default=0.0, help="in %% (e.g. 7.2)")
    args = ap.parse_args(argv)
    res = select(args.folders, args.questions, args.metric, args.floor_metric, args.floor)
    for c, s in res["picks"].items():
        print(f"{c}: {s}")
    print(f"pooled over {res['questions']} questions: " + ", ".join(f"{k} {v:.2f}" for k, v in res["pooled"].items()))
    return res


if __name__ == "__main__":
    main()
