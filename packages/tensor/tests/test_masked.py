"""ember.masked by hand: what a masked-out element contributes, and what a row with none in gives."""

import math

import pytest

import ember
import ember.masked as masked

X = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
MASK = ember.tensor([[True, False, True], [False, False, False]])


def test_reductions_skip_masked_out_elements():
    assert masked.sum(X, 1, mask=MASK).tolist() == [4.0, 0.0]
    assert masked.prod(X, 1, mask=MASK).tolist() == [3.0, 1.0]
    assert masked.amax(X, 1, mask=MASK).tolist() == [3.0, -math.inf]
    assert masked.amin(X, 1, mask=MASK).tolist() == [1.0, math.inf]
    mean = masked.mean(X, 1, mask=MASK).tolist()
    assert mean[0] == 2.0 and math.isnan(mean[1])
    assert masked.var(X, 1, mask=MASK).tolist()[0] == 2.0
    assert masked.sum(X, mask=ember.tensor([True, False, False])).item() == 5.0  # a broadcast mask


def test_normalizations_give_zero_weight_to_masked_out_elements():
    row = masked.softmax(X, 1, mask=MASK)[0].tolist()
    assert row[1] == 0.0 and row[0] + row[2] == pytest.approx(1.0)
    assert masked.cumsum(X, 1, mask=MASK)[0].tolist() == [1.0, 1.0, 4.0]
    assert masked.normalize(X, 1.0, 1, mask=MASK)[0].tolist() == [0.25, 0.0, 0.75]


def test_integer_sums_widen_and_a_mask_of_more_dimensions_is_refused():
    assert masked.sum(ember.tensor([1, 2], dtype=ember.int32)).dtype == ember.int64
    with pytest.raises(IndexError, match="broadcastable mask"):
        masked.sum(X, mask=MASK[None])
