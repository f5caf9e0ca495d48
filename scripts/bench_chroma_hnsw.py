"""Recall@5 of a Chroma export (HNSW, approximate) against FAISS flat (exact), per HNSW setting.

Each setting is exported by `latechunk.export.export_folder` in its own process, then queried from a fresh
`chromadb.PersistentClient` in another process (as a user would open it), with the credit-card question and every
Chroma evaluation question. Prints recall@5 against FAISS flat's top 5, whether FAISS's top hit is in Chroma's
top 5, and milliseconds per query (batched).

    python scripts/bench_chroma_hnsw.py out/chroma '["default", {"max_neighbors": 16, "ef_construction": 100, "ef_search": 100}]'

"default" is the export's own sizing (`latechunk.export.chroma_hnsw`); a dict overrides it (Chroma's own defaults:
16 / 100 / 100). Results are recorded in results/chroma_hnsw.md.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from latechunk.encoder import Encoder
from latechunk.eval.datasets import data_root
from latechunk.output import OutputFolder

CREDIT = "How much is the administration cutting credit card late fees to?"


def main(folder: str, settings: list) -> None:
    index = OutputFolder(folder).read_index()
    with open(data_root() / "chroma_chunking_eval" / "questions_df.csv", newline="", encoding="utf-8") as f:
        questions = [CREDIT] + [r["question"] for r in csv.DictReader(f)]
    xq = Encoder("all-MiniLM-L6-v2", device="cpu").encode_query(questions, normalize=True).astype(np.float32)
    _, top = index.search(xq, 5)
    work = Path(tempfile.mkdtemp(prefix="bench_chroma_hnsw"))
    np.save(work / "xq.npy", xq, allow_pickle=False)
    print(f"{len(questions)} queries, {index.ntotal} vectors")
    for i, hnsw in enumerate(settings):
        db = work / f"db{i}"
        arg = None if hnsw == "default" else hnsw
        export = ("import warnings; warnings.filterwarnings('ignore')\n"
                  "from latechunk.export import export_folder\n"
                  f"export_folder({folder!r}, 'chroma:{db}', hnsw={arg!r})")
        subprocess.run([sys.executable, "-c", export], check=True)
        query = ("import warnings, json, time; warnings.filterwarnings('ignore')\n"
                              "import numpy as np, chromadb\n"
                              "from chromadb.config import Settings\n"
                              f"c = chromadb.PersistentClient({str(db)!r}, settings=Settings(anonymized_telemetry=False))"
                              ".get_collection('latechunk')\n"
                              f"xq = np.load({str(work / 'xq.npy')!r}, allow_pickle=False)\n"
                              "t = time.perf_counter(); r = c.query(query_embeddings=xq, n_results=5)\n"
                              "print(1000 * (time.perf_counter() - t) / len(xq))\n"
                              "print(json.dumps([[m['vector_id'] for m in ms] for ms in r['metadatas']]))\n"
                              "print(json.dumps(c.configuration_json.get('hnsw')))")
        out = subprocess.run([sys.executable, "-c", query], check=True, capture_output=True,
                             text=True).stdout.strip().splitlines()
        ms, got, used = float(out[-3]), json.loads(out[-2]), out[-1]
        recall = np.mean([len(set(g) & set(t.tolist())) / 5 for g, t in zip(got, top)])
        top1 = np.mean([t[0] in g for g, t in zip(got, top)])
        print(f"{hnsw!s:<60} hnsw={used} recall@5 {recall:.4f} top1-in-top5 {top1:.4f} "
              f"credit-card top hit found {bool(top[0][0] in got[0])} {ms:.2f} ms/query")


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2]) if len(sys.argv) > 2 else
         ["default", {"max_neighbors": 16, "ef_construction": 100, "ef_search": 100}])
