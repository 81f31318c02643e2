"""The special-function kernels against mpmath (sympy's dependency) at float64 precision, where
PyTorch's own kernels are not accurate enough to serve as the oracle (Bessel J and Y between their
series and asymptotic ranges, the normal tail), and FFT gradients of complex inputs against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.core import special_bessel as B
from ember.core import special_gamma as G
from ember.core import special_normal as N

mpmath = pytest.importorskip("mpmath", reason="mpmath comes with sympy")

X = np.concatenate([np.linspace(0.05, 60, 31), [1e-3, 11.99, 12.01, 24.99, 25.01, 100.0]])


@pytest.mark.parametrize(
    "ours, reference",
    [
        (B.j0, lambda x: mpmath.besselj(0, x)),
        (B.j1, lambda x: mpmath.besselj(1, x)),
        (B.y0, lambda x: mpmath.bessely(0, x)),
        (B.y1, lambda x: mpmath.bessely(1, x)),
        (B.k0, lambda x: mpmath.besselk(0, x)),
        (B.k1, lambda x: mpmath.besselk(1, x)),
        (B.i0e, lambda x: mpmath.besseli(0, x) * mpmath.exp(-x)),
        (B.i1e, lambda x: mpmath.besseli(1, x) * mpmath.exp(-x)),
    ],
    ids=["j0", "j1", "y0", "y1", "k0", "k1", "i0e", "i1e"],
)
def test_bessel_functions_match_mpmath(ours, reference):
    expected = np.array([float(reference(x)) for x in X])
    np.testing.assert_allclose(ours(X), expected, rtol=1e-10, atol=1e-13)


def test_normal_tail_and_inverse_match_mpmath():
    x = np.array([-35.0, -20.0, -9.0, -3.0, 0.0, 2.0, 8.0])
    with mpmath.workdps(40):
        expected = np.array([float(mpmath.log(mpmath.ncdf(v))) for v in x])
    np.testing.assert_allclose(N.log_ndtr(x), expected, rtol=1e-13)
    np.testing.assert_allclose(N.ndtr(x[1:4]), np.exp(expected[1:4]), rtol=1e-13)
    p = np.array([1e-300, 1e-30, 1e-5, 0.3, 0.5, 0.9, 1 - 1e-12])
    back = np.array([float(mpmath.ncdf(v)) for v in N.ndtri(p)])
    np.testing.assert_allclose(back, p, rtol=1e-11)


def test_gamma_family_matches_mpmath():
    x = np.array([0.1, 0.5, 1.5, 3.7, 10.0, -2.5])
    np.testing.assert_allclose(G.digamma(x), [float(mpmath.digamma(v)) for v in x], rtol=1e-13)
    np.testing.assert_allclose(G.polygamma(3, x[:5]), [float(mpmath.polygamma(3, v)) for v in x[:5]], rtol=1e-13)
    a, y = np.array([0.5, 5.0, 30.0, 100.0]), np.array([0.2, 7.0, 25.0, 90.0])
    expected = [float(mpmath.gammainc(ai, 0, yi, regularized=True)) for ai, yi in zip(a, y, strict=True)]
    np.testing.assert_allclose(G.gammainc(a, y), expected, rtol=1e-12)


def test_zeta_matches_mpmath():
    s, q = np.array([1.5, 2.0, 4.5, 9.0]), np.array([0.3, 1.0, 7.0, 2.5])
    expected = [float(mpmath.zeta(si, qi)) for si, qi in zip(s, q, strict=True)]
    np.testing.assert_allclose(G.zeta(s, q), expected, rtol=1e-13)


def test_complex_fft_gradients_match_pytorch():
    torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")
    rng = np.random.default_rng(0)
    z = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    cot = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    for name, kwargs in [("fft", {}), ("ifft", {"norm": "ortho"}), ("fftn", {}), ("irfft", {"n": 6})]:
        ours_in = ember.tensor(z).requires_grad_()
        theirs_in = torch.tensor(z, requires_grad=True)
        ours_out = getattr(ember.fft, name)(ours_in, **kwargs)
        theirs_out = getattr(torch.fft, name)(theirs_in, **kwargs)
        c = cot if name != "irfft" else rng.standard_normal(tuple(theirs_out.shape))
        (ours,) = ember.autograd.grad(ours_out, [ours_in], ember.tensor(c).to(ours_out.dtype))
        (theirs,) = torch.autograd.grad(theirs_out, [theirs_in], torch.tensor(c).to(theirs_out.dtype))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)
