"""Special functions on NumPy arrays, for kernels that NumPy lacks (no SciPy at run time).

``erf`` and ``erfc`` use W. J. Cody's rational Chebyshev approximations (Math. Comp. 1969), three
ranges of |x|: a rational function of x^2 for erf below 0.5, and exp(-x^2) times a rational function
of x (or of 1/x^2 past 4) for erfc above. erfc is the direct result above 0.5, so it keeps its
relative accuracy in the tail, and erf = 1 - erfc there loses nothing. Both are good to about 1e-16
relative in float64. exp(-x^2) is split as exp(-r^2) exp(-(x-r)(x+r)) with r = x rounded to 1/16,
because x^2 itself would round and cost accuracy for large x.

``erfinv`` starts from M. Giles' single-precision approximation (about 1e-7) and refines it with
Newton steps on erf, or on log erfc for |y| > 0.5, where 1 - |y| is exact and erf is too flat to
invert accurately. Each step doubles the correct digits: two reach float64 precision in the central
range, four in the tail, where the guess is poorer.

Each range is computed only on its own elements (boolean indexing), not on all of them.

All functions compute in float64 and return float64; callers round to their dtype once.
"""

from __future__ import annotations

import numpy as np

_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02, 3.20937758913846947e03)
_A4 = 1.85777706184603153e-1
_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03, 2.84423683343917062e03)
_C = (
    5.64188496988670089e-1,
    8.88314979438837594e00,
    6.61191906371416295e01,
    2.98635138197400131e02,
    8.81952221241769090e02,
    1.71204761263407058e03,
    2.05107837782607147e03,
    1.23033935479799725e03,
)
_C8 = 2.15311535474403846e-8
_D = (
    1.57449261107098347e01,
    1.17693950891312499e02,
    5.37181101862009858e02,
    1.62138957456669019e03,
    3.29079923573345963e03,
    4.36261909014324716e03,
    3.43936767414372164e03,
    1.23033935480374942e03,
)
_P = (
    3.05326634961232344e-1,
    3.60344899949804439e-1,
    1.25781726111229246e-1,
    1.60837851487422766e-2,
    6.58749161529837803e-4,
)
_P5 = 1.63153871373020978e-2
_Q = (
    2.56852019228982242e00,
    1.87295284992346725e00,
    5.27905102951428412e-1,
    6.05183413124413191e-2,
    2.33520497626869185e-3,
)
_INV_SQRT_PI = 5.6418958354775628695e-1
_TWO_OVER_SQRT_PI = 1.1283791670955125739


def _erf_small(x: np.ndarray) -> np.ndarray:
    """erf(x) for |x| <= 0.5."""
    z = x * x
    num, den = _A4 * z, z
    for a, b in zip(_A[:3], _B[:3], strict=True):
        num, den = (num + a) * z, (den + b) * z
    return x * (num + _A[3]) / (den + _B[3])


def _erfc_mid(y: np.ndarray) -> np.ndarray:
    """erfc(y) exp(y^2) for 0.5 < y <= 4."""
    num, den = _C8 * y, y
    for c, d in zip(_C[:7], _D[:7], strict=True):
        num, den = (num + c) * y, (den + d) * y
    return (num + _C[7]) / (den + _D[7])


def _erfc_tail(y: np.ndarray) -> np.ndarray:
    """erfc(y) exp(y^2) for y > 4: a rational in 1/y^2 (inf and nan pass through as 0 and nan)."""
    z = 1.0 / (y * y)
    num, den = _P5 * z, z
    for p, q in zip(_P[:4], _Q[:4], strict=True):
        num, den = (num + p) * z, (den + q) * z
    return (_INV_SQRT_PI - z * (num + _P[4]) / (den + _Q[4])) / y


def _erfc_large(y: np.ndarray) -> np.ndarray:
    """erfc(y) for y > 0.5, inf and nan; each range is computed only on its own elements."""
    r = np.empty_like(y)
    mid = y <= 4.0
    r[mid] = _erfc_mid(y[mid])
    tail = ~mid
    r[tail] = _erfc_tail(y[tail])
    rounded = np.trunc(y * 16.0) / 16.0
    r *= np.exp(-rounded * rounded) * np.exp(-(y - rounded) * (y + rounded))
    r[np.isinf(y)] = 0.0
    return r


def erf(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    y = np.abs(x)
    small = y <= 0.5
    with np.errstate(all="ignore"):
        out[small] = _erf_small(x[small])
        big = ~small  # nan included: it stays nan
        out[big] = np.copysign(1.0 - _erfc_large(y[big]), x[big])
    return out


def erfc(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    y = np.abs(x)
    small = y <= 0.5
    with np.errstate(all="ignore"):
        out[small] = 1.0 - _erf_small(x[small])
        big = ~small
        tail = _erfc_large(y[big])
        out[big] = np.where(x[big] < 0, 2.0 - tail, tail)
    return out


def _erfinv_guess(y: np.ndarray) -> np.ndarray:
    """Giles' approximation of erfinv, accurate to about 1e-7 relative on (-1, 1)."""
    w = -np.log((1.0 - y) * (1.0 + y))
    central = w < 5.0
    u = w - 2.5
    p = np.full_like(y, 2.81022636e-08)
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164):
        p = c + p * u
    p = 1.50140941 + (0.246640727 + p * u) * u
    v = np.sqrt(w) - 3.0
    q = np.full_like(y, -0.000200214257)
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047):
        q = c + q * v
    q = 2.83297682 + (1.00167406 + q * v) * v
    return np.where(central, p, q) * y


def erfinv(y) -> np.ndarray:
    y = np.asarray(y, dtype=np.float64)
    a = np.abs(y)
    out = np.where(a == 1.0, np.copysign(np.inf, y), np.nan)  # |y| > 1 and nan give nan
    with np.errstate(all="ignore"):
        central = a <= 0.5
        t = y[central]
        x = _erfinv_guess(t)
        for _ in range(2):  # Newton on erf(x) = y, from a guess good to about 1e-7
            x = x - (erf(x) - t) / (_TWO_OVER_SQRT_PI * np.exp(-x * x))
        out[central] = x
        tail = (a > 0.5) & (a < 1.0)
        t = y[tail]
        x = np.abs(_erfinv_guess(t))
        log_rest = np.log(1.0 - np.abs(t))
        for _ in range(4):
            # Newton on log(erfc(x)) = log(1 - |y|), nearly linear in x, so that the guess's error in
            # the far tail (Giles' fit ends near 1 - 2^-24) does not slow it down.
            c = erfc(x)
            x = x + (np.log(c) - log_rest) * c / (_TWO_OVER_SQRT_PI * np.exp(-x * x))
        out[tail] = np.copysign(x, t)
    return out
