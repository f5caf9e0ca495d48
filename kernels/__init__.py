"""Triton kernels, each beside its torch reference with the same signature (``reference.py``).

The repository's ``kernels/`` folder, installed as ``latechunk.kernels`` (see setup.py). A leaf: nothing here
imports ``latechunk``, so the kernels and references can be read, tested and copied alone; the dispatcher that
picks the kernel or the reference is :func:`latechunk.pooling.segment_mean`.
"""
