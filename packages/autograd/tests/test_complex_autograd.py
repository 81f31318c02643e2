"""Gradients through complex tensors, against PyTorch: its convention (the conjugate Wirtinger
derivative of a real loss, times two) for every everyday op, several shapes, losses that take the
real part or the absolute value of a sum."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")


def _complex(rng, shape, dtype=np.complex128):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _grads(fn, arrays, loss):
    """fn(lib, *leaves) in both libraries, reduced by ``loss``; the leaves' gradients (ours, theirs)."""
    out = []
    for lib in (ember, torch):
        leaves = [lib.tensor(a.copy()).requires_grad_(True) for a in arrays]
        y = fn(lib, *leaves)
        total = y.sum()
        value = total.real if loss == "real" and total.is_complex() else total.abs()
        value.backward()
        out.append([np.asarray(t.grad.numpy()) for t in leaves])
    return out


_SHAPES = [(5,), (3, 4), (2, 3, 2)]

_UNARY = {
    "neg": lambda lib, z: -z,
    "conj": lambda lib, z: z.conj(),
    "conj_physical": lambda lib, z: lib.conj_physical(z),
    "real": lambda lib, z: z.real * 1.5,
    "imag": lambda lib, z: z.imag * 1.5,
    "abs": lambda lib, z: z.abs(),
    "angle": lambda lib, z: z.angle(),
    "exp": lambda lib, z: z.exp(),
    "log": lambda lib, z: z.log(),
    "sqrt": lambda lib, z: z.sqrt(),
    "sgn": lambda lib, z: z.sgn(),
    "acosh": lambda lib, z: z.acosh(),
    "cumprod": lambda lib, z: z.cumprod(-1),
    "cumprod_with_zeros": lambda lib, z: (z * (z.real > 0)).cumprod(0),
    "sin": lambda lib, z: z.sin(),
    "tanh": lambda lib, z: z.tanh(),
    "reciprocal": lambda lib, z: z.reciprocal(),
    "prod": lambda lib, z: z.prod(),
    "var": lambda lib, z: z.var(),
    "vdot": lambda lib, z: lib.vdot(z.reshape(-1), z.reshape(-1).flip(0)),
    "pow_scalar": lambda lib, z: z**3,
    "sum": lambda lib, z: z.sum(-1) * (1 + 2j),
    "mean": lambda lib, z: z.mean() * (2 - 1j),
    "view_as_real": lambda lib, z: lib.view_as_real(z) * lib.tensor([1.0, -3.0], dtype=lib.float64),
    "square_abs": lambda lib, z: (z * z.conj()).real,
    "fft": lambda lib, z: lib.fft.fft(z, dim=-1),
    "ifft": lambda lib, z: lib.fft.ifft(z, dim=-1, norm="ortho"),
    "mul_by_own_conj": lambda lib, z: z * z.conj() * 1j + z,
    "H": lambda lib, z: z.mT.conj() * 2 if z.ndim >= 2 else z.conj(),
}


@pytest.mark.parametrize("loss", ["real", "abs"])
@pytest.mark.parametrize("shape", _SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(_UNARY))
def test_unary_gradients_match_pytorch(name, shape, loss):
    z = _complex(np.random.default_rng(0), shape)
    ours, theirs = _grads(_UNARY[name], [z], loss)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10, atol=1e-12)


_BINARY = {
    "add": lambda lib, a, b: a + b * 2,
    "sub": lambda lib, a, b: a - b,
    "mul": lambda lib, a, b: a * b,
    "div": lambda lib, a, b: a / b,
    "pow": lambda lib, a, b: a ** (b * 0.1),
}


@pytest.mark.parametrize("loss", ["real", "abs"])
@pytest.mark.parametrize("shape", _SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(_BINARY))
def test_binary_gradients_match_pytorch(name, shape, loss):
    rng = np.random.default_rng(1)
    arrays = [_complex(rng, shape), _complex(rng, shape)]
    ours, theirs = _grads(_BINARY[name], arrays, loss)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss", ["real", "abs"])
@pytest.mark.parametrize("op", ["matmul", "mm"])
def test_matmul_gradients_match_pytorch(op, loss):
    rng = np.random.default_rng(2)
    arrays = [_complex(rng, (3, 4)), _complex(rng, (4, 2))]
    ours, theirs = _grads(lambda lib, a, b: getattr(lib, op)(a, b), arrays, loss)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss", ["real", "abs"])
@pytest.mark.parametrize("name", ["complex", "polar"])
def test_gradients_of_assembling_ops(name, loss):
    rng = np.random.default_rng(3)
    arrays = [rng.random((3, 4)) + 0.5, rng.standard_normal((3, 4))]
    ours, theirs = _grads(lambda lib, a, b: getattr(lib, name)(a, b) * (1 - 2j), arrays, loss)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss", ["real", "abs"])
def test_view_as_complex_gradient(loss):
    x = np.random.default_rng(4).standard_normal((3, 2))
    ours, theirs = _grads(lambda lib, a: lib.view_as_complex(a * 1.0) ** 2, [x], loss)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss", ["real", "abs"])
