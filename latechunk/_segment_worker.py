"""Entry point of a sentence-segmentation worker process (see ``latechunk.segment._WorkerPool``)."""

from latechunk.segment import _worker_main

if __name__ == "__main__":
    _worker_main()
