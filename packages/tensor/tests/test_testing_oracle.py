"""``ember.testing`` against ``torch.testing``: assert_close's decisions and messages over a table of
cases, make_tensor's dtypes, shapes, ranges, layouts and errors."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

import ember  # noqa: E402
from ember.testing import assert_close, make_tensor  # noqa: E402


def _both(build):
    """``build(lib)`` made with PyTorch and with Ember."""
    return build(torch), build(ember)


# Each case builds (actual, expected) with a library, plus keyword arguments for assert_close.
CASES = {
    "float32 one off": (lambda L: (L.tensor([1.0, 2.0, 3.0]), L.tensor([1.0, 2.5, 3.0])), {}),
    "float32 within tolerance": (lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0 + 1e-6])), {}),
    "float32 2-d": (lambda L: (L.tensor([[1.0, 2.0], [3.0, 4.0]]), L.tensor([[1.0, 2.0], [3.0, 5.0]])), {}),
    "float32 0-d": (lambda L: (L.tensor(1.0), L.tensor(1.5)), {}),
    "float64": (lambda L: (L.tensor([1.0], dtype=L.float64), L.tensor([1.0 + 1e-6], dtype=L.float64)), {}),
    "float64 close": (lambda L: (L.tensor([1.0], dtype=L.float64), L.tensor([1.0 + 1e-8], dtype=L.float64)), {}),
    "float16": (lambda L: (L.tensor([1.0, 2.0], dtype=L.float16), L.tensor([1.0, 2.5], dtype=L.float16)), {}),
    "bfloat16 close": (lambda L: (L.tensor([1.0], dtype=L.bfloat16), L.tensor([1.0078125], dtype=L.bfloat16)), {}),
    "int64 exact": (lambda L: (L.tensor([1, 2]), L.tensor([1, 3])), {}),
    "int64 equal": (lambda L: (L.tensor([1, 2]), L.tensor([1, 2])), {}),
    "uint8 wraps not": (lambda L: (L.tensor([0], dtype=L.uint8), L.tensor([255], dtype=L.uint8)), {}),
    "bool": (lambda L: (L.tensor([True, False]), L.tensor([True, True])), {}),
    "dtype mismatch": (lambda L: (L.tensor([1.0]), L.tensor([1.0], dtype=L.float64)), {}),
    "dtype unchecked": (lambda L: (L.tensor([1.0]), L.tensor([1.5], dtype=L.float64)), {"check_dtype": False}),
    "shape mismatch": (lambda L: (L.tensor([1.0]), L.tensor([1.0, 2.0])), {}),
    "stride checked": (lambda L: (L.ones(2, 3).t(), L.ones(3, 2)), {"check_stride": True}),
    "stride unchecked": (lambda L: (L.ones(2, 3).t(), L.ones(3, 2)), {}),
    "nan differs": (lambda L: (L.tensor([float("nan")]), L.tensor([float("nan")])), {}),
    "nan equal_nan": (lambda L: (L.tensor([float("nan"), 1.0]), L.tensor([float("nan"), 1.0])), {"equal_nan": True}),
    "inf equal": (lambda L: (L.tensor([float("inf")]), L.tensor([float("inf")])), {}),
    "inf sign": (lambda L: (L.tensor([float("inf")]), L.tensor([-float("inf")])), {}),
    "zero expected": (lambda L: (L.tensor([0.0, 1.0]), L.tensor([0.5, 0.0])), {}),
    "custom tolerances": (lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.05, 2.0])), {"rtol": 0.0, "atol": 0.1}),
    "custom exact": (lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.05, 2.0])), {"rtol": 0.0, "atol": 0.0}),
    "complex64": (lambda L: (L.tensor([1 + 1j]), L.tensor([1 + 2j])), {}),
    "python float": (lambda L: (1.0, 1.5), {}),
    "python float close": (lambda L: (1.0, 1.0 + 1e-9), {}),
    "python int": (lambda L: (1, 2), {}),
    "python int vs float": (lambda L: (1, 1.0), {}),
    "python int vs float unchecked": (lambda L: (1, 1.0), {"check_dtype": False}),
    "python bool": (lambda L: (True, False), {}),
    "python complex": (lambda L: (1 + 1j, 1 + 1.5j), {}),
    "list of tensors": (lambda L: ([L.tensor(1.0), L.tensor(2.0)], [L.tensor(1.0), L.tensor(3.0)]), {}),
    "nested": (lambda L: ([[L.tensor([1.0, 2.0])]], [[L.tensor([1.0, 2.5])]]), {}),
    "dict": (lambda L: ({"a": L.tensor(1.0)}, {"a": L.tensor(3.0)}), {}),
    "dict keys": (lambda L: ({"a": 1, "c": 2}, {"b": 1, "c": 2}), {}),
    "sequence length": (lambda L: ([1, 2], [1, 2, 3]), {}),
    "tensor vs float": (lambda L: (L.tensor([1.0]), 1.0), {}),
    "strings": (lambda L: ("a", "a"), {}),
    "none": (lambda L: (None, None), {}),
    "none vs int": (lambda L: (None, 1), {}),
    "numpy arrays": (lambda L: (np.array([1.0]), np.array([2.0])), {}),
    "tensor vs numpy": (lambda L: (L.tensor([1.0]), np.array([1.0], dtype=np.float32)), {}),
    "msg string": (lambda L: (L.tensor([1.0]), L.tensor([2.0])), {"msg": "custom"}),
    "msg callable": (lambda L: (L.tensor([1.0]), L.tensor([2.0])), {"msg": lambda m: "X" + m}),
    "only rtol": (lambda L: (L.tensor([1.0]), L.tensor([1.0])), {"rtol": 1e-3}),
    "only atol": (lambda L: (L.tensor([1.0]), L.tensor([1.0])), {"atol": 1e-3}),
    "large int": (lambda L: (L.tensor([2**40]), L.tensor([2**40 + 1])), {}),
}


def _outcome(assert_close_fn, actual, expected, kwargs):
    try:
        assert_close_fn(actual, expected, **kwargs)
    except Exception as error:
        return type(error), str(error)
    return None, None


@pytest.mark.parametrize("name", list(CASES))
def test_assert_close_matches_torch(name):
    build, kwargs = CASES[name]
    (t_actual, t_expected), (e_actual, e_expected) = _both(build)
    want = _outcome(torch.testing.assert_close, t_actual, t_expected, kwargs)
    got = _outcome(assert_close, e_actual, e_expected, kwargs)
    if got[1]:  # the messages name the classes; Ember's Tensor is ember.core.tensor.Tensor
        got = (got[0], got[1].replace("ember.core.tensor.Tensor", "torch.Tensor"))
    assert got[0] is want[0], (got, want)
    if name.startswith("float16") or name.startswith("bfloat16"):
        # Half-precision differences are computed in float32 here and in the half dtype by PyTorch:
        # the decision and the header agree, the printed differences may differ in the last digits.
        assert (got[1] or "").split("\n")[:3] == (want[1] or "").split("\n")[:3]
    else:
        assert got[1] == want[1]


def test_assert_close_accepts_parameters_and_grad_tensors():
    weight = ember.nn.Parameter(ember.ones(2))
    assert_close(weight, ember.ones(2))
    with pytest.raises(TypeError):
        assert_close(weight, ember.ones(2), allow_subclasses=False)


# -- make_tensor ---------------------------------------------------------------------------------

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_make_tensor_default_range(dtype):
    ember.manual_seed(0)
    out = make_tensor((64, 64), dtype=getattr(ember, dtype))
    ref = torch.testing.make_tensor((64, 64), dtype=getattr(torch, dtype), device="cpu")
    assert out.dtype is getattr(ember, dtype)
    assert tuple(out.shape) == tuple(ref.shape)
    values = np.asarray(out.to(ember.complex64 if dtype.startswith("complex") else ember.float64))
    ref_values = ref.to(torch.complex64 if dtype.startswith("complex") else torch.float64).numpy()
    parts = [values.real, values.imag] if dtype.startswith("complex") else [values]
    ref_parts = [ref_values.real, ref_values.imag] if dtype.startswith("complex") else [ref_values]
    for part, ref_part in zip(parts, ref_parts, strict=True):
        # Both draw from the same interval: with 4096 draws each, both cover most of it.
        assert part.min() >= math.floor(ref_part.min()) - (0 if dtype in ("bool", "uint8") else 1)
        assert part.max() <= math.ceil(ref_part.max()) + (0 if dtype in ("bool", "uint8") else 1)
        span, ref_span = part.max() - part.min(), ref_part.max() - ref_part.min()
        assert span >= 0.8 * ref_span


@pytest.mark.parametrize(
    ("dtype", "low", "high"),
    [("int64", -3, 3), ("uint8", -5, 4), ("float32", -1, 1), ("int8", -1000, 1000), ("float32", 0.25, 0.5)],
)
def test_make_tensor_given_bounds(dtype, low, high):
    out = np.asarray(make_tensor(2000, dtype=getattr(ember, dtype), low=low, high=high).to(ember.float64))
    ref = torch.testing.make_tensor(2000, dtype=getattr(torch, dtype), device="cpu", low=low, high=high).double()
    assert out.min() >= ref.min().item() - 0.05 * (high - low) and out.max() <= max(ref.max().item(), high)
    assert set(np.unique(out)) <= set(range(-1000, 1001)) if dtype.startswith(("int", "uint")) else True


@pytest.mark.parametrize(
    "kwargs",
    [
        {"low": 3, "high": 1},
        {"low": float("nan")},
        {"low": 300, "high": 400, "dtype_name": "uint8"},
        {"requires_grad": True, "dtype_name": "int64"},
        {"noncontiguous": True, "memory_format": "contiguous_format"},
    ],
)
def test_make_tensor_errors(kwargs):
    kwargs = dict(kwargs)
    name = kwargs.pop("dtype_name", "float32")
    t_kwargs, e_kwargs = dict(kwargs), dict(kwargs)
    if "memory_format" in kwargs:
        t_kwargs["memory_format"], e_kwargs["memory_format"] = torch.contiguous_format, ember.contiguous_format
    with pytest.raises(ValueError) as want:
        torch.testing.make_tensor((2, 2, 2, 2), dtype=getattr(torch, name), device="cpu", **t_kwargs)
    with pytest.raises(ValueError) as got:
        make_tensor((2, 2, 2, 2), dtype=getattr(ember, name), **e_kwargs)
    # Module prefixes aside ("torch.int64" / "ember.int64"), the messages are PyTorch's.
    assert str(got.value).replace("ember.", "") == str(want.value).replace("torch.", "")


def test_make_tensor_layouts_and_flags():
    for lib, fn in ((torch, lambda *a, **k: torch.testing.make_tensor(*a, device="cpu", **k)), (ember, make_tensor)):
        nc = fn(3, 4, dtype=lib.float32, noncontiguous=True)
        assert tuple(nc.shape) == (3, 4) and not nc.is_contiguous()
        assert fn([2, 3], dtype=lib.float32).is_contiguous()
        assert fn((1,), dtype=lib.float32, noncontiguous=True).is_contiguous()  # one element: nothing to skip
        grad = fn(2, dtype=lib.float32, requires_grad=True)
        assert grad.requires_grad and grad.is_leaf
        assert not fn(2, dtype=lib.int64).requires_grad
        nz = fn(500, dtype=lib.int8, low=-1, high=1, exclude_zero=True)
        assert bool((nz != 0).all())
    cf = make_tensor(2, 3, 4, dtype=ember.float32, memory_format=ember.contiguous_format)
    ref = torch.testing.make_tensor(2, 3, 4, dtype=torch.float32, device="cpu", memory_format=torch.contiguous_format)
    assert cf.stride() == ref.stride()


def test_make_tensor_exclude_zero_floats_use_tiny():
    out = make_tensor(100, dtype=ember.float32, low=0, high=1e-40, exclude_zero=True)
    assert bool((out != 0).all())