def test_real_fft_gradients(loss):
    x = np.random.default_rng(5).standard_normal((2, 6))
    ours, theirs = _grads(lambda lib, a: lib.fft.rfft(a) * (1 + 1j), [x], loss)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10, atol=1e-12)
    ours, theirs = _grads(lambda lib, a: lib.fft.irfft(lib.fft.rfft(a) * (2 - 1j), n=6), [x], loss)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10, atol=1e-12)


def test_real_input_gets_the_real_part_of_a_complex_gradient():
    rng = np.random.default_rng(6)
    x, z = rng.standard_normal(4), _complex(rng, (4,))
    ours, theirs = _grads(lambda lib, a, b: a * b, [x, z], "abs")
    assert ours[0].dtype == np.float64
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_complex64_gradients():
    z = _complex(np.random.default_rng(7), (4,), np.complex64)
    ours, theirs = _grads(lambda lib, a: (a * a).exp(), [z], "abs")
    assert ours[0].dtype == np.complex64
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4, atol=1e-5)


def _inplace_through_parts(lib, w):
    z = w * 2
    z.real.mul_(3)
    z.imag.add_(z.real)
    return z * z


def _setting_a_part(lib, w):
    z = w.clone()
    z.real = lib.tensor([5.0, -6.0, 1.0], dtype=lib.float64)
    return z * z


@pytest.mark.parametrize("loss", ["real", "abs"])
@pytest.mark.parametrize("fn", [_inplace_through_parts, _setting_a_part])
def test_inplace_writes_through_real_and_imag_views(fn, loss):
    z = _complex(np.random.default_rng(8), (3,))
    ours, theirs = _grads(fn, [z], loss)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10, atol=1e-12)


def test_inplace_through_a_complex_view_of_reals():
    def fn(lib, x):
        c = x * 1
        r = c[:, 0]  # taken before the write: its history follows the base's
        z = lib.view_as_complex(c)[1:]
        z.mul_(1 + 1j)
        return z.abs().sum() + (r**2).sum()

    x = np.random.default_rng(9).standard_normal((3, 2))
    ours, theirs = _grads(fn, [x], "real")
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(_UNARY))
def test_gradcheck_unary(name):
    z = ember.tensor(_complex(np.random.default_rng(10), (2, 3))).requires_grad_()
    assert ember.autograd.gradcheck(lambda a: _UNARY[name](ember, a), (z,))


@pytest.mark.parametrize("name", sorted(_BINARY))
def test_gradcheck_binary(name):
    rng = np.random.default_rng(11)
    a, b = (ember.tensor(_complex(rng, (2, 3))).requires_grad_() for _ in range(2))
    assert ember.autograd.gradcheck(lambda x, y: _BINARY[name](ember, x, y), (a, b))


def test_gradcheck_assembling_ops_and_matmul():
    rng = np.random.default_rng(12)
    r, t = (ember.tensor(rng.random((2, 3)) + 0.5).requires_grad_() for _ in range(2))
    assert ember.autograd.gradcheck(lambda x, y: ember.complex(x, y) ** 2, (r, t))
    assert ember.autograd.gradcheck(lambda x, y: ember.polar(x, y), (r, t))
    a = ember.tensor(_complex(rng, (3, 4))).requires_grad_()
    b = ember.tensor(_complex(rng, (4, 2))).requires_grad_()
    assert ember.autograd.gradcheck(ember.matmul, (a, b))
    assert ember.autograd.gradcheck(lambda x: ember.view_as_complex(x.contiguous()), (r.reshape(3, 2),))


@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, a, b: lib.linalg.inv(a) @ b,
        lambda lib, a, b: lib.linalg.det(a) * b,
        lambda lib, a, b: lib.linalg.solve(a, b),
        lambda lib, a, b: lib.linalg.solve(a, b[:, 0]),
        lambda lib, a, b: lib.linalg.solve(a, b.mT, left=False),
        lambda lib, a, b: lib.linalg.solve_triangular(a.triu(), b, upper=True),
        lambda lib, a, b: lib.linalg.solve_triangular(a.tril(), b.mT, upper=False, left=False),
    ],
)
def test_linear_algebra_gradients(fn):
    rng = np.random.default_rng(13)
    arrays = [_complex(rng, (3, 3)) + 3 * np.eye(3), _complex(rng, (3, 2))]
    ours, theirs = _grads(fn, arrays, "abs")
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


def test_gradcheck_stft_istft_and_second_order():
    rng = np.random.default_rng(14)
    window = ember.hann_window(8, dtype=ember.float64)
    x = ember.tensor(rng.standard_normal(20)).requires_grad_()
    assert ember.autograd.gradcheck(lambda a: ember.stft(a, 8, hop_length=3, window=window, return_complex=True), (x,))
    spec = ember.tensor(_complex(rng, (5, 9))).requires_grad_()
    assert ember.autograd.gradcheck(lambda s: ember.istft(s, 8, window=window + 0.1, length=20), (spec,))
    z = ember.tensor(_complex(rng, (2,))).requires_grad_()
    assert ember.autograd.gradgradcheck(lambda a: (a * a.conj() * a).exp(), (z,))
