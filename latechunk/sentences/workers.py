"""Sentence worker processes: ``python -m latechunk._sentence_worker`` fed over pipes (:class:`_WorkerPool`).

The workers import only :mod:`latechunk.sentences` (numpy and pysbd), never the caller's script, torch or a
tokenizer; :func:`default_workers` is the CLI's default count.

Tests: ``tests/sentences/test_sentences.py`` (workers against one process, Ctrl-C, no main guard).
"""

from __future__ import annotations

import json
import os
import queue
import sys

from latechunk.sentences import segment


def _segment_many(paragraphs: list[str]) -> list[list[tuple[int, int]]]:
    """Worker task: sentence spans of each paragraph, in the paragraph's own coordinates."""
    return [segment._segment_paragraph(p, 0, len(p)).tolist() for p in paragraphs]


def _worker_main() -> None:
    """``python -m latechunk._sentence_worker``: one JSON list of paragraphs per stdin line, one JSON list of
    their sentence spans per stdout line; ends at end of input (the parent closed the pipe, or died)."""
    import signal

    # Ctrl-C reaches the whole process group: the parent handles it, and a worker ends when its pipe closes
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout = sys.stderr  # only the replies go to the pipe, whatever else prints
    for line in sys.stdin.buffer:
        reply = json.dumps(_segment_many(json.loads(line)), separators=(",", ":"))
        out.write(reply.encode("ascii") + b"\n")
        out.flush()


class _WorkerPool:
    """``n`` worker processes (``python -m latechunk._sentence_worker``), fed over pipes, one task at a time each.

    They are plain subprocesses that import only this module (numpy and pysbd): unlike multiprocessing's
    spawn and forkserver methods they never import the caller's main module (so a script needs no
    ``if __name__ == "__main__":`` guard), and unlike fork they copy no torch, CUDA or tokenizer threads. A
    worker ends when its input pipe closes, so none outlives this process.
    """

    def __init__(self, n: int) -> None:
        import subprocess
        from concurrent.futures import ThreadPoolExecutor

        env = dict(os.environ)  # the workers import this very package, installed or not
        # the folder that holds latechunk/ (this file is latechunk/sentences/workers.py)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(x for x in (root, env.get("PYTHONPATH", "")) if x)
        cmd = [sys.executable, "-m", "latechunk._sentence_worker"]
        self.n = n
        self.procs = [subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
                      for _ in range(n)]
        self.free: queue.SimpleQueue = queue.SimpleQueue()
        for proc in self.procs:
            self.free.put(proc)
        self.threads = ThreadPoolExecutor(n, thread_name_prefix="latechunk-sentences")

    def _run(self, paragraphs: list[str]) -> list:
        proc = self.free.get()
        try:
            proc.stdin.write(json.dumps(paragraphs).encode("ascii") + b"\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"sentence worker (pid {proc.pid}) exited with code {proc.wait()}")
            return json.loads(line)
        finally:
            self.free.put(proc)

    def map(self, tasks: list[list[str]]) -> list[list]:
        """Sentence spans per task, in task order (tasks run on the workers in parallel)."""
        return list(self.imap(tasks))

    def imap(self, tasks: list[list[str]]):
        """As :meth:`map`, but returns at once: an iterator over the results, in task order."""
        return self.threads.map(self._run, tasks)

    def ready(self) -> None:
        """Wait until every worker has started and answered."""
        self.map([[] for _ in range(self.n)])

    def close(self) -> None:
        """End the workers (close their input; kill any that does not exit within 5 s)."""
        self.threads.shutdown(wait=False, cancel_futures=True)
        for proc in self.procs:
            try:
                proc.stdin.close()
            except OSError:
                pass
        for proc in self.procs:
            try:
                proc.wait(timeout=5)
            except Exception:  # noqa: BLE001
                proc.kill()


def default_workers() -> int:
    """The CLI's default sentence worker count (``--sentence-workers``).

    Returns:
        One per CPU core the process may use (``os.sched_getaffinity``), less one for the main process, at most
        16; 0 (segment in the calling thread) on a machine with fewer than 4 cores.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return 0 if cores < 4 else min(16, cores - 1)
