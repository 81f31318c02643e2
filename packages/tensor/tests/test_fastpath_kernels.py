"""The CPU kernels written in C (ember.core._fastpath: ``add_``'s ``scaled_add``, ``sum.dim_IntList``'s
``column_sum``) against the Python kernels they stand for.

Every call runs twice on equal inputs, once through the C kernel and once through the Python kernel it
falls back to, and wants the same bits (and for ``add_`` the same version bump and result object), or
the same error. The C loops round the scaled operand before the sum, as NumPy's two ufunc calls do, so
the bits do not depend on whether the machine has FMA instructions; the column sums add in NumPy's
order.
"""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

import ember
from ember.core import fastpath

native = fastpath.native
pytestmark = pytest.mark.skipif(native is None, reason="ember.core._fastpath is not built")

add_ = ember.ops.aten.add_.Tensor


def _kernels():
    kernel = add_.kernel("cpu")
    fallback = kernel.__self__[0]
    return kernel, fallback


def _fresh(make):
    """Two independent copies of the arguments ``make`` builds (the target may alias the operand)."""
    return make(), make()


def _outcome(kernel, args, kwargs):
    target = args[0]
    before = target._version
    try:
        result = kernel(*args, **kwargs)
    except Exception as error:  # the same error type and message are wanted from both kernels
        return type(error), str(error)
    assert result is target
    return target._array.copy(), target._version - before, target.dtype


def _rng_tensor(shape, dtype, seed):
    values = np.random.default_rng(seed).standard_normal(shape) * 1e3
    return ember.tensor(values, dtype=dtype)


def _pair(shape, dtype, seed=0):
    return lambda: (_rng_tensor(shape, dtype, seed), _rng_tensor(shape, dtype, seed + 1))


def _same_tensor(dtype):
    def make():
        p = _rng_tensor((5, 7), dtype, 3)
        return p, p

    return make


def _overlapping(dtype):
    def make():
        base = _rng_tensor((8,), dtype, 4)
        return base[:4], base[2:6]

    return make


def _strided(dtype):
    return lambda: (_rng_tensor((4, 6), dtype, 5), _rng_tensor((6, 4), dtype, 6).t())


def _broadcast(dtype):
    return lambda: (_rng_tensor((4, 6), dtype, 7), _rng_tensor((6,), dtype, 8))


CASES = {
    "float32 64x64": _pair((64, 64), ember.float32),
    "float64 64x64": _pair((64, 64), ember.float64),
    "0-d": _pair((), ember.float32),
    "empty": _pair((0, 3), ember.float64),
    "odd length": _pair((1001,), ember.float32),
    "the target itself": _same_tensor(ember.float32),
    "overlapping views": _overlapping(ember.float32),
    "transposed operand": _strided(ember.float32),
    "broadcast operand": _broadcast(ember.float64),
    "int64": lambda: (ember.arange(6), ember.arange(6)),
    "mixed dtypes": lambda: (_rng_tensor((3,), ember.float64, 9), _rng_tensor((3,), ember.float32, 10)),
    "int64 into float32": lambda: (_rng_tensor((3,), ember.float32, 11), ember.arange(3)),
}
ALPHAS = {
    "none": {},
    "-0.01": {"alpha": -0.01},
    "3": {"alpha": 3},
    "1": {"alpha": 1},
    "1.0": {"alpha": 1.0},
    "1e-45": {"alpha": 1e-45},
    "2**60": {"alpha": 2**60},
    "True": {"alpha": True},
    "tensor": {"alpha": ember.tensor(2.0)},
}


@pytest.mark.parametrize("alpha", list(ALPHAS), ids=list(ALPHAS))
@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_the_c_kernel_matches_the_python_kernel(case, alpha):
    kernel, fallback = _kernels()
    (a, b), (c, d) = _fresh(CASES[case])
    ours, theirs = _outcome(kernel, (a, b), ALPHAS[alpha]), _outcome(fallback, (c, d), ALPHAS[alpha])
    if isinstance(ours[0], type):
        assert ours == theirs
        return
    np.testing.assert_array_equal(ours[0], theirs[0])
    assert ours[1:] == theirs[1:]


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=["float32", "float64"])
def test_the_update_rounds_the_scaled_operand_first(dtype):
    p, g = _rng_tensor((4096,), dtype, 12), _rng_tensor((4096,), dtype, 13)
    expected = np.add(p._array, np.multiply(g._array, dtype.np.type(-0.0123)))
    p.add_(g, alpha=-0.0123)
    np.testing.assert_array_equal(p._array, expected)


