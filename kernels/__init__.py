"""Triton kernels, each beside the torch reference with the same signature (``kernels/reference.py``)."""
