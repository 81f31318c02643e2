"""The Python surface of the unary and ternary ops (names, aliases, operators) and the pointwise fast
path: results and errors must not depend on whether a call takes it, and no call warns."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, torch

import ember

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)

NAMES = [
    *("abs", "absolute", "neg", "negative", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt"),
    *("rsqrt", "sin", "cos", "tan", "asin", "acos", "atan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh"),
    *("sigmoid", "relu", "erf", "erfinv", "floor", "ceil", "round", "trunc", "fix", "frac", "sign", "reciprocal"),
    *("square", "logical_not", "bitwise_not", "isnan", "isinf", "isfinite", "nan_to_num", "positive", "where"),
    *("clamp", "clip", "clamp_min", "clamp_max", "lerp", "addcmul", "addcdiv", "gelu", "silu", "mish"),
]


@needs_torch
@pytest.mark.parametrize("name", NAMES)
def test_same_functions_and_methods_as_pytorch(name):
    x = torch.ones(2)
    assert hasattr(ember, name) == hasattr(torch, name), name
    for suffix in ("", "_"):
        assert hasattr(ember.Tensor, name + suffix) == hasattr(x, name + suffix), name + suffix


@pytest.mark.parametrize("name", ["gelu", "silu", "mish"])
def test_activations_are_ops(name):
    packet = getattr(ember.ops.aten, name)
    x = ember.tensor([-1.0, 0.0, 2.0])
    assert packet.default(x).shape == (3,)
    out = ember.empty(3)
    assert packet.out(x, out=out) is out
    y = x.clone()
    assert getattr(ember.ops.aten, name + "_").default(y) is y


def test_operators():
    x = ember.tensor([1.0, -2.0])
    assert (+x) is x
    assert (-x).tolist() == [-1.0, 2.0]
    assert abs(x).tolist() == [1.0, 2.0]
    assert (~ember.tensor([0, 5], dtype=ember.int8)).tolist() == [-1, -6]
    assert (~ember.tensor([True, False])).tolist() == [False, True]
    with pytest.raises(TypeError, match="only implemented on integer and Boolean"):
        _ = ~x
    with pytest.raises(RuntimeError, match="bool tensor"):
        _ = +ember.tensor([True])
    with pytest.raises(RuntimeError, match="Negation"):
        _ = -ember.tensor([True])


def test_round_is_half_to_even():
    x = ember.tensor([0.5, 1.5, 2.5, -0.5, -2.5, 3.5])
    assert ember.round(x).tolist() == [0.0, 2.0, 2.0, -0.0, -2.0, 4.0]
    assert np.signbit(ember.round(x).numpy()[3])


# -- the fast path -------------------------------------------------------------------------------
# Contiguous float32/float64 calls without extra arguments skip the plan and checks; these ops rely
# on fast=False (or checks that only refuse other dtypes) to stay correct there.


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fast_path_keeps_refusals(dtype):
    x = ember.ones(4, dtype=getattr(ember, dtype))
    with pytest.raises(NotImplementedError, match="bitwise_not_cpu"):
        ember.bitwise_not(x)
    with pytest.raises(RuntimeError, match="approximate"):
        ember.ops.aten.gelu.default(x, approximate="exact")
    with pytest.raises(RuntimeError, match="At least one"):
        ember.clamp(x)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["abs", "neg", "sign", "relu", "nan_to_num", "floor", "erf", "erfinv", "frac"])
def test_fast_path_matches_slow_path(name, dtype):
    values = [np.nan, np.inf, -np.inf, -0.0, 0.0, 0.5, -0.75, 3.25, 1e30]
    fast = getattr(ember, name)(ember.tensor(values, dtype=getattr(ember, dtype)))
    # A transposed 2-d view of the same values takes the planned path.
    slow = getattr(ember, name)(ember.tensor([values, values], dtype=getattr(ember, dtype)).t())[:, 0]
    theirs = getattr(torch, name)(torch.tensor(values, dtype=getattr(torch, dtype))).numpy()
    np.testing.assert_array_equal(np.signbit(fast.numpy()), np.signbit(slow.numpy()))
    np.testing.assert_allclose(fast.numpy(), theirs, rtol=2e-6, equal_nan=True)
    np.testing.assert_allclose(slow.numpy(), theirs, rtol=2e-6, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64"])
def test_no_numpy_warnings(dtype):
    d = getattr(ember, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = ember.tensor([0.0, -1.0, 100.0, 12000.0]).to(d)
        for name in ("log", "log2", "log10", "log1p", "sqrt", "rsqrt", "exp", "exp2", "cosh", "reciprocal"):
            getattr(ember, name)(x)
        if d.is_floating_point:
            ember.ops.aten.gelu.default(x)
            y = x.clone()
            y.exp_()
            ember.erfinv(x)
            ember.lerp(x, x * 1000, 0.5)
            ember.addcdiv(x, x, ember.zeros_like(x))


def test_where_without_values_is_nonzero():
    cond = ember.tensor([[True, False], [False, True]])
    if "nonzero" not in ember.core.functions:
        with pytest.raises(NotImplementedError, match="nonzero"):
            ember.where(cond)
        return
    rows, cols = ember.where(cond)
    assert rows.tolist() == [0, 1] and cols.tolist() == [0, 1]


@needs_torch
@pytest.mark.parametrize("name", ["reciprocal", "log1p", "exp", "sqrt", "log", "tanh", "sigmoid", "nan_to_num"])
def test_complex_special_values_part_by_part(name):
    # test_ops compares complex results with equal_nan, which lets inf+nan j pass for nan+nan j.
    parts = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan]
    values = [complex(re, im) for re in parts for im in parts]
    ours = getattr(ember, name)(ember.tensor(values, dtype=ember.complex64)).numpy()
    theirs = getattr(torch, name)(torch.tensor(values, dtype=torch.complex64)).numpy()
    np.testing.assert_allclose(ours.real, theirs.real, rtol=1e-5, atol=1e-6, equal_nan=True)
    np.testing.assert_allclose(ours.imag, theirs.imag, rtol=1e-5, atol=1e-6, equal_nan=True)