def test_the_method_and_operator_reach_the_c_kernel():
    p, g = ember.ones(3), ember.full((3,), 2.0)
    version = p._version
    p.add_(g, alpha=0.5)
    p += g
    assert p.tolist() == [4.0, 4.0, 4.0]
    assert p._version == version + 2
    assert add_.kernel("cpu").__name__ == "add_"


def test_grad_and_read_only_targets_leave_the_c_kernel():
    w = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.add_(ember.ones(3), alpha=2.0)
    with ember.no_grad():
        w.add_(ember.ones(3), alpha=2.0)
    assert w.tolist() == [3.0, 3.0, 3.0]
    frozen = np.ones(3, dtype=np.float32)
    frozen.flags.writeable = False
    kernel, fallback = _kernels()
    a, c = ember.from_numpy(frozen), ember.from_numpy(frozen.copy())
    c._array.flags.writeable = False
    assert _outcome(kernel, (a, ember.ones(3)), {"alpha": 2.0}) == _outcome(
        fallback, (c, ember.ones(3)), {"alpha": 2.0}
    )


def test_no_references_leak():
    p, g, x = ember.ones(16), ember.ones(16), ember.ones(4, 4)
    counted = [p, g, x, p._storage, g._storage, x._storage, p._array, g._array, x._array, ember.float32]
    for _ in range(100):
        p.add_(g, alpha=-0.5)
        x.sum(0)
    gc.collect()
    base = [sys.getrefcount(o) for o in counted]
    for _ in range(1000):
        p.add_(g, alpha=-0.5)
        p.add_(g)
        x.sum(0, keepdim=True)
        x + g[:4]
    gc.collect()
    assert [sys.getrefcount(o) for o in counted] == base


def test_describe_names_the_c_kernel_and_its_fallback():
    from ember.library.describe import where

    text = where(add_.kernel("cpu"))
    assert text.startswith("add_ in C (ember.core._fastpath), else ember.core.pointwise.")
    assert "cpu_inplace" in text


sum_dim = ember.ops.aten.sum.dim_IntList


def _sum_outcome(kernel, args, kwargs):
    try:
        result = kernel(*args, **kwargs)
    except Exception as error:
        return type(error), str(error)
    return result._array.copy(), result.shape, result.stride(), result.dtype


SUM_INPUTS = {
    "32x64": lambda: _rng_tensor((32, 64), ember.float32, 20),
    "float64 3-D": lambda: _rng_tensor((3, 5, 7), ember.float64, 21),
    "long columns": lambda: _rng_tensor((3000, 2), ember.float32, 22),
    "one row": lambda: _rng_tensor((1, 9), ember.float32, 23),
    "no rows": lambda: ember.zeros(0, 4),
    "empty columns": lambda: ember.zeros(4, 0, 3),
    "trailing ones": lambda: _rng_tensor((50, 1, 1), ember.float32, 24),
    "negative zeros": lambda: ember.full((3, 4), -0.0),
    "infinities": lambda: ember.tensor([[float("inf"), 1.0], [float("-inf"), float("nan")], [3e38, 3e38]]),
    "transposed": lambda: _rng_tensor((6, 4), ember.float32, 25).t(),
    "int64": lambda: ember.arange(12).reshape(3, 4),
    "0-d": lambda: ember.tensor(2.0),
}
SUM_ARGS = {
    "0": ((0,), {}),
    "-1": ((-1,), {}),
    "1 keepdim": ((1, True), {}),
    "-2 keepdim dtype None": ((-2, True), {"dtype": None}),
    "out of range": ((5,), {}),
    "list": (([0],), {}),
    "dtype float64": ((0,), {"dtype": ember.float64}),
    "keepdim 1": ((0, 1), {}),
}


@pytest.mark.parametrize("call", list(SUM_ARGS), ids=list(SUM_ARGS))
@pytest.mark.parametrize("case", list(SUM_INPUTS), ids=list(SUM_INPUTS))
def test_the_column_sum_matches_the_python_kernel(case, call):
    kernel = sum_dim.kernel("cpu")
    fallback = kernel.__self__[0]
    x = SUM_INPUTS[case]()
    args, kwargs = SUM_ARGS[call]
    ours, theirs = _sum_outcome(kernel, (x, *args), kwargs), _sum_outcome(fallback, (x, *args), kwargs)
    if isinstance(ours[0], type):
        assert ours == theirs
        return
    np.testing.assert_array_equal(ours[0], theirs[0])
    assert ours[1:] == theirs[1:]


def test_the_column_sum_adds_rows_in_order():
    x = _rng_tensor((257, 3), ember.float32, 26)
    expected = x._array[0].copy()
    for row in x._array[1:]:
        expected = expected + row
    np.testing.assert_array_equal(x.sum(0)._array, expected)
    assert sum_dim.kernel("cpu").__name__ == "sum"


