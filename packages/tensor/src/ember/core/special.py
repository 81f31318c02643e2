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

The two common ranges are evaluated on every element and the right one is kept per element, which\ncosts less than gathering each range's elements by a mask; only the rare tail past 4 is gathered.

All functions compute in float64; erf and erfc round once to the dtype asked for (float64 by default),\nerfinv returns float64.
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
    """erf(x) for |x| <= 0.5, on a 1-d array (in place on fresh buffers: same rounding as out of place)."""
    z = x * x
    num = _A4 * z
    den = z.copy()
    for a, b in zip(_A[:3], _B[:3], strict=True):
        num += a
        num *= z
        den += b
        den *= z
    num += _A[3]
    num *= x
    den += _B[3]
    num /= den
    return num


def _erfc_mid(y: np.ndarray) -> np.ndarray:
    """erfc(y) exp(y^2) for 0.5 < y <= 4, on a 1-d array."""
    num = _C8 * y
    den = y.copy()
    for c, d in zip(_C[:7], _D[:7], strict=True):
        num += c
        num *= y
        den += d
        den *= y
    num += _C[7]
    den += _D[7]
    num /= den
    return num


def _erfc_tail(y: np.ndarray) -> np.ndarray:
    """erfc(y) exp(y^2) for y > 4: a rational in 1/y^2 (inf and nan pass through as 0 and nan)."""
    z = 1.0 / (y * y)
    num, den = _P5 * z, z
    for p, q in zip(_P[:4], _Q[:4], strict=True):
        num, den = (num + p) * z, (den + q) * z
    return (_INV_SQRT_PI - z * (num + _P[4]) / (den + _Q[4])) / y


def _erfc_large(y: np.ndarray) -> np.ndarray:
    """erfc(y) for y > 0.5, inf and nan, on a 1-d array. The middle range is evaluated on every
    element (wrong but harmless below 0.5, where callers take another range's value): whole-array
    arithmetic is several times cheaper than gathering and scattering by a mask. Only the rare tail
    past 4 (and inf, nan) is gathered."""
    r = _erfc_mid(np.minimum(y, 4.0))
    rest = ~(y <= 4.0)
    any_rest = rest.any()
    if any_rest:
        r[rest] = _erfc_tail(y[rest])
    rounded = y * 16.0
    np.trunc(rounded, out=rounded)
    rounded /= 16.0
    near = y - rounded
    near *= y + rounded
    np.negative(near, out=near)
    np.exp(near, out=near)
    far = rounded * rounded
    np.negative(far, out=far)
    np.exp(far, out=far)
    far *= near
    r *= far
    if any_rest:
        r[np.isinf(y)] = 0.0
    return r


# Elements per block: the dozens of passes of a rational approximation stay in cache for blocks of
# this size, and run about twice as fast as over a large array that streams from memory each pass.
_BLOCK = 32768


def blockwise(kernel, x, dtype=np.float64) -> np.ndarray:
    """``kernel`` (float64 1-d array -> float64 1-d array, elementwise) over ``x`` in blocks, each
    converted to float64 on the way in and rounded to ``dtype`` on the way out."""
    x = np.asarray(x)
    flat = x.reshape(-1)
    if flat.size <= _BLOCK:
        return kernel(flat.astype(np.float64, copy=False)).astype(dtype, copy=False).reshape(x.shape)
    out = np.empty(flat.shape, dtype)
    for start in range(0, flat.size, _BLOCK):
        out[start : start + _BLOCK] = kernel(flat[start : start + _BLOCK].astype(np.float64, copy=False))
    return out.reshape(x.shape)


def _erf_flat(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        y = np.abs(x)
        small = y <= 0.5
        out = _erf_small(x)
        if not small.all():  # nan included in the large range: it stays nan
            large = _erfc_large(y)
            np.subtract(1.0, large, out=large)
            np.copysign(large, x, out=large)
            np.copyto(out, large, where=~small)
    return out


def _erfc_flat(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        y = np.abs(x)
        small = y <= 0.5
        out = _erf_small(x)
        np.subtract(1.0, out, out=out)
        if not small.all():
            tail = _erfc_large(y)
            np.copyto(out, np.where(x < 0, 2.0 - tail, tail), where=~small)
    return out


def erf(x, dtype=np.float64) -> np.ndarray:
    """erf of a real array, computed in float64 and rounded once to ``dtype``."""
    return blockwise(_erf_flat, x, dtype)


def erfc(x, dtype=np.float64) -> np.ndarray:
    """erfc of a real array, computed in float64 and rounded once to ``dtype``."""
    return blockwise(_erfc_flat, x, dtype)


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
