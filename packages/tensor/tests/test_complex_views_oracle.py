"""Complex tensors taken apart and put together, against PyTorch: ``real``/``imag`` and their
settable properties, ``view_as_real``/``view_as_complex`` (views, layouts and errors), ``conj`` and
its relatives, ``complex`` and ``polar``."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")


def _complex(shape, dtype=np.complex64, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _both(array):
    return ember.tensor(array.copy()), torch.tensor(array.copy())


def _same(ours, theirs):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert ours.stride() == theirs.stride()
    assert ours.storage_offset() == theirs.storage_offset()
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize(
    "view",
    [
        lambda t: t,
        lambda t: t.t(),
        lambda t: t[1:, ::2],
        lambda t: t[2],
        lambda t: t[0, 1],
    ],
)
def test_view_as_real_and_parts_match(dtype, view):
    a, b = _both(_complex((3, 4), dtype))
    a, b = view(a), view(b)
    _same(ember.view_as_real(a), torch.view_as_real(b))
    _same(a.real, b.real)
    _same(a.imag, b.imag)
    _same(ember.real(a), torch.real(b))
    _same(ember.imag(a), torch.imag(b))


def test_parts_are_views_that_write_through():
    a, b = _both(_complex((2, 3)))
    for lib, t in ((ember, a), (torch, b)):
        t.real.mul_(2)
        t.imag[0] = 7.0
        lib.view_as_real(t)[1, 2, 0] = -1.0
        assert t.real._base is t if lib is ember else True
    _same(a, b)


def test_setting_real_and_imag():
    a, b = _both(_complex((2, 3), np.complex128))
    for lib, t in ((ember, a), (torch, b)):
        t.real = lib.ones(3, dtype=lib.float64)
        t.imag = lib.tensor(5.0, dtype=lib.float64)
    _same(a, b)
    x, y = _both(np.arange(4.0))
    x.real = ember.zeros(4, dtype=ember.float64)
    y.real = torch.zeros(4, dtype=torch.float64)
    _same(x, y)


def test_real_of_a_real_tensor_is_itself_and_imag_refuses():
    a, b = _both(np.arange(3.0))
    assert ember.real(a) is a and torch.real(b) is b
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        _ = a.imag
    with pytest.raises(RuntimeError, match="view_as_real is only supported for complex tensors"):
        ember.view_as_real(a)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "view",
    [lambda t: t, lambda t: t[1:], lambda t: t[:, ::2], lambda t: t.transpose(0, 1)[:, :, :2].transpose(0, 1)],
)
def test_view_as_complex_matches(dtype, view):
    x = np.random.default_rng(1).standard_normal((3, 4, 2)).astype(dtype)
    a, b = _both(x)
    a, b = view(a), view(b)
    _same(ember.view_as_complex(a), torch.view_as_complex(b))


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.zeros(3, 3),
        lambda lib: lib.zeros(3, 2, dtype=lib.int64),
        lambda lib: lib.zeros(2, 3)[:, 1:],
        lambda lib: lib.zeros(2, 2).t(),
        lambda lib: lib.zeros(3, 3)[:, :2],
        lambda lib: lib.zeros(4)[1:3].view(1, 2),
        lambda lib: lib.zeros(()),
    ],
)
def test_view_as_complex_errors(make):
    with pytest.raises(RuntimeError) as theirs:
        torch.view_as_complex(make(torch))
    with pytest.raises(RuntimeError) as ours:
        ember.view_as_complex(make(ember))
    assert str(ours.value) == str(theirs.value).split("\n")[0]


def test_view_as_complex_shares_storage():
    x = ember.zeros(2, 2)
    z = ember.view_as_complex(x)
    z.mul_(0).add_(1 + 2j)
    np.testing.assert_array_equal(x.numpy(), [[1.0, 2.0], [1.0, 2.0]])
    assert z._base is x


def test_conj_family():
    a, b = _both(_complex((2, 3), np.complex128))
    _same(a.conj(), b.conj().resolve_conj())
    _same(ember.conj_physical(a), torch.conj_physical(b))
    _same(a.mH, b.mH.resolve_conj())
    _same(a.mT, b.mT)
    _same(ember.adjoint(a), torch.adjoint(b).resolve_conj())
    _same(a.H, b.H.resolve_conj())
    assert not a.conj().is_conj() and not a.is_neg()
    assert a.resolve_conj() is a and a.resolve_neg() is a
    c = a.clone()
    c.conj_physical_()
    _same(c, b.conj().resolve_conj())
    r, s = _both(np.arange(4.0))
    assert r.conj() is r and s.conj() is s


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["complex", "polar"])
def test_complex_and_polar_match(name, dtype):
    rng = np.random.default_rng(2)
    x, y = rng.random((3, 1)).astype(dtype), rng.standard_normal((4,)).astype(dtype)
    ours = getattr(ember, name)(ember.tensor(x), ember.tensor(y))
    theirs = getattr(torch, name)(torch.tensor(x), torch.tensor(y))
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    out = ember.empty(0, dtype=ours.dtype)
    assert getattr(ember, name)(ember.tensor(x), ember.tensor(y), out=out) is out
    np.testing.assert_array_equal(out.numpy(), ours.numpy())


def test_complex_keeps_infinities_apart():
    inf = float("inf")
    ours = ember.complex(ember.tensor([inf, 0.0]), ember.tensor([0.0, inf]))
    theirs = torch.complex(torch.tensor([inf, 0.0]), torch.tensor([0.0, inf]))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("name", ["complex", "polar"])
@pytest.mark.parametrize(
    "dtypes", [("int64", "int64"), ("float32", "float64"), ("float64", "float32"), ("int32", "float32")]
)
def test_complex_and_polar_errors(name, dtypes):
    def call(lib):
        return getattr(lib, name)(
            lib.ones(2, dtype=getattr(lib, dtypes[0])), lib.ones(2, dtype=getattr(lib, dtypes[1]))
        )

    with pytest.raises(RuntimeError) as theirs:
        call(torch)
    with pytest.raises(RuntimeError) as ours:
        call(ember)
    assert str(ours.value) == str(theirs.value).split("\n")[0]


def _sgn_reference(z: complex) -> complex:
    """z / |z| with each part divided as a real: correctly rounded, whatever the machine."""
    m = math.hypot(z.real, z.imag)
    if m == 0:
        return 0j
    if not math.isfinite(m):
        return complex(math.nan, math.nan)
    return complex(z.real / m, z.imag / m)


def test_sgn_of_complex_tensors():
    # PyTorch's own last bit depends on the CPU's vector width (it divides as complex numbers): its
    # values are matched within one ulp, the correctly rounded reference exactly.
    values = np.array([0j, 1 + 0j, -1j, 3 - 4j, -0.0 - 0j, complex("inf+1j"), 0.3 + 0.7j])
    a, b = _both(values)
    ours = ember.sgn(a).numpy()
    np.testing.assert_array_equal(ours, np.array([_sgn_reference(complex(z)) for z in values]))
    np.testing.assert_allclose(ours, torch.sgn(b).numpy(), rtol=3e-16, atol=0)
    a.sgn_()
    np.testing.assert_array_equal(a.numpy(), ours)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, a, b: lib.linalg.vecdot(a, b),
        lambda lib, a, b: lib.vdot(a[0], b[1]),
        lambda lib, a, b: lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b, adjoint=True),
        lambda lib, a, b: lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b, left=False),
        lambda lib, a, b: lib.linalg.householder_product(*lib.geqrf(a)),
    ],
)
def test_linear_algebra_that_conjugates(call):
    a, b = _complex((3, 3), np.complex128, seed=3), _complex((3, 3), np.complex128, seed=4)
    ours = call(ember, ember.tensor(a), ember.tensor(b))
    theirs = call(torch, torch.tensor(a), torch.tensor(b)).resolve_conj()
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)