add = ember.ops.aten.add.Tensor
ADD_CASES = {
    "same shape": _pair((8, 8), ember.float32),
    "bias": lambda: (_rng_tensor((32, 64), ember.float32, 30), _rng_tensor((64,), ember.float32, 31)),
    "bias first": lambda: (_rng_tensor((5,), ember.float64, 32), _rng_tensor((3, 4, 5), ember.float64, 33)),
    "trailing block": lambda: (_rng_tensor((2, 3, 4), ember.float32, 34), _rng_tensor((3, 4), ember.float32, 35)),
    "column": lambda: (_rng_tensor((4, 3), ember.float32, 36), _rng_tensor((4, 1), ember.float32, 37)),
    "both broadcast": lambda: (_rng_tensor((4, 1), ember.float32, 38), _rng_tensor((1, 3), ember.float32, 39)),
    "0-d": lambda: (_rng_tensor((3, 2), ember.float32, 40), ember.tensor(1.5)),
    "empty": lambda: (ember.zeros(0, 4), ember.ones(4)),
    "transposed": _strided(ember.float32),
    "mixed dtypes": lambda: (_rng_tensor((3,), ember.float64, 41), _rng_tensor((3,), ember.float32, 42)),
    "int64": lambda: (ember.arange(6).reshape(2, 3), ember.arange(3)),
    "no broadcast": lambda: (ember.ones(2, 3), ember.ones(2)),
    "same tensor": _same_tensor(ember.float64),
}
ADD_ALPHAS = {"none": {}, "1": {"alpha": 1}, "1.0": {"alpha": 1.0}, "2": {"alpha": 2}}


def _add_outcome(kernel, args, kwargs):
    try:
        result = kernel(*args, **kwargs)
    except Exception as error:
        return type(error), str(error)
    return result._array.copy(), result.shape, result.stride(), result.dtype


@pytest.mark.parametrize("alpha", list(ADD_ALPHAS), ids=list(ADD_ALPHAS))
@pytest.mark.parametrize("case", list(ADD_CASES), ids=list(ADD_CASES))
def test_the_c_add_matches_the_python_kernel(case, alpha):
    kernel = add.kernel("cpu")
    fallback = kernel.__self__[0]
    a, b = ADD_CASES[case]()
    ours, theirs = _add_outcome(kernel, (a, b), ADD_ALPHAS[alpha]), _add_outcome(fallback, (a, b), ADD_ALPHAS[alpha])
    if isinstance(ours[0], type):
        assert ours == theirs
        return
    np.testing.assert_array_equal(ours[0], theirs[0])
    assert ours[1:] == theirs[1:]
    assert a.shape == ADD_CASES[case]()[0].shape  # the inputs are left alone


def test_empty_and_odd_layouts_keep_the_python_kernels_strides():
    kernel = add.kernel("cpu")
    fallback = kernel.__self__[0]
    for a, b in [
        (ember.zeros(3, 0).t(), ember.zeros(3)),
        (ember.ones(1, 4).t(), ember.ones(1)),
        (ember.ones(4, 1, 3).permute(1, 0, 2), ember.ones(3)),
    ]:
        ours, theirs = _add_outcome(kernel, (a, b), {}), _add_outcome(fallback, (a, b), {})
        np.testing.assert_array_equal(ours[0], theirs[0])
        assert ours[1:] == theirs[1:]


def test_fill_data_ptrs_matches_data_ptr():
    import ctypes

    class Plain(ember.Tensor):  # a subclass that keeps Tensor's data and data_ptr (as nn.Parameter)
        pass

    base = ember.arange(24.0).reshape(4, 6)
    param = ember.ones(3).as_subclass(Plain)
    tensors = [base, base[1:, 2:], base.t(), ember.zeros(0), ember.ones(5, dtype=ember.int16)[3:], param]
    out = (ctypes.c_void_p * len(tensors))()
    assert native.fill_data_ptrs(out, tensors) is True
    assert [p or 0 for p in out] == [t.data_ptr() for t in tensors]
    assert native.fill_data_ptrs(out, tuple(tensors)) is True


def test_fill_data_ptrs_declines_what_it_cannot_read():
    import ctypes

    class OwnPointer(ember.Tensor):
        def data_ptr(self):
            return 12345

    odd = ember.ones(2).as_subclass(OwnPointer)
    for tensors in ([ember.ones(2), odd], [ember.empty(2, device="meta")], [ember.ones(2), 3]):
        out = (ctypes.c_void_p * len(tensors))()
        assert native.fill_data_ptrs(out, tensors) is False
    short = (ctypes.c_void_p * 1)()
    assert native.fill_data_ptrs(short, [ember.ones(1), ember.ones(1)]) is False
