#!/usr/bin/env python3
"""A bounded load client for an OpenAI-style embeddings server (issue 39): asyncio + httpx, N concurrent clients,
a fixed list of requests, every response checked against its own request.

Each request is a list of text ids into a pool of texts whose reference vectors are known (computed once by the
caller, e.g. ``Encoder.encode``). A response counts as correct when it has one vector per input, in order, each
within ``cosine >= min_cos`` of its text's reference vector **and** nearer to it than to any other text of the pool
(so a result routed to the wrong request is caught, not just a wrong count). Errors (HTTP status, transport),
lost results (missing or extra vectors) and misrouted ones are counted apart; latencies per request give p50/p99.

Used by ``scripts/bench_serve.py`` for latechunk and its peer alike (the same client code for both); on its own::

    python3 scripts/load_serve.py --url http://127.0.0.1:8000 --clients 64 --requests 5000

(then the pool is encoded here with latechunk's bundled MiniLM, fp32, as the reference).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class LoadResult:
    """What one load run measured."""

    requests: int = 0
    inputs: int = 0
    tokens: int = 0
    seconds: float = 0.0
    errors: int = 0
    lost: int = 0
    misrouted: int = 0
    latencies: list[float] = field(default_factory=list)
    first_error: str = ""
    max_abs_diff: float = 0.0

    @property
    def rps(self) -> float:
        """Requests per second."""
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def ips(self) -> float:
        """Inputs (vectors) per second."""
        return self.inputs / self.seconds if self.seconds else 0.0

    def pct(self, q: float) -> float:
        """The q-th percentile of the request latencies, in milliseconds."""
        return float(np.percentile(self.latencies, q) * 1000) if self.latencies else float("nan")

    def line(self, name: str) -> str:
        """One markdown table row."""
        return (f"| {name} | {self.requests:,} | {self.inputs:,} | {self.seconds:.1f} | {self.rps:.1f} | {self.ips:.1f} "
                f"| {self.pct(50):.0f} | {self.pct(99):.0f} | {self.errors} | {self.lost} | {self.misrouted} |")


HEADER = ("| run | requests | inputs | seconds | requests/s | inputs/s | p50 ms | p99 ms | errors | lost | misrouted |\n"
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")


def sentence_pool(folder: Path, n: int, seed: int = 0) -> list[str]:
    """``n`` distinct texts of mixed sizes cut from the markdown files of ``folder``: one sentence (60%), two or
    three sentences (30%), or a paragraph of up to 600 characters (10%)."""
    sentences: list[str] = []
    for f in sorted(folder.glob("*.md")):
        text = re.sub(r"\s+", " ", f.read_text(encoding="utf-8"))
        sentences += [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if 20 <= len(s.strip()) <= 400]
    rng = random.Random(seed)
    out, seen = [], set()
    while len(out) < n:
        k = rng.random()
        i = rng.randrange(len(sentences) - 12)
        if k < 0.6:
            t = sentences[i]
        elif k < 0.9:
            t = " ".join(sentences[i : i + rng.randint(2, 3)])
        else:
            t = " ".join(sentences[i : i + 12])[:600]
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


def mixed_requests(n_texts: int, n: int, seed: int = 0) -> list[list[int]]:
    """``n`` requests of text ids: one input (70%), two to four (27%) or 8-16 (3%)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.random()
        m = 1 if k < 0.7 else rng.randint(2, 4) if k < 0.97 else rng.randint(8, 16)
        out.append([rng.randrange(n_texts) for _ in range(m)])
    return out


def _decode(item) -> np.ndarray:
    e = item["embedding"]
    return np.frombuffer(base64.b64decode(e), "<f4") if isinstance(e, str) else np.asarray(e, np.float32)


async def run_load(url: str, texts: list[str], refs: np.ndarray, requests: list[list[int]], clients: int,
                   path: str = "/v1/embeddings", model: str | None = None, extra: dict | None = None,
                   min_cos: float = 0.999, timeout: float = 300.0) -> LoadResult:
    """Send ``requests`` with ``clients`` concurrent clients; check every answer against its request.

    Args:
        url: The server (``http://127.0.0.1:PORT``).
        texts: The pool of texts.
        refs: (len(texts), dim) unit reference vectors.
        requests: Text ids per request.
        clients: Concurrent clients (each one sends its next request when its answer is in).
        path: The embeddings route.
        model: The ``model`` field (None: left out).
        extra: Other fields of every request (``{"encoding_format": "base64"}``).
        min_cos: The least cosine to the reference that counts as correct.
        timeout: Seconds per request.

    Returns:
        The :class:`LoadResult`.
    """
    import httpx

    res = LoadResult()
    unit = refs / np.linalg.norm(refs, axis=1, keepdims=True)
    queue: asyncio.Queue = asyncio.Queue()
    for r in requests:
        queue.put_nowait(r)
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(http: httpx.AsyncClient) -> None:
        while not queue.empty():
            ids = queue.get_nowait()
            body = {"input": [texts[i] for i in ids], **({"model": model} if model else {}), **(extra or {})}
            t0 = time.perf_counter()
            try:
                resp = await http.post(path, content=json.dumps(body), headers={"content-type": "application/json"})
                ok = resp.status_code == 200
                data = resp.json().get("data", []) if ok else []
            except (httpx.HTTPError, ValueError) as err:
                ok, data, resp = False, [], None
                res.first_error = res.first_error or f"{type(err).__name__}: {err}"
            res.latencies.append(time.perf_counter() - t0)
            res.requests += 1
            if not ok:
                res.errors += 1
                if resp is not None:
                    res.first_error = res.first_error or f"HTTP {resp.status_code}: {resp.text[:200]}"
                continue
            if len(data) != len(ids):
                res.lost += abs(len(ids) - len(data))
                continue
            got = np.stack([_decode(d) for d in sorted(data, key=lambda d: d["index"])])
            got = got / np.linalg.norm(got, axis=1, keepdims=True)
            cos = got @ unit.T  # (inputs, pool): each answer against every text
            want = cos[np.arange(len(ids)), ids]
            best = cos.max(axis=1)
            res.misrouted += int(((want < min_cos) | (want + 1e-6 < best)).sum())
            res.max_abs_diff = max(res.max_abs_diff, float(np.abs(got - unit[ids]).max()))
            res.inputs += len(ids)

    async with httpx.AsyncClient(base_url=url, timeout=timeout, limits=limits) as http:
        t0 = time.perf_counter()
        await asyncio.gather(*(client(http) for _ in range(clients)))
        res.seconds = time.perf_counter() - t0
    return res


def main() -> None:  # pragma: no cover
    """The command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--path", default="/v1/embeddings")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--requests", type=int, default=5000)
    ap.add_argument("--texts", type=int, default=400)
    ap.add_argument("--data", default="../shared/data/chroma_chunking_eval/corpora")
    args = ap.parse_args()
    from latechunk.encoder import Encoder

    texts = sentence_pool(Path(args.data), args.texts)
    refs = Encoder(device="cpu", dtype="float32").encode(texts)
    res = asyncio.run(run_load(args.url, texts, refs, mixed_requests(len(texts), args.requests), args.clients,
                               args.path))
    print(HEADER)
    print(res.line(f"{args.clients} clients"))


if __name__ == "__main__":  # pragma: no cover
    main()
