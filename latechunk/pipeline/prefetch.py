"""The prefetch thread of :func:`~latechunk.pipeline.iter_embed` and giving freed heap memory back to the OS.

:func:`_prefetch` runs the reading, tokenizing and splitting of the next group in a background thread while the
calling thread encodes the current one (the Rust tokenizer releases the GIL); a consumer that stops early stops
the thread where it is (:func:`_stop_thread`). :func:`_release_free_heap` follows a large tokenizer call, so that
the late pass does not start from a resident size that grows with the longest document tokenized so far.
"""

from __future__ import annotations

import functools
import queue
import threading
from collections.abc import Iterator


class _Stopped(BaseException):
    """Raised inside the prefetch thread when its consumer has stopped (Ctrl-C, an error, a break)."""


def _stop_thread(t: threading.Thread) -> None:
    """Raise :class:`_Stopped` in thread ``t`` at its next Python instruction (CPython's
    ``PyThreadState_SetAsyncExc``): a thread inside a native call (one tokenizer slice, one pysbd block) stops
    when that call returns, not at the end of its document."""
    import ctypes

    if t.ident is not None and t.is_alive():
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(t.ident), ctypes.py_object(_Stopped))


def _prefetch(it: Iterator, depth: int = 1) -> Iterator:
    """Run ``it`` one step ahead in a background thread (tokenization overlaps device work; the Rust
    tokenizer releases the GIL). Order is preserved and exceptions are re-raised in the caller. A consumer that
    stops early (Ctrl-C, an error, a break) stops the thread where it is: a long document is tokenized and
    segmented in slices, so that takes one slice (well under a second), not the rest of the document."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    done = object()
    stop = threading.Event()

    def worker() -> None:
        try:
            try:
                for x in it:
                    if stop.is_set():
                        return
                    q.put((True, x))
                    if stop.is_set():
                        return
                q.put((True, done))
            except _Stopped:
                return
            except BaseException as err:  # noqa: BLE001  (re-raised in the consumer)
                q.put((False, err))
        except _Stopped:  # arrived while the error above was being handed over: nobody reads it any more
            return

    t = threading.Thread(target=worker, daemon=True, name="latechunk-tokenize")
    t.start()
    ended = False  # the worker has handed over its end (done or an error) and returns by itself
    try:
        while True:
            ok, x = q.get()
            if not ok:
                ended = True
                raise x
            if x is done:
                ended = True
                return
            yield x
    finally:
        # a consumer that stops early (an error, a break, Ctrl-C) stops the worker and waits for it, draining the
        # queue so it cannot block: a thread left inside native code at interpreter exit aborts the process
        stop.set()
        if not ended:
            _stop_thread(t)
        while t.is_alive():
            try:
                q.get(timeout=0.05)
            except queue.Empty:
                pass


_TRIM_CHARS = 1 << 20
"""A tokenizer call on this many characters or more is followed by :func:`_release_free_heap`."""


def _release_free_heap() -> None:
    """Give the heap memory that is free back to the OS (glibc's ``malloc_trim``; a no-op elsewhere).

    Tokenizing a long document makes a transient of several hundred bytes a token (the tokenizer's Python lists
    of ids and offset tuples); once freed, glibc keeps most of it in the heap, so without this the late pass
    would start from a resident size that grows with the longest document tokenized so far."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim():
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
