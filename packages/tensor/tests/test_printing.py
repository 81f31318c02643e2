"""Tensors print as PyTorch prints them: ``repr(ember_tensor)`` equals ``repr(torch_tensor)`` with
``torch.`` spelled ``ember.``, over every dtype, rank, magnitude, layout and print option.

Every tensor is built identically in both libraries from one NumPy array (``opinfo.build``), so any
difference in the text is a difference in printing.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opinfo import FLOATS, INTS, NP_DTYPES, ORACLE_MISSING, T, build, torch

import ember

pytestmark = pytest.mark.skipif(torch is None, reason=ORACLE_MISSING)

DTYPES = (*FLOATS, *INTS, "bool", "complex64", "complex128")
LAYOUTS = ("contiguous", "transposed", "sliced", "expanded")
NAN, INF = math.nan, math.inf


@pytest.fixture(autouse=True)
def restore_options():
    """Every test leaves print options and the default dtype as it found them, in both libraries."""
    ours, theirs = ember.get_printoptions(), torch._tensor_str.get_printoptions()
    default = torch.get_default_dtype()
    yield
    ember.set_printoptions(**ours)
    torch.set_printoptions(**theirs)
    torch.set_default_dtype(default)
    ember.set_default_dtype(getattr(ember, str(default).split(".")[-1]))


def set_both(**options) -> None:
    ember.set_printoptions(**options)
    torch.set_printoptions(**options)


def set_default_dtype(name: str) -> None:
    ember.set_default_dtype(getattr(ember, name))
    torch.set_default_dtype(getattr(torch, name))


def check(array, dtype: str | None = None, layout: str = "contiguous", requires_grad: bool = False) -> str:
    """Build ``array`` (cast to ``dtype``) in both libraries and compare their reprs; return ours."""
    array = np.asarray(array)
    if dtype is not None:
        with np.errstate(over="ignore", invalid="ignore"):  # out-of-range values become inf, in both
            array = array.astype(NP_DTYPES[dtype])
    spec = T(array, layout, requires_grad)
    ours, theirs = build(spec, ember), build(spec, torch)
    expected = repr(theirs).replace("torch.", "ember.")
    assert repr(ours) == expected
    assert str(ours) == str(theirs).replace("torch.", "ember.")
    return repr(ours)


def values(dtype: str, shape: tuple, rng: np.random.Generator, scale: float = 1.0) -> np.ndarray:
    """Random values of ``dtype``: normal times ``scale`` for floats, small integers otherwise."""
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype in INTS:
        low = 0 if dtype == "uint8" else -100
        return rng.integers(low, 100, size=shape)
    if dtype.startswith("complex"):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) * scale
    return rng.standard_normal(shape) * scale


# -- values and modes ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (1,), (5,), (3, 4), (2, 3, 4), (2, 1, 3, 2), (30,), (7, 13)])
def test_every_dtype_and_rank(dtype, shape):
    rng = np.random.default_rng(sum(shape) + len(dtype))
    check(values(dtype, shape, rng, scale=3.0), dtype)


@pytest.mark.parametrize("dtype", (*FLOATS, "complex64", "complex128"))
@pytest.mark.parametrize("exponent", [-40, -12, -5, -4, -3, 0, 2, 4, 7, 8, 9, 20, 300])
def test_magnitudes(dtype, exponent):
    rng = np.random.default_rng(exponent + 50)
    check(values(dtype, (2, 5), rng, scale=10.0**exponent), dtype)
    check(values(dtype, (4,), rng, scale=10.0**exponent) * np.array([1, 10, 100, 1000]), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "data",
    [
        [1.0, 2.0, 3.0],
        [-1.0, 0.0, 100.0],
        [0.0, 0.0],
        [-0.0, 1.0],
        [-0.0],
        [1.0, 1000.0],
        [1.0, 1001.0],
        [1.0, 2000.0],
        [1e8, 1.0],
        [123456789.0, 2.0],
        [1e9],
        [0.5, 1.0],
        [0.0001, 0.1],
        [0.00009, 0.1],
        [0.1, 100.0],
        [0.1, 100.1],
        [1.5, -2.25, 3.125],
        [0.00005, 0.00005],
        [9.99995, 0.5],
        [0.00012345],
        [65504.0, -65504.0],
        [1 / 3, 2 / 3],
        [2.5, 3.5, 0.125],
    ],
)
def test_mode_choice(dtype, data):
    check(data, dtype)
    check(np.array(data)[None, :].repeat(2, axis=0), dtype)


@pytest.mark.parametrize("dtype", (*FLOATS, "complex64", "complex128"))
@pytest.mark.parametrize(
    "data",
    [
        [NAN],
        [INF],
        [-INF],
        [NAN, INF, -INF],
        [NAN, 0.0, -0.0],
        [1.0, NAN],
        [100.0, -INF],
        [1.5, NAN, INF],
        [1e-9, NAN, -INF, 3.0],
        [1e10, INF],
        [0.0, -0.0, 0.0],
    ],
)
def test_nan_inf_and_zeros(dtype, data):
    check(data, dtype)


@pytest.mark.parametrize("dtype", ("complex64", "complex128"))
@pytest.mark.parametrize(
    "data",
    [
        [1 + 2j, -3 - 4j],
        [0.5 - 0.0j, -0.0 + 0.0j],
        [complex(0.0, -0.0)],
        [1e-6 + 1j, 1e5 - 2j],
        [complex(NAN, 1.0), complex(1.0, NAN), complex(INF, -INF)],
        [1.25 + 1e9j],
        [complex(3, 0)],
    ],
)
def test_complex(dtype, data):
    check(data, dtype)
    check(data[0], dtype)


@pytest.mark.parametrize("dtype", ("int8", "int16", "int32", "int64", "uint8"))
def test_integer_extremes(dtype):
    info = np.iinfo(NP_DTYPES[dtype])
    check([info.min, 0, info.max], dtype)
    check([[info.min, 1], [-1 if info.min else 2, info.max]], dtype)


def test_float_extremes():
    for dtype, np_dtype in [("float16", np.float16), ("float32", np.float32), ("float64", np.float64)]:
        info = np.finfo(np_dtype)
        check([float(info.max), float(info.tiny), float(info.smallest_subnormal)], dtype)
        check([float(info.eps), 1.0], dtype)
    info = ml_dtypes.finfo(ml_dtypes.bfloat16)
    check([float(info.max), float(info.tiny), 1.0], "bfloat16")


def test_half_precision_prints_exact_values():
    # 0.1 is 0.0999755859375 in float16 and 0.10009765625 in bfloat16: each prints its own digits.
    set_both(precision=10)
    assert check([0.1, 0.2], "float16") == "tensor([0.0999755859, 0.1999511719], dtype=ember.float16)"
    check([0.1, 0.2, 1 / 3], "bfloat16")
    check([0.1, 1 / 3], "float32")


# -- shapes, layouts, summarization ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", ("float32", "int64", "bool", "float64", "complex64", "int16"))
@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0), (2, 0, 4), (0, 0)])
def test_empty(dtype, shape):
    check(np.zeros(shape), dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ("float32", "int32", "bfloat16", "complex64", "bool"))
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (3, 2, 2, 2)])
def test_non_contiguous(layout, dtype, shape):
    rng = np.random.default_rng(len(shape))
    check(values(dtype, shape, rng, scale=50.0), dtype, layout)


@pytest.mark.parametrize("dtype", ("float32", "int64", "float16", "complex128", "bool", "uint8"))
@pytest.mark.parametrize("shape", [(1001,), (2000,), (40, 40), (7, 300), (300, 7), (12, 10, 10), (5, 5, 5, 9)])
def test_summarized(dtype, shape):
    rng = np.random.default_rng(shape[0])
    check(values(dtype, shape, rng, scale=1e3), dtype)


def test_summarized_mode_depends_on_shown_values_only():
    # The middle holds a tiny value that is elided; it must not push the print into scientific mode.
    data = np.full(2000, 1.5)
    data[1000] = 1e-9
    assert "e-" not in check(data, "float32")
    check(np.arange(4000.0).reshape(40, 100), "float64", "transposed")


def test_wrapping_at_linewidth():
    rng = np.random.default_rng(7)
    for n in (10, 15, 16, 17, 40, 100):
        check(rng.standard_normal(n) * 1000, "float32")
        check(rng.standard_normal((3, n)), "float64")
        check(rng.integers(-(10**12), 10**12, n), "int64")
        check(rng.standard_normal(n) + 1j * rng.standard_normal(n), "complex64")


# -- suffixes --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (2, 3), (0,), (1000, 1000)])
def test_meta(dtype, shape):
    ours = ember.empty(shape, dtype=getattr(ember, dtype), device="meta")
    theirs = torch.empty(shape, dtype=getattr(torch, dtype), device="meta")
    assert repr(ours) == repr(theirs).replace("torch.", "ember.")


@pytest.mark.parametrize("default", ("float64", "float16", "bfloat16", "float32"))
@pytest.mark.parametrize("dtype", DTYPES)
def test_dtype_suffix_follows_default_dtype(default, dtype):
    set_default_dtype(default)
    rng = np.random.default_rng(3)
    check(values(dtype, (3,), rng), dtype)
    check(np.zeros((0,)), dtype)
    check(values(dtype, (), rng), dtype)
    ours = ember.empty((2,), dtype=getattr(ember, dtype), device="meta")
    assert repr(ours) == repr(torch.empty((2,), dtype=getattr(torch, dtype), device="meta")).replace("torch.", "ember.")


@pytest.mark.parametrize("dtype", ("float32", "float64", "float16", "bfloat16", "complex64"))
def test_requires_grad(dtype):
    rng = np.random.default_rng(5)
    check(values(dtype, (2, 3), rng), dtype, requires_grad=True)
    check(values(dtype, (), rng), dtype, requires_grad=True)
    # Long rows push the suffixes onto a line of their own.
    check(values(dtype, (8,), rng, scale=1e5), dtype, requires_grad=True)
    check(values(dtype, (0, 2), rng), dtype, requires_grad=True)
    ours = ember.empty((2,), dtype=getattr(ember, dtype), device="meta", requires_grad=True)
    theirs = torch.empty((2,), dtype=getattr(torch, dtype), device="meta", requires_grad=True)
    assert repr(ours) == repr(theirs).replace("torch.", "ember.")


def test_grad_fn_suffix():
    # Ember's autograd is not in this package; any node object names itself by class or by name().
    class MulBackward0:
        pass

    class Node:
        def name(self) -> str:
            return "torch::autograd::MulBackward0"

    theirs = repr(torch.tensor([1.0, 2.0], requires_grad=True) * 2)
    for node in (MulBackward0(), Node()):
        ours = ember.tensor([2.0, 4.0])
        ours.requires_grad, ours.grad_fn = True, node
        assert repr(ours) == theirs


def test_suffix_wrapping():
    for n in range(1, 14):
        check(np.arange(n, dtype=np.float64) * 1.5, "float16", requires_grad=True)
        check(np.arange(n) * 1000, "int32")
        check(np.zeros((n, 0)), "int8")


# -- print options ---------------------------------------------------------------------------------


OPTIONS = [
    {"precision": 0},
    {"precision": 1},
    {"precision": 2},
    {"precision": 8},
    {"precision": 12},
    {"threshold": 5},
    {"threshold": 0},
    {"threshold": 5, "edgeitems": 0},
    {"threshold": 5, "edgeitems": 1},
    {"threshold": 5, "edgeitems": 5},
    {"edgeitems": 0},
    {"linewidth": 10},
    {"linewidth": 40},
    {"linewidth": 200},
    {"linewidth": 1},
    {"profile": "short"},
    {"profile": "full"},
    {"profile": "default"},
    {"profile": "short", "precision": 6},
    {"sci_mode": True},
    {"sci_mode": False},
    {"sci_mode": True, "precision": 2},
    {"sci_mode": False, "precision": 1, "linewidth": 50},
]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_print_options(options):
    set_both(**options)
    assert ember.get_printoptions() == torch._tensor_str.get_printoptions()
    rng = np.random.default_rng(11)
    for dtype in ("float32", "float64", "int64", "complex64", "bool", "bfloat16"):
        check(values(dtype, (7,), rng, scale=123.0), dtype)
        check(values(dtype, (4, 9), rng), dtype, "transposed")
        check(values(dtype, (3, 2, 8), rng, scale=0.01), dtype)
        check(values(dtype, (), rng), dtype)
        check(values(dtype, (1200,), rng), dtype)
    check([1.0, 2.0, 0.0, -0.0], "float32")
    check([NAN, 0.0], "float64")
    check([1e-5, 1.0, NAN], "float32")


def test_options_roundtrip_and_profiles():
    assert ember.get_printoptions() == {
        "precision": 4,
        "threshold": 1000,
        "edgeitems": 3,
        "linewidth": 80,
        "sci_mode": None,
    }
    ember.set_printoptions(profile="full", sci_mode=True)
    assert ember.get_printoptions() == {
        "precision": 4,
        "threshold": math.inf,
        "edgeitems": 3,
        "linewidth": 80,
        "sci_mode": True,
    }
    # Like PyTorch, every call without sci_mode resets it to automatic.
    ember.set_printoptions(precision=3)
    assert ember.get_printoptions()["sci_mode"] is None
    from ember.core.printing import printoptions

    with printoptions(precision=1):
        assert repr(ember.tensor([1.25, 2.5])) == "tensor([1.2, 2.5])"
    assert ember.get_printoptions()["precision"] == 3


def test_full_profile_prints_everything():
    set_both(profile="full")
    check(np.arange(1500) / 4, "float32")


# -- the rest of the surface -----------------------------------------------------------------------


def test_format_of_zero_dim_tensors():
    assert f"{ember.tensor(2.5):.3f}" == f"{torch.tensor(2.5):.3f}"
    assert f"{ember.tensor(7):5d}" == f"{torch.tensor(7):5d}"
    assert f"{ember.tensor([1.0, 2.0])}" == f"{torch.tensor([1.0, 2.0])}"
    with pytest.raises(TypeError):
        format(ember.tensor([1.0, 2.0]), ".2f")


def _as(cls, t):
    """``t``'s data seen as an instance of the subclass ``cls`` (the core has no ``as_subclass`` yet)."""
    out = cls()
    for name in ("_storage", "_shape", "_stride", "_offset", "dtype", "device", "_array", "_contig", "_base"):
        setattr(out, name, getattr(t, name))
    out.requires_grad, out.grad, out.grad_fn = t.requires_grad, None, None
    return out


