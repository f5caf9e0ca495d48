"""Entry point of a sentence-segmentation worker process (see ``latechunk.sentences._WorkerPool``).

It imports only :mod:`latechunk.sentences` (numpy and pysbd), never the caller's script, torch or a tokenizer.
"""

from latechunk.sentences import _worker_main

if __name__ == "__main__":
    _worker_main()
