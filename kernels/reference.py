"""Torch references beside the kernels: same signatures, used by tests and by the CPU dispatch.

``segment_mean_ref`` lives in :mod:`latechunk.pooling` (the package must work without Triton); it is
re-exported here so that every kernel in ``kernels/`` sits beside its reference, as flash-attn's
``layer_norm_ref`` does.
"""

from latechunk.pooling import check_segment_inputs, segment_mean_ref

__all__ = ["check_segment_inputs", "segment_mean_ref"]
