"""Dynamic batching across concurrent requests: one asyncio queue in front of the encoder.

Each request becomes a :class:`Job` on :class:`Batcher`'s queue. One dispatcher task takes the job at the head and
every job queued behind it up to ``batch_requests`` jobs and ``batch_tokens`` tokens, runs them in the encoder's
one worker thread (so the event loop keeps accepting requests while the model runs) and hands each job's result to
its own future. Encoding jobs (:class:`EncodeJob`: tokenizations, a macro window and a ``finish`` that pools one
request's token states) are merged: the tokenizations of every merged job that share a macro window go through one
:meth:`Encoder.token_states <latechunk.encoder.Encoder.token_states>` call, whose length-sorted token-budget forward
batches mix the requests (batches never change a vector: they are padding-invariant). Other jobs
(:class:`CallJob`: ``/v1/chunk``, ``/v1/search``) run alone, in turn.

A job whose future is already done when its turn comes (its client timed out or went away) is dropped unrun; a
job's result for a client that went away is dropped; so a disconnected client never stalls the queue. Where a
merged batch raises, each of its jobs is run again alone, so one bad request fails alone.

Tests: ``tests/serve/test_serve_bad_input.py`` (queue, timeouts, disconnects),
``tests/serve/test_serve_http.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("latechunk.serve")


class QueueFull(Exception):
    """The queue holds ``max_queue`` jobs: the request is refused (429)."""


class Draining(Exception):
    """The server is shutting down: no new job is taken (503)."""


@dataclass(eq=False)
class EncodeJob:
    """Token states wanted for some tokenizations, then pooled by ``finish``.

    Attributes:
        toks: The tokenizations (:class:`~latechunk.types.Tokenization`), each one model input or several macro
            windows.
        window: The :class:`~latechunk.macro_window.MacroWindow` they are encoded with; jobs with equal windows
            share forward batches.
        finish: ``finish(states) -> result``, called in the worker thread with one (n_tokens_i, dim) float32
            tensor per tokenization, in order.
        tokens: Tokens of the job (the sum of ``len(tok)``), for the batch budget.
        kind: The endpoint's name, for the metrics.
    """

    toks: Sequence[Any]
    window: Any
    finish: Callable[[list], Any]
    tokens: int
    kind: str = "embeddings"
    future: asyncio.Future | None = field(default=None, repr=False)


@dataclass(eq=False)
class CallJob:
    """A function run alone in the worker thread (chunking, searching): ``fn()``'s return value is the result.

    Attributes:
        fn: The function.
        tokens: Its tokens (for the metrics).
        kind: The endpoint's name, for the metrics.
    """

    fn: Callable[[], Any]
    tokens: int = 0
    kind: str = "call"
    future: asyncio.Future | None = field(default=None, repr=False)


class Batcher:
    """The queue in front of one encoder and the worker thread that runs it.

    Args:
        encoder: The :class:`~latechunk.encoder.Encoder` (used by the worker thread only).
        batch_requests: Jobs merged into one encoder call at most (1: one request at a time).
        batch_tokens: Tokens merged into one call at most (a larger job runs alone).
        max_queue: Jobs waiting at most; :meth:`submit` raises :class:`QueueFull` past it.
        metrics: A :class:`~latechunk.serve.metrics.Metrics` (or None).
    """

    def __init__(self, encoder, batch_requests: int, batch_tokens: int, max_queue: int, metrics=None) -> None:
        self.encoder = encoder
        self.batch_requests = batch_requests
        self.batch_tokens = batch_tokens
        self.max_queue = max_queue
        self.metrics = metrics
        self.draining = False
        self._queue: asyncio.Queue | None = None
        self._carry: EncodeJob | CallJob | None = None
        self._task: asyncio.Task | None = None
        self._busy = 0
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="latechunk-encoder")

    # ------------------------------------------------------------------ the event loop's side
    def start(self) -> None:
        """Start the dispatcher task on the running loop."""
        self._queue = asyncio.Queue()
        self._task = asyncio.get_running_loop().create_task(self._dispatch(), name="latechunk-batcher")

    @property
    def depth(self) -> int:
        """Jobs waiting (not yet running)."""
        return (self._queue.qsize() if self._queue is not None else 0) + (self._carry is not None)

    def submit(self, job: EncodeJob | CallJob) -> asyncio.Future:
        """Queue a job.

        Args:
            job: The job.

        Returns:
            The future of its result (cancel it to drop the job if it has not begun).

        Raises:
            Draining: after :meth:`close` began.
            QueueFull: when ``max_queue`` jobs wait.
            RuntimeError: before :meth:`start`.
        """
        if self.draining:
            raise Draining()
        if self._queue is None:
            raise RuntimeError("the batcher is not started")
        if self.depth >= self.max_queue:
            raise QueueFull()
        job.future = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(job)
        self._gauge()
        return job.future

    async def close(self, timeout: float = 30.0) -> None:
        """Take no new job, let the queued and running ones finish (up to ``timeout`` seconds), stop the worker."""
        self.draining = True
        t_end = time.monotonic() + timeout
        while (self.depth or self._busy) and time.monotonic() < t_end:
            await asyncio.sleep(0.02)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        for job in self._drain_queue():
            if not job.future.done():
                job.future.set_exception(Draining())
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _drain_queue(self) -> list:
        jobs = [self._carry] if self._carry is not None else []
        self._carry = None
        while self._queue is not None and not self._queue.empty():
            jobs.append(self._queue.get_nowait())
        return jobs

    def _gauge(self) -> None:
        if self.metrics is not None:
            self.metrics.queue_depth.set(self.depth)

    async def _next(self) -> EncodeJob | CallJob:
        if self._carry is not None:
            job, self._carry = self._carry, None
            return job
        return await self._queue.get()

    async def _dispatch(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            head = await self._next()
            if head.future.done():  # its client is gone (timed out, disconnected): never run
                self._gauge()
                continue
            jobs, tokens = [head], head.tokens
            if isinstance(head, EncodeJob):
                while len(jobs) < self.batch_requests and (self._carry is not None or not self._queue.empty()):
                    job = self._carry if self._carry is not None else self._queue.get_nowait()
                    self._carry = None
                    if job.future.done():
                        continue
                    if not isinstance(job, EncodeJob) or tokens + job.tokens > self.batch_tokens:
                        self._carry = job  # the head of the next turn
                        break
                    jobs.append(job)
                    tokens += job.tokens
            self._gauge()
            self._busy += 1
            try:
                t0 = time.perf_counter()
                results = await loop.run_in_executor(self._executor, self._run, jobs)
                if self.metrics is not None:
                    self.metrics.observe_batch(jobs, tokens, time.perf_counter() - t0)
                for job, (ok, value) in zip(jobs, results):
                    if job.future.done():  # the client went away meanwhile: the result is dropped
                        continue
                    if ok:
                        job.future.set_result(value)
                    else:
                        job.future.set_exception(value)
            except asyncio.CancelledError:
                for job in jobs:
                    if not job.future.done():
                        job.future.set_exception(Draining())
                raise
            finally:
                self._busy -= 1

    # ------------------------------------------------------------------ the worker thread's side
    def _run(self, jobs: list) -> list[tuple[bool, Any]]:
        """Run one turn's jobs; ``(True, result)`` or ``(False, exception)`` per job, in order."""
        if len(jobs) == 1 or not all(isinstance(j, EncodeJob) for j in jobs):
            return [self._run_one(j) for j in jobs]
        try:
            return [(True, r) for r in self._encode(jobs)]
        except Exception:
            log.exception("a merged batch of %d requests failed; running each alone", len(jobs))
            return [self._run_one(j) for j in jobs]

    def _run_one(self, job) -> tuple[bool, Any]:
        try:
            return True, (job.fn() if isinstance(job, CallJob) else self._encode([job])[0])
        except Exception as err:  # noqa: BLE001  (handed to the request's handler, which answers for it)
            return False, err

    def _encode(self, jobs: Sequence[EncodeJob]) -> list:
        """Token states of every job's tokenizations, one ``token_states`` call per macro window; each job's
        ``finish`` on its own states."""
        states: dict[int, list] = {}
        groups: dict[tuple, list[int]] = {}
        for k, job in enumerate(jobs):
            groups.setdefault((job.window.size, job.window.overlap), []).append(k)
        for ks in groups.values():
            window = jobs[ks[0]].window
            toks = [t for k in ks for t in jobs[k].toks]
            out: list = [None] * len(toks)
            for bucket in length_buckets([min(len(t), window.size) for t in toks]):
                for i, s in zip(bucket, self.encoder.token_states([toks[i] for i in bucket], window)):
                    out[i] = s
            at = 0
            for k in ks:
                n = len(jobs[k].toks)
                states[k] = out[at : at + n]
                at += n
        return [job.finish(states[k]) for k, job in enumerate(jobs)]


#: a length bucket's shortest input is at least this share of its longest (or within ``BUCKET_SLACK`` tokens)
BUCKET_SHARE = 0.5
BUCKET_SLACK = 8


def length_buckets(lengths: Sequence[int]) -> list[list[int]]:
    """Indices grouped by similar length, longest first, so that merging requests of different sizes pads little.

    The encoder pads a forward batch to its longest input; one paragraph beside fifteen sentences would make the
    batch mostly padding (measured: merged batches of mixed sizes ran at half the speed of one request at a time on
    a 2-core CPU). Each bucket goes through its own ``token_states`` call (which cuts it into token-budget batches):
    its inputs are within :data:`BUCKET_SHARE` of its longest, or :data:`BUCKET_SLACK` tokens.

    Args:
        lengths: Tokens of each model input (a long document: its macro window's size).

    Returns:
        Buckets of indices into ``lengths``; every index once.
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    buckets: list[list[int]] = []
    for i in order:
        if buckets:
            top = lengths[buckets[-1][0]]
            if lengths[i] >= BUCKET_SHARE * top or top - lengths[i] <= BUCKET_SLACK:
                buckets[-1].append(i)
                continue
        buckets.append([i])
    return buckets
