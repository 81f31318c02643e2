"""Reductions beyond the OpInfo table: named-tuple results and their ``out=`` tuples, ``out=`` dtype
rules, the Python signatures' argument errors, accumulation precision, and ``ember.linalg``."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from opinfo import ORACLE_MISSING, to_numpy, torch

import ember

needs_torch = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)


def pair(array: np.ndarray):
    return ember.tensor(array), torch.tensor(array)


def assert_close(ours, theirs, rtol=1.3e-6, atol=1e-5):
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.stride() == theirs.stride()
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol=rtol, atol=atol, equal_nan=True)


def test_return_types_are_named_tuples():
    x = ember.tensor([[1.0, 5.0, 5.0], [7.0, 0.0, 7.0]])
    result = ember.max(x, 1)
    assert isinstance(result, tuple) and type(result) is ember.return_types.max
    values, indices = result
    assert result.values is values and result[1] is indices
    assert values.tolist() == [5.0, 7.0] and indices.tolist() == [1, 0]
    assert x.min(dim=0, keepdim=True).indices.tolist() == [[0, 1, 0]]
    assert "ember.return_types.max(" in repr(result)
    import ember.return_types as return_types

    assert return_types.min is ember.return_types.min


def test_linalg_is_a_package():
    import ember.linalg

    x = ember.tensor([3.0, -4.0])
    assert ember.linalg.vector_norm(x).item() == 5.0
    assert ember.linalg.vector_norm(x, ord=math.inf).item() == 4.0


@needs_torch
@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_dim_out_tuple(name, keepdim):
    array = np.array([[1.0, np.nan, 3.0], [4.0, 4.0, 2.0]], np.float32)
    ours_x, theirs_x = pair(array.T.copy())
    outs = (ember.empty(0), ember.empty(0, dtype=ember.int64))
    returned = getattr(ember, name)(ours_x.t(), 1, keepdim, out=outs)
    expected = getattr(torch, name)(theirs_x.t(), 1, keepdim)
    assert type(returned).__name__ == f"{name}_out"
    assert returned[0] is outs[0] and returned.indices is outs[1]
    assert_close(outs[0], expected.values)
    assert_close(outs[1], expected.indices)


@needs_torch
def test_aminmax_out_tuple():
    ours_x, theirs_x = pair(np.array([[1.0, np.nan, 3.0], [4.0, 4.0, 2.0]], np.float32))
    outs = (ember.empty(0), ember.empty(0))
    returned = ember.aminmax(ours_x, dim=0, out=outs)
    expected = torch.aminmax(theirs_x, dim=0)
    assert type(returned).__name__ == "aminmax_out" and returned.min is outs[0] and returned[1] is outs[1]
    assert_close(returned.min, expected.min)
    assert_close(returned.max, expected.max)
    with pytest.raises(RuntimeError):
        ember.aminmax(ours_x, dim=0, out=(ember.empty(0, dtype=ember.float64), ember.empty(0)))


@needs_torch
@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x: lib.sum(x, 0, dtype=lib.float64, out=lib.empty(0)),
        lambda lib, x: lib.amax(x, 0, out=lib.empty(0, dtype=lib.float64)),
        lambda lib, x: lib.argmax(x, 0, out=lib.empty(0, dtype=lib.int32)),
        lambda lib, x: lib.max(x, 0, out=(lib.empty(0, dtype=lib.float64), lib.empty(0, dtype=lib.int64))),
        lambda lib, x: lib.max(x, 0, out=(lib.empty(0), lib.empty(0, dtype=lib.int32))),
        lambda lib, x: lib.mean(x, 0, out=lib.empty(0, dtype=lib.int64)),
        lambda lib, x: lib.all(x, 0, out=lib.empty(0)),
        lambda lib, x: lib.logsumexp(x, 0, out=lib.empty(0, dtype=lib.int64)),
        lambda lib, x: lib.linalg.vector_norm(x, out=lib.empty(0, dtype=lib.float64)),
        lambda lib, x: lib.cumsum(x, 0, dtype=lib.float64, out=lib.empty(0)),
        lambda lib, x: x.clone().cumsum_(0, dtype=lib.float64),
    ],
)
def test_out_dtype_errors(call):
    ours_x, theirs_x = pair(np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(RuntimeError):
        call(torch, theirs_x)
    with pytest.raises(RuntimeError):
        call(ember, ours_x)


@needs_torch
@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x: lib.sum(x, 0, out=lib.empty(0, dtype=lib.int64)),
        lambda lib, x: lib.mean(x, 1, out=lib.empty(0, dtype=lib.float64)),
        lambda lib, x: lib.max(x, out=lib.empty(0, dtype=lib.float64)),
        lambda lib, x: lib.all(x, 1, out=lib.empty(0, dtype=lib.uint8)),
        lambda lib, x: lib.cumprod(x, 1, out=lib.empty(0, dtype=lib.int64)),
        lambda lib, x: lib.var(x, 1, out=lib.empty(0, dtype=lib.float64)),
        lambda lib, x: lib.logsumexp(x, 1, out=lib.empty(0, dtype=lib.float64)),
    ],
)
def test_out_takes_the_out_dtype(call):
    ours_x, theirs_x = pair(np.arange(6, dtype=np.float32).reshape(2, 3) * 0.7)
    assert_close(call(ember, ours_x), call(torch, theirs_x), rtol=1e-6)


@needs_torch
def test_out_resizes_with_a_warning():
    ours_x, theirs_x = pair(np.ones((2, 3), np.float32))
    ours, theirs = ember.zeros(5), torch.zeros(5)
    with pytest.warns(UserWarning, match="resized"):
        torch.sum(theirs_x, 1, out=theirs)
    with pytest.warns(UserWarning, match="resized"):
        ember.sum(ours_x, 1, out=ours)
    assert_close(ours, theirs)


@needs_torch
@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x: lib.sum(x, 1.5),
        lambda lib, x: lib.sum(x, 0, 1),
        lambda lib, x: lib.prod(x, (0, 1)),
        lambda lib, x: lib.max(x, 1.0),
        lambda lib, x: lib.max(x, None),
        lambda lib, x: lib.argmax(x, (0, 1)),
        lambda lib, x: lib.cumsum(x, None),
        lambda lib, x: lib.logsumexp(x, None),
        lambda lib, x: lib.var(x, 1, True, correction=0),
        lambda lib, x: lib.std(x, unbiased=False, correction=1),
        lambda lib, x: lib.linalg.vector_norm(x, "fro"),
        lambda lib, x: lib.all(x, True),
        lambda lib, x: x.cumsum(0, lib.float64),
    ],
)
def test_argument_type_errors(call):
    ours_x, theirs_x = pair(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError):
        call(torch, theirs_x)
    with pytest.raises(TypeError):
        call(ember, ours_x)


@needs_torch
def test_var_warns_when_degrees_of_freedom_run_out():
    ours_x, theirs_x = pair(np.ones((2, 3), np.float32))
    with pytest.warns(UserWarning, match="degrees of freedom"):
        ours = ember.var(ours_x, 1, correction=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(ours, torch.var(theirs_x, 1, correction=3))


@needs_torch
@pytest.mark.parametrize("name", ["var", "std", "var_mean", "std_mean"])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_degrees_of_freedom_warning_names_the_op_and_the_callers_line(name, requires_grad):
    ours_x, theirs_x = pair(np.ones((2, 3), np.float32))
    found = []
    for lib, x in ((ember, ours_x), (torch, theirs_x)):
        x.requires_grad_(requires_grad)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            getattr(lib, name)(x, 1, correction=3)
        (warning,) = caught
        found.append((str(warning.message).split(":")[0], warning.filename))
    assert found[0] == found[1] == (f"{name}()", __file__)


@needs_torch
def test_half_precision_sums_accumulate_in_float32():
    # 4096 * 0.1 in float16 steps would stall at 256; PyTorch and we accumulate in float32.
    array = np.full((4096,), 0.1, np.float16)
    for dtype in ("float16", "bfloat16"):
        ours_x, theirs_x = pair(array)
        ours_x, theirs_x = ours_x.to(getattr(ember, dtype)), theirs_x.to(getattr(torch, dtype))
        assert_close(ours_x.sum(), theirs_x.sum(), rtol=0, atol=0)
        assert_close(ours_x.mean(), theirs_x.mean(), rtol=0, atol=0)
        assert_close(ours_x.cumsum(0), theirs_x.cumsum(0), rtol=1e-3, atol=0)


@needs_torch
def test_long_float32_sums_along_a_strided_dim():
    rng = np.random.default_rng(0)
    array = rng.standard_normal((20000, 3)).astype(np.float32)
    ours_x, theirs_x = pair(array)
    assert_close(ours_x.sum(0), theirs_x.sum(0), rtol=1e-5, atol=1e-4)
    assert_close(ours_x.t().sum(1), theirs_x.t().sum(1), rtol=1e-5, atol=1e-4)
    assert_close(ours_x.var(0), theirs_x.var(0), rtol=1e-5)


def test_ops_dispatch_by_schema():
    x = ember.tensor([[1, 2], [3, 4]])
    assert ember.ops.aten.sum.dim_IntList(x, [0]).tolist() == [4, 6]
    assert ember.ops.aten.amax.default(x, [1], True).tolist() == [[2], [4]]
    values, indices = ember.ops.aten.max.dim(x, 0)
    assert values.tolist() == [3, 4] and indices.tolist() == [1, 1]


def test_meta_tuple_results_have_cpu_layouts():
    x = ember.empty((4, 2, 3), device="meta").permute(2, 0, 1)
    values, indices = x.max(1, keepdim=True)
    assert values.device.type == "meta" and values.shape == (3, 1, 2) and values.stride() == (2, 2, 1)
    assert indices.dtype is ember.int64 and indices.stride() == (2, 2, 1)
    var, mean = ember.var_mean(x.to(ember.complex64), (0, 2))
    assert var.dtype is ember.float32 and mean.dtype is ember.complex64 and var.shape == (4,)


@needs_torch
def test_nuclear_norm_of_non_finite_input_raises():
    ours_x, theirs_x = pair(np.array([[1.0, np.nan], [0.0, 1.0]], np.float32))
    with pytest.raises(RuntimeError):
        torch.norm(theirs_x, "nuc")
    with pytest.raises(RuntimeError, match="non-finite"):
        ember.norm(ours_x, "nuc")


@needs_torch
def test_nuclear_norm_dtype_and_out():
    ours_x, theirs_x = pair(np.arange(12, dtype=np.float32).reshape(3, 4) - 5)
    assert_close(ember.norm(ours_x, "nuc", dtype=ember.float64), torch.norm(theirs_x, "nuc", dtype=torch.float64))
    out = ember.empty(0)
    assert ember.norm(ours_x, "nuc", out=out) is out
    assert_close(out, torch.norm(theirs_x, "nuc"))
    with pytest.raises(RuntimeError):
        ember.norm(ours_x, "nuc", out=ember.empty(0, dtype=ember.float64))


@needs_torch
@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x: lib.sum(x, axis=0),
        lambda lib, x: x.sum(axis=1, keepdims=True),
        lambda lib, x: x.mean(axis=1),
        lambda lib, x: x.max(axis=0),
        lambda lib, x: x.amax(axis=0, keepdims=True),
        lambda lib, x: x.argmax(axis=1),
        lambda lib, x: x.std(axis=0),
        lambda lib, x: lib.var_mean(x, axis=0),
        lambda lib, x: x.cumsum(axis=0),
        lambda lib, x: x.all(axis=0),
        lambda lib, x: x.prod(axis=0),
        lambda lib, x: lib.logsumexp(x, axis=0),
        lambda lib, x: x.count_nonzero(axis=0),
        lambda lib, x: lib.linalg.vector_norm(x, axis=0),
    ],
)
def test_numpy_argument_names(call):
    ours_x, theirs_x = pair(np.arange(6, dtype=np.float32).reshape(2, 3) - 2)
    ours, theirs = call(ember, ours_x), call(torch, theirs_x)
    for a, b in zip(
        ours if isinstance(ours, tuple) else (ours,), theirs if isinstance(theirs, tuple) else (theirs,), strict=True
    ):
        assert_close(a, b)


@needs_torch
def test_return_types_match_pytorchs_fields():
    import ember.return_types as ours_module

    for name in ours_module.__all__:
        values = tuple(f"value {i}" for i in range(len(getattr(ours_module, name)._fields)))
        ours = getattr(ours_module, name)(*values)
        theirs = getattr(torch.return_types, name)(values)
        assert theirs.n_fields == len(ours._fields), name
        for field in ours._fields:
            assert getattr(ours, field) == getattr(theirs, field), (name, field)


# -- meta functions of the out= and in-place overloads (the OpInfo sweep reaches the functional ones) --

_aten = ember.ops.aten
_OUT_CALLS = [
    ("sum.IntList_out", ([1], False), {}),
    ("sum.IntList_out", ([0], True), {"dtype": ember.float64}),
    ("sum.out", (), {}),
    ("prod.int_out", (1, True), {}),
    ("prod.out", (), {"dtype": ember.float64}),
    ("mean.out", ([0], False), {}),
    ("mean.dtype_out", (), {}),
    ("nansum.out", ([1], False), {}),
    ("nanmean.out", (None, True), {}),
    ("all.out", (1, False), {}),
    ("all.dims_out", ([0, 1], True), {}),
    ("all.all_out", (), {}),
    ("any.out", (0, True), {}),
    ("any.dims_out", ([], False), {}),
    ("any.all_out", (), {}),
    ("amax.out", ([1], False), {}),
    ("amin.out", ([], True), {}),
    ("argmax.out", (1, True), {}),
    ("argmin.out", (None, False), {}),
    ("cumsum.out", (1,), {}),
    ("cumprod.out", (0,), {"dtype": ember.float64}),
    ("linalg_vector_norm.out", (2, [1], False), {}),
    ("logsumexp.out", ([1], False), {}),
    ("max.unary_out", (), {}),
    ("min.unary_out", (), {}),
    ("var.correction_out", ([1],), {"keepdim": True}),
    ("std.correction_out", (None,), {"correction": 0}),
]
_OUT_DTYPES = (ember.float32, ember.float64, ember.int64, ember.bool, ember.complex64)


def _call(name: str, device: str, x: np.ndarray, args: tuple, kwargs: dict, out_dtype):
    packet, _, overload = name.partition(".")
    op = getattr(getattr(_aten, packet), overload)
    t = ember.tensor(x).to(device)
    out = ember.empty(0, dtype=out_dtype, device=device)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = op(t, *args, **kwargs, out=out)
    except Exception as error:
        return type(error), str(error)
    assert result is out
    return tuple(out.shape), out.dtype, out.stride()


@pytest.mark.parametrize("name, args, kwargs", _OUT_CALLS, ids=[c[0] for c in _OUT_CALLS])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "complex64"])
def test_out_overloads_on_meta_match_cpu(name, args, kwargs, dtype):
    x = np.arange(-5, 7).reshape(3, 4).astype(dtype)
    for out_dtype in _OUT_DTYPES:
        cpu = _call(name, "cpu", x, args, kwargs, out_dtype)
        assert _call(name, "meta", x, args, kwargs, out_dtype) == cpu, (name, out_dtype, cpu)


@pytest.mark.parametrize("name", ["cumsum_", "cumprod_"])
def test_inplace_scans_on_meta_match_cpu(name):
    op = getattr(_aten, name).default
    cases = [((3, 4), (1,), {}), ((3, 4), (-1,), {"dtype": ember.float32}), ((3, 4), (0,), {"dtype": ember.int64})]
    cases += [((3, 4), (2,), {}), ((1, 4), (0,), {})]  # a dim out of range; an expanded target below
    for shape, args, kwargs in cases:
        outcomes = []
        for device in ("cpu", "meta"):
            t = ember.ones(shape, device=device)
            t = t.expand(3, 4) if shape == (1, 4) else t
            try:
                result = op(t, *args, **kwargs)
                assert result is t
                outcomes.append((tuple(t.shape), t.dtype, t.stride()))
            except Exception as error:
                outcomes.append((type(error), str(error)))
        assert outcomes[0] == outcomes[1], outcomes