def test_subclasses_print_their_name():
    class Mine(ember.Tensor):
        pass

    class TorchMine(torch.Tensor):
        pass

    theirs = torch.tensor([1.0, 2.0]).as_subclass(TorchMine)
    assert repr(_as(Mine, ember.tensor([1.0, 2.0]))) == repr(theirs).replace("TorchMine", "Mine")


def test_parameters_print_as_plain_tensors():
    # A class marked ``_is_param`` (ember.nn's Parameter) prints as "tensor(", its subclasses wrapped
    # in "Parameter(...)"; PyTorch's Parameter.__repr__ adds its own first line, which is nn's business.
    class Parameter(ember.Tensor):
        _is_param = True

    class Mine(Parameter):
        pass

    class TorchMine(torch.nn.Parameter):
        pass

    t = ember.tensor([1.0, 2.0], requires_grad=True)
    plain = repr(torch.nn.Parameter(torch.tensor([1.0, 2.0]))).removeprefix("Parameter containing:\n")
    assert repr(_as(Parameter, t)) == plain
    sub = repr(TorchMine(torch.tensor([1.0, 2.0]))).removeprefix("Parameter containing:\n")
    assert repr(_as(Mine, t)) == sub.replace("TorchMine", "Mine")


# -- property: random small tensors ----------------------------------------------------------------


