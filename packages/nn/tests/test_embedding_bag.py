"""EmbeddingBag against PyTorch: modes, offsets, per-sample weights, padding and empty bags."""

from __future__ import annotations

import numpy as np
import pytest
from layer_oracle import compare, copy_weights, torch

import ember

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (the test oracle) is not installed")


def _pair(**options):
    torch.manual_seed(0)
    theirs = torch.nn.EmbeddingBag(10, 3, **options).double()
    ours = ember.nn.EmbeddingBag(10, 3, **options).double()
    copy_weights(theirs, ours)
    return ours, theirs


@needs_torch
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_offsets_with_an_empty_bag(mode, padding_idx):
    ours, theirs = _pair(mode=mode, padding_idx=padding_idx)
    index = [1, 2, 4, 5, 4, 3, 2, 9, 2]
    offsets = [0, 4, 4, 7]
    compare(ours, theirs, lambda rng, lib: [lib.tensor(index), lib.tensor(offsets)])


@needs_torch
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_fixed_length_bags_and_last_offset(mode):
    ours, theirs = _pair(mode=mode)
    compare(ours, theirs, lambda rng, lib: [lib.tensor([[1, 2, 3], [3, 3, 0]])])
    ours, theirs = _pair(mode=mode, include_last_offset=True)
    compare(ours, theirs, lambda rng, lib: [lib.tensor([1, 2, 4, 5, 4]), lib.tensor([0, 2, 5])])


@needs_torch
def test_per_sample_weights_in_sum_mode():
    ours, theirs = _pair(mode="sum")
    weights = np.random.default_rng(0).standard_normal(5)
    compare(
        ours,
        theirs,
        lambda rng, lib: [lib.tensor([1, 2, 4, 5, 4]), lib.tensor([0, 2]), lib.tensor(weights, requires_grad=True)],
    )
    assert repr(ours) == repr(theirs)


def test_bad_arguments_are_refused():
    bag = ember.nn.EmbeddingBag(10, 3)
    with pytest.raises(ValueError, match="offsets has to be None"):
        bag(ember.tensor([[1, 2]]), ember.tensor([0]))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        bag(ember.tensor([1, 2]))
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        bag(ember.tensor([1, 2]), ember.tensor([0]), per_sample_weights=ember.ones(2))
