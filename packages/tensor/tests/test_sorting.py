"""Sorting and selection beyond the OpInfo table: the ``out=`` forms of the ops with two results,
return types, methods, large inputs (the partition path of ``topk``, stable order of many ties,
``searchsorted`` over long boundaries) and ``median`` along a stride-0 dimension, where PyTorch 2.13
reads garbage and we are checked against NumPy instead."""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def _both(array: np.ndarray):
    return ember.tensor(array), torch.tensor(array)


def _equal(ours, theirs) -> None:
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@needs_torch
@pytest.mark.parametrize(
    "name, args",
    [
        ("sort", {"dim": 1, "descending": True, "stable": True}),
        ("topk", {"k": 3, "dim": 1}),
        ("kthvalue", {"k": 2, "dim": 0, "keepdim": True}),
        ("median", {"dim": 1}),
        ("nanmedian", {"dim": 0}),
        ("mode", {"dim": 1}),
    ],
)
def test_two_result_out_forms(name, args):
    rng = np.random.default_rng(0)
    array = rng.permutation(20).reshape(4, 5).astype(np.float32)
    if name == "mode":
        array = rng.integers(0, 3, (4, 5)).astype(np.float32)
    ours_in, theirs_in = _both(array)
    ours_out = (ember.empty(0), ember.empty(0, dtype=ember.int64))
    theirs_out = (torch.empty(0), torch.empty(0, dtype=torch.int64))
    ours = getattr(ember, name)(ours_in, **args, out=ours_out)
    getattr(torch, name)(theirs_in, **args, out=theirs_out)
    assert ours[0] is ours_out[0] and ours[1] is ours_out[1]
    assert ours.values is ours_out[0] and ours.indices is ours_out[1]
    _equal(ours_out[0], theirs_out[0])
    _equal(ours_out[1], theirs_out[1])
    with pytest.raises(RuntimeError):
        getattr(ember, name)(
            ours_in, **args, out=(ember.empty(0, dtype=ember.int64), ember.empty(0, dtype=ember.int64))
        )


def test_return_types_and_methods():
    x = ember.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 5.0]])
    result = ember.sort(x)
    assert type(result) is ember.return_types.sort and result._fields == ("values", "indices")
    assert type(ember.topk(x, 2)) is ember.return_types.topk
    assert type(ember.kthvalue(x, 1)) is ember.return_types.kthvalue
    assert type(ember.median(x, 0)) is ember.return_types.median
    assert type(ember.nanmedian(x, 0)) is ember.return_types.nanmedian
    assert type(ember.mode(x)) is ember.return_types.mode
    assert x.sort(descending=True).values.tolist() == [[3.0, 2.0, 1.0], [5.0, 5.0, 0.0]]
    assert x.argsort(dim=0).tolist() == [[1, 0, 0], [0, 1, 1]]
    assert x.msort().tolist() == [[0.0, 1.0, 2.0], [3.0, 5.0, 5.0]]
    assert x.topk(1).values.tolist() == [[3.0], [5.0]]
    assert x.kthvalue(2).values.tolist() == [2.0, 5.0]
    assert x.median().item() == 2.0 and x.nanmedian(1).values.tolist() == [2.0, 5.0]
    assert x.mode(1).values.tolist() == [1.0, 5.0]
    assert ember.sort(x, axis=0).values.tolist() == [[0.0, 1.0, 2.0], [3.0, 5.0, 5.0]]


def test_median_along_a_stride_zero_dimension():
    base = np.array([[4.0, 1.0, np.nan, 2.0]], np.float32)
    x = ember.tensor(base).expand(5, 4)
    assert ember.median(x, 0).values.numpy()[[0, 1, 3]].tolist() == [4.0, 1.0, 2.0]
    row = ember.tensor([3.0, 1.0, 2.0, 7.0]).expand(3, 4)
    np.testing.assert_array_equal(ember.median(row, 1).values.numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(ember.nanmedian(x, 1).values.numpy(), [2.0] * 5)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "int64", "float16"])
@pytest.mark.parametrize("descending", [False, True])
def test_large_stable_sort_matches_pytorch(dtype, descending):
    rng = np.random.default_rng(1)
    array = rng.integers(0, 50, (7, 3000)).astype(dtype)
    if dtype != "int64":
        array[rng.random(array.shape) < 0.01] = np.nan
    ours_in, theirs_in = _both(array)
    for dim in (0, 1):
        ours = ember.sort(ours_in, dim=dim, descending=descending, stable=True)
        theirs = torch.sort(theirs_in, dim=dim, descending=descending, stable=True)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())


@needs_torch
@pytest.mark.parametrize("largest", [True, False])
def test_topk_of_long_rows_matches_pytorch(largest):
    rng = np.random.default_rng(2)
    array = np.stack([rng.permutation(5000) for _ in range(4)]).astype(np.float32)
    array[0, 17] = np.nan
    ours_in, theirs_in = _both(array)
    for k in (1, 5, 100):
        ours, theirs = ember.topk(ours_in, k, largest=largest), torch.topk(theirs_in, k, largest=largest)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
    ours, theirs = ember.topk(ours_in, 2, dim=0, largest=largest), torch.topk(theirs_in, 2, dim=0, largest=largest)
    np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())


@needs_torch
def test_searchsorted_long_boundaries_match_pytorch():
    rng = np.random.default_rng(3)
    boundaries = np.sort(rng.normal(size=(3, 10_000)).astype(np.float32), axis=-1)
    probe = rng.normal(size=(3, 2000)).astype(np.float32)
    probe[:, :100] = boundaries[:, :100]  # exact hits
    b_ours, b_theirs = _both(boundaries)
    v_ours, v_theirs = _both(probe)
    for right in (False, True):
        _equal(ember.searchsorted(b_ours, v_ours, right=right), torch.searchsorted(b_theirs, v_theirs, right=right))
        _equal(
            ember.bucketize(v_ours[0], b_ours[0], right=right), torch.bucketize(v_theirs[0], b_theirs[0], right=right)
        )


def test_meta_shapes_of_two_result_ops():
    x = ember.empty(3, 5, device="meta")
    values, indices = ember.topk(x, 2)
    assert values.device.type == "meta" and tuple(indices.shape) == (3, 2) and indices.dtype == ember.int64
    values, indices = ember.sort(ember.empty(5, 3, device="meta").t(), dim=0)
    assert values.stride() == (1, 3) and indices.stride() == (1, 3)
    assert tuple(ember.median(x, 1, keepdim=True).values.shape) == (3, 1)
    assert tuple(ember.searchsorted(ember.empty(4, device="meta"), x).shape) == (3, 5)