@st.composite
def random_tensors(draw):
    dtype = draw(st.sampled_from(DTYPES))
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=0, max_size=4)))
    layout = draw(st.sampled_from(LAYOUTS))
    if (layout == "transposed" and len(shape) < 2) or (layout != "contiguous" and (not shape or 0 in shape)):
        layout = "contiguous"
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    exponent = draw(st.integers(-12, 12))
    data = values(dtype, shape, rng, scale=10.0**exponent)
    if dtype in FLOATS or dtype.startswith("complex"):
        mix = draw(st.sampled_from(["none", "integral", "special", "zeros"]))
        if mix == "integral":
            data = np.round(data)
        elif mix == "special" and data.size:
            flat = data.reshape(-1)
            picks = rng.integers(0, flat.size, size=max(1, flat.size // 3))
            flat[picks] = rng.choice([NAN, INF, -INF, 0.0, -0.0], size=picks.size)
        elif mix == "zeros":
            data = data * (rng.random(shape) < 0.3)
    return data, dtype, layout


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(random_tensors(), st.sampled_from([{}, {"precision": 2}, {"sci_mode": True}, {"linewidth": 30}]))
def test_random_tensors(case, options):
    data, dtype, layout = case
    set_both(**options)
    try:
        check(data, dtype, layout)
    finally:
        set_both(profile="default")
