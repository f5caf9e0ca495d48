"""latechunk/pooling.py: ``segment_mean`` dispatches to the Triton kernel on CUDA (when Triton imports) and to the
torch reference elsewhere, passing every argument on; the result is the mean of each span's token states. (The
kernel against the reference, in the Triton interpreter and on the GPU: tests/test_kernels.py.)"""

from __future__ import annotations

import sys
import types

import pytest
import torch

from latechunk import pooling
from latechunk.kernels.reference import segment_mean_ref


class Recorder:
    """Stands in for a segment-mean implementation; records its calls and returns a marker tensor."""

    def __init__(self, name: str):
        self.name, self.calls = name, []

    def __call__(self, states, token_spans, normalize=False, cu_seqlens=None, cu_chunks=None):
        self.calls.append({"normalize": normalize, "cu_seqlens": cu_seqlens, "cu_chunks": cu_chunks})
        return torch.full((len(token_spans), states.shape[1]), float(len(self.name)))


def test_cpu_states_use_the_reference_with_every_argument(monkeypatch):
    ref = Recorder("ref")
    monkeypatch.setattr(pooling, "segment_mean_ref", ref)
    states, spans = torch.randn(6, 4), torch.tensor([[0, 2], [1, 3]])
    cu, cc = torch.tensor([0, 3, 6], dtype=torch.int32), torch.tensor([0, 1, 2], dtype=torch.int32)
    pooling.segment_mean(states, spans, True, cu_seqlens=cu, cu_chunks=cc)
    assert len(ref.calls) == 1 and ref.calls[0]["normalize"] is True
    assert ref.calls[0]["cu_seqlens"] is cu and ref.calls[0]["cu_chunks"] is cc


def test_kernel_is_used_where_it_is_available(monkeypatch):
    """With the kernel available (CUDA states) the dispatcher calls it, never the reference."""
    ref, kernel = Recorder("ref"), Recorder("kernel")
    fake = types.ModuleType("latechunk.kernels.segment_mean")
    fake.segment_mean = kernel
    monkeypatch.setitem(sys.modules, "latechunk.kernels.segment_mean", fake)
    monkeypatch.setattr(pooling, "segment_mean_ref", ref)
    monkeypatch.setattr(pooling, "_kernel_available", lambda states: True)
    out = pooling.segment_mean(torch.randn(5, 3), torch.tensor([[0, 5]]), normalize=True)
    assert len(kernel.calls) == 1 and not ref.calls and kernel.calls[0]["normalize"] is True
    assert out.shape == (1, 3) and float(out[0, 0]) == len("kernel")


def test_kernel_is_not_available_off_cuda():
    assert not pooling._kernel_available(torch.randn(3, 2))  # CPU tensor
    assert not pooling._kernel_available([[0.0, 1.0]])  # not a tensor


def test_mean_of_each_span_in_float32():
    states = torch.arange(12, dtype=torch.float32).reshape(6, 2).to(torch.bfloat16)
    out = pooling.segment_mean(states, torch.tensor([[0, 2], [2, 6], [5, 6]], dtype=torch.int32))
    assert out.dtype == torch.float32 and out.tolist() == [[1.0, 2.0], [7.0, 8.0], [10.0, 11.0]]
    unit = pooling.segment_mean(states, torch.tensor([[2, 6]]), normalize=True)
    torch.testing.assert_close(unit.norm(dim=1), torch.ones(1))
    torch.testing.assert_close(pooling.segment_mean(states, torch.tensor([[1, 4]])),
                               segment_mean_ref(states, torch.tensor([[1, 4]])))


@pytest.mark.parametrize("spans, error", [
    (torch.tensor([[2, 2]]), ValueError),  # empty span
    (torch.tensor([[0, 7]]), ValueError),  # past the states
    (torch.tensor([[0.0, 2.0]]), TypeError),  # not integer
])
def test_bad_spans_are_refused(spans, error):
    with pytest.raises(error):
        pooling.segment_mean(torch.randn(6, 2), spans)


def test_the_reference_is_re_exported():
    assert pooling.segment_mean_ref is segment_mean_ref and callable(pooling.check_spans)
