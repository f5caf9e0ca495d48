#!/usr/bin/env python3
"""``latechunk serve`` under load, beside itself without batching and beside infinity-emb (issue 39).

Every server is a real process on a free loopback port, driven by the same client (``scripts/load_serve.py``:
asyncio + httpx, each response checked against its request). Phases:

1. **load**: ``latechunk serve`` (defaults: dynamic batching), ``--clients`` concurrent clients (64),
   ``--requests`` requests (5,000) of mixed sizes (one input 70%, 2-4 inputs 27%, 8-16 inputs 3%; texts of one
   sentence 60%, two or three 30%, a paragraph of up to 600 characters 10%): throughput, p50/p99, errors, lost and misrouted results.
2. **batching**: concurrency 16, ``--ratio-requests`` one-input requests (the pool's texts, mixed sizes), against ``latechunk serve`` (batching)
   and ``latechunk serve --max-batch-requests 1`` (one request at a time), rounds interleaved (B, 1, B, 1, ...),
   medians; the ratio printed.
3. **peer** (``--infinity BIN``): ``infinity_emb v2`` (torch engine, CPU, float32) serving the same bundled
   all-MiniLM-L6-v2 from its local folder, and latechunk again, interleaved, the same requests and client; the
   ratio printed.
4. **late**: ``--documents`` documents cut into consecutive chunks of 3 sentences; the same chunks sent as plain
   embeddings (each chunk encoded alone) and with ``late_chunking: true`` (one pass per document), concurrency 16.

Both servers run in float32 (``LATECHUNK_CPU_DTYPE=float32``; infinity ``--dtype float32``). The machine is
whatever runs this (``nproc`` and the load average are printed: on a shared machine the ratios, interleaved, say
more than the absolute numbers). Writes nothing; prints markdown to paste into ``results/serve.md``::

    python3 scripts/bench_serve.py --infinity /tmp/infinity-venv/bin/infinity_emb
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_serve import HEADER, mixed_requests, run_load, sentence_pool

REPO = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proc:
    """A server process on a free port, waited for until ``probe`` answers 200."""

    def __init__(self, argv: list[str], probe: str, port: int, env: dict | None = None, log: str = "") -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log = open(log or os.devnull, "w")  # noqa: SIM115
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
        t_end = time.monotonic() + 300
        while time.monotonic() < t_end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{argv[0]} exited with {self.proc.returncode} (log: {log})")
            try:
                with urllib.request.urlopen(self.url + probe, timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"{argv} did not answer {probe}")

    def stop(self) -> None:
        """SIGTERM, then wait."""
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def latechunk_server(*extra: str) -> Proc:
    """``latechunk serve`` (fp32, quiet) on a free port."""
    port = _free_port()
    return Proc([sys.executable, "-m", "latechunk", "serve", "--port", str(port), "--device", "cpu", "--quiet",
                 "--max-request-tokens", "1000000", *extra], "/ready", port, {"LATECHUNK_CPU_DTYPE": "float32"},
                f"/tmp/bench_serve_latechunk_{port}.log")


def infinity_server(binary: str, model_path: str) -> tuple[Proc, str]:
    """``infinity_emb v2`` (torch engine, CPU, float32) serving ``model_path``; its embeddings route."""
    port = _free_port()
    p = Proc([binary, "v2", "--model-id", model_path, "--engine", "torch", "--device", "cpu", "--dtype", "float32",
              "--port", str(port), "--host", "127.0.0.1", "--log-level", "warning", "--no-model-warmup"], "/health", port,
             {"HF_HUB_OFFLINE": "1", "INFINITY_ANONYMOUS_USAGE_STATS": "0", "DO_NOT_TRACK": "1"},
             f"/tmp/bench_serve_infinity_{port}.log")
    for route in ("/embeddings", "/v1/embeddings"):
        req = urllib.request.Request(p.url + route, data=b'{"input": ["probe"], "model": "' + model_path.encode()
                                     + b'"}', headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                if r.status == 200:
                    return p, route
        except OSError:
            continue
    p.stop()
    raise RuntimeError("infinity answered neither /embeddings nor /v1/embeddings")


def run(url, texts, refs, reqs, clients, **kw):
    """One load run (asyncio)."""
    return asyncio.run(run_load(url, texts, refs, reqs, clients, **kw))


def machine() -> str:
    """nproc, CPU, load average and versions."""
    import fastapi
    import torch
    import transformers
    import uvicorn

    import latechunk

    with open("/proc/cpuinfo", encoding="utf-8") as f:
        cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")
    la = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"nproc {os.cpu_count()}, {cpu}, load average {la}; Python {platform.python_version()}, torch "
            f"{torch.__version__}, transformers {transformers.__version__}, fastapi {fastapi.__version__}, uvicorn "
            f"{uvicorn.__version__}, latechunk {latechunk.__version__}")


def late_documents(folder: Path, n: int, per_doc: int = 6) -> list[list[str]]:
    """``n`` documents, each ``per_doc`` consecutive chunks of three sentences (the chunks of one document)."""
    text = " ".join(re.sub(r"\s+", " ", f.read_text(encoding="utf-8")) for f in sorted(folder.glob("*.md")))
    sents = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if 20 <= len(s.strip()) <= 300]
    docs, at = [], 0
    for _ in range(n):
        docs.append([" ".join(sents[at + 3 * k : at + 3 * k + 3]) for k in range(per_doc)])
        at += 3 * per_doc
    return docs


def main() -> None:
    """Run the phases asked for and print their tables."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--requests", type=int, default=5000)
    ap.add_argument("--ratio-requests", type=int, default=600)
    ap.add_argument("--ratio-rounds", type=int, default=2)
    ap.add_argument("--peer-requests", type=int, default=1500)
    ap.add_argument("--documents", type=int, default=60)
    ap.add_argument("--texts", type=int, default=400)
    ap.add_argument("--infinity", help="the infinity_emb executable (its own venv); without it no peer phase")
    ap.add_argument("--phases", default="load,batching,peer,late")
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "chroma_chunking_eval" / "corpora"))
    args = ap.parse_args()
    phases = set(args.phases.split(","))

    from latechunk.encoder import Encoder
    from latechunk.models import resolve_model_path

    enc = Encoder(device="cpu", dtype="float32")
    texts = sentence_pool(Path(args.data), args.texts)
    refs = enc.encode(texts)
    n_tok = np.array([len(enc.plain_tokenizer(t)) for t in texts])
    print(f"machine: {machine()}\n")

    if "load" in phases:
        reqs = mixed_requests(len(texts), args.requests, seed=1)
        srv = latechunk_server()
        try:
            res = run(srv.url, texts, refs, reqs, args.clients)
        finally:
            srv.stop()
        toks = sum(int(n_tok[r].sum()) for r in reqs)
        print(f"## load: {args.clients} clients, {args.requests:,} mixed requests\n\n{HEADER}")
        print(res.line("latechunk serve"))
        print(f"\ntokens {toks:,} ({toks / res.seconds:,.0f} tokens/s); max |vector - Encoder.encode| "
              f"{res.max_abs_diff:.2e}; first error: {res.first_error or 'none'}\n")

    if "batching" in phases:
        one_sentence = [i for i, t in enumerate(texts) if not re.search(r"[.!?] ", t)]
        sets = {"one-sentence": [[one_sentence[i % len(one_sentence)]] for i in range(args.ratio_requests)],
                "mixed-size": [[i % len(texts)] for i in range(args.ratio_requests)]}
        runs: dict = {}
        srv_on, srv_off = latechunk_server(), latechunk_server("--max-batch-requests", "1")
        try:
            run(srv_on.url, texts, refs, sets["mixed-size"][:64], 16)  # warm both
            run(srv_off.url, texts, refs, sets["mixed-size"][:64], 16)
            for _ in range(args.ratio_rounds):
                for name, reqs in sets.items():
                    runs.setdefault((name, "on"), []).append(run(srv_on.url, texts, refs, reqs, 16))
                    runs.setdefault((name, "off"), []).append(run(srv_off.url, texts, refs, reqs, 16))
        finally:
            srv_on.stop()
            srv_off.stop()
        print(f"## batching: concurrency 16, {args.ratio_requests} one-input requests per run, {args.ratio_rounds} "
              f"rounds interleaved\n\n{HEADER}")
        for name in sets:
            for k in range(args.ratio_rounds):
                print(runs[(name, "on")][k].line(f"{name}: dynamic batching, round {k + 1}"))
                print(runs[(name, "off")][k].line(f"{name}: --max-batch-requests 1, round {k + 1}"))
        print()
        for name in sets:
            ratio = (statistics.median(r.rps for r in runs[(name, "on")])
                     / statistics.median(r.rps for r in runs[(name, "off")]))
            print(f"{name} requests: dynamic batching / one request at a time: **{ratio:.2f}x** requests/s (medians)")
        print()

    if "peer" in phases and args.infinity:
        reqs = mixed_requests(len(texts), args.peer_requests, seed=2)
        model_path = str(resolve_model_path(None))
        rows = []
        try:
            peer, route = infinity_server(args.infinity, model_path)
        except (RuntimeError, OSError) as err:
            print(f"## peer\n\ninfinity-emb did not start: {err}\n")
        else:
            srv = latechunk_server()
            try:
                run(srv.url, texts, refs, reqs[:64], 16)
                run(peer.url, texts, refs, reqs[:64], 16, path=route, model=model_path)
                for _ in range(2):
                    rows.append(("latechunk serve", run(srv.url, texts, refs, reqs, args.clients)))
                    rows.append(("infinity-emb", run(peer.url, texts, refs, reqs, args.clients, path=route,
                                                     model=model_path)))
            finally:
                srv.stop()
                peer.stop()
            print(f"## peer: {args.clients} clients, {len(reqs):,} mixed requests, 2 rounds interleaved\n\n{HEADER}")
            for name, r in rows:
                print(r.line(name))
            lc = statistics.median(r.rps for n, r in rows if n == "latechunk serve")
            inf = statistics.median(r.rps for n, r in rows if n == "infinity-emb")
            print(f"\nlatechunk / infinity-emb: **{lc / inf:.2f}x** requests/s (medians)\n")

    if "late" in phases:
        docs = late_documents(Path(args.data), args.documents)
        pool = [c for d in docs for c in d]
        prefs = enc.encode(pool)
        import httpx

        srv = latechunk_server()
        try:
            plain = run(srv.url, pool, prefs, [list(range(6 * k, 6 * k + 6)) for k in range(len(docs))], 16)
            t0 = time.perf_counter()

            async def late_all() -> list:
                async with httpx.AsyncClient(base_url=srv.url, timeout=300) as http:
                    sem = asyncio.Semaphore(16)

                    async def one(d):
                        async with sem:
                            r = await http.post("/v1/embeddings", json={"input": d, "late_chunking": True})
                            return r.status_code, r.json()

                    return await asyncio.gather(*(one(d) for d in docs))

            late = asyncio.run(late_all())
            late_s = time.perf_counter() - t0
        finally:
            srv.stop()
        ok = sum(1 for s, b in late if s == 200 and len(b["data"]) == 6)
        toks = sum(b["usage"]["prompt_tokens"] for s, b in late if s == 200)
        print(f"## late chunking vs plain embeddings: {len(docs)} documents x 6 chunks, concurrency 16\n")
        print("| run | requests | chunks | seconds | chunks/s | model tokens | tokens/s |\n| --- | ---: | ---: | ---: "
              "| ---: | ---: | ---: |")
        ptoks = sum(len(enc.plain_tokenizer(c)) for c in pool)
        print(f"| plain (each chunk alone) | {plain.requests} | {plain.inputs} | {plain.seconds:.1f} | "
              f"{plain.ips:.1f} | {ptoks:,} | {ptoks / plain.seconds:,.0f} |")
        print(f"| late_chunking (one pass per document) | {len(docs)} ({ok} ok) | {6 * ok} | {late_s:.1f} | "
              f"{6 * ok / late_s:.1f} | {toks:,} | {toks / late_s:,.0f} |")
        print(f"\nplain errors {plain.errors}, misrouted {plain.misrouted}\n")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
