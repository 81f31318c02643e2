"""The normal distribution's functions and their relatives on NumPy arrays, in float64: ``erfcx``,
``ndtr``, ``log_ndtr``, ``ndtri``, and the elementary ``entr``, ``sinc``, ``xlogy``, ``xlog1py``,
``logit`` and the orthogonal polynomials.

- ``erfcx(x) = exp(x^2) erfc(x)``: from ``erfc`` (Cody's, ``ember.core.special``) below 25, and its
  asymptotic series ``1 / (x sqrt(pi)) (1 - 1/(2x^2) + 3/(4x^4) - ...)`` above, where ``exp(x^2)``
  would overflow.
- ``log_ndtr(x)``: ``log1p(-ndtr(-x))`` for ``x > -1``, else ``log(erfcx(-x/sqrt 2) / 2) - x^2/2``,
  which stays finite far into the lower tail.
- ``ndtri(p)``: A&S 26.2.23's starting value (error below 5e-4), then Newton steps on
  ``log_ndtr(x) = log p``, which converge to full precision in the tails too; ``p > 1/2`` is
  solved as ``-ndtri(1 - p)`` (``1 - p`` is exact there).
- The polynomials follow their three-term recurrences up to the largest degree asked for; a negative
  degree gives 0, as in PyTorch.
"""

from __future__ import annotations

import math

import numpy as np

from ember.core.special import erfc

_SQRT1_2 = math.sqrt(0.5)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _quiet(fn):
    def run(*args):
        with np.errstate(all="ignore"):
            return fn(*(np.asarray(a, np.float64) for a in args))

    run.__name__ = fn.__name__
    run.__doc__ = fn.__doc__
    return run


@_quiet
def erfcx(x):
    out = np.exp(x * x) * erfc(x)
    large = x >= 25
    if large.any():
        y = x[large]
        inv = 1.0 / (2.0 * y * y)
        series, term = np.ones_like(y), np.ones_like(y)
        for k in range(1, 8):
            term = term * -(2 * k - 1) * inv
            series += term
        out[large] = series / (y * math.sqrt(math.pi))
    out[x == np.inf] = 0.0
    return out


@_quiet
def ndtr(x):
    return 0.5 * erfc(-x * _SQRT1_2)


@_quiet
def log_ndtr(x):
    upper = np.log1p(-0.5 * erfc(x * _SQRT1_2))
    lower = np.log(0.5 * erfcx(-x * _SQRT1_2)) - 0.5 * x * x
    return np.where(x > -1, upper, lower)


def _ndtri_lower(p: np.ndarray) -> np.ndarray:
    """ndtri for 0 < p <= 1/2."""
    t = np.sqrt(-2.0 * np.log(p))
    x = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t) / (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t**3))
    log_p = np.log(p)
    for _ in range(6):
        current = log_ndtr(x)
        # d log_ndtr / dx = pdf / cdf = exp(log pdf - log cdf)
        slope = np.exp(-0.5 * x * x - _LOG_SQRT_2PI - current)
        x = x - (current - log_p) / slope
    return x


@_quiet
def ndtri(p):
    out = np.full_like(p, np.nan)
    lower = (p > 0) & (p <= 0.5)
    upper = (p > 0.5) & (p < 1)
    out[lower] = _ndtri_lower(p[lower])
    out[upper] = -_ndtri_lower(1.0 - p[upper])
    out[p == 0.5] = 0.0
    out[p == 0] = -np.inf
    out[p == 1] = np.inf
    return out


@_quiet
def entr(x):
    out = -x * np.log(x)
    out[x == 0] = 0.0
    out[x < 0] = -np.inf
    out[np.isnan(x)] = np.nan
    return out


@_quiet
def sinc(x):
    scaled = np.pi * x
    out = np.sin(scaled) / scaled
    return np.where(x == 0, 1.0, out)


@_quiet
def xlogy(x, y):
    out = x * np.log(y)
    return np.where((x == 0) & ~np.isnan(y), 0.0, out)


@_quiet
def xlog1py(x, y):
    out = x * np.log1p(y)
    return np.where((x == 0) & ~np.isnan(y), 0.0, out)


def logit(x, eps=None):
    with np.errstate(all="ignore"):
        x = np.asarray(x)
        if eps is not None:
            x = np.clip(x, eps, 1 - eps)
        return np.log(x / (1 - x))


# -- orthogonal polynomials -----------------------------------------------------------------------


def _recurrence(first, second, step):
    """A polynomial family from P_0 = first(x), P_1 = second(x) and P_{k+1} = step(k, x, P_k, P_{k-1})."""

    @_quiet
    def evaluate(x, n):
        x, n = np.broadcast_arrays(x, n)
        degree = np.where(np.isnan(n), -1, n)
        top = int(np.max(degree)) if degree.size else 0
        previous, current = first(x), second(x)
        out = np.where(degree == 0, previous, 0.0)
        out = np.where(degree == 1, current, out)
        for k in range(1, top):
            previous, current = current, step(k, x, current, previous)
            out = np.where(degree == k + 1, current, out)
        out = np.where(degree < 0, 0.0, out)
        return np.where(np.isnan(x) | np.isnan(n), np.nan, out)

    return evaluate


def _ones(x):
    return np.ones_like(x)


chebyshev_t = _recurrence(_ones, lambda x: x, lambda k, x, p, q: 2 * x * p - q)
chebyshev_u = _recurrence(_ones, lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - q)
chebyshev_v = _recurrence(_ones, lambda x: 2 * x - 1, lambda k, x, p, q: 2 * x * p - q)
chebyshev_w = _recurrence(_ones, lambda x: 2 * x + 1, lambda k, x, p, q: 2 * x * p - q)
hermite_h = _recurrence(_ones, lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - 2 * k * q)
hermite_he = _recurrence(_ones, lambda x: x, lambda k, x, p, q: x * p - k * q)
laguerre_l = _recurrence(_ones, lambda x: 1 - x, lambda k, x, p, q: ((2 * k + 1 - x) * p - k * q) / (k + 1))
legendre_p = _recurrence(_ones, lambda x: x, lambda k, x, p, q: ((2 * k + 1) * x * p - k * q) / (k + 1))


def shifted(polynomial):
    """The family on [0, 1]: ``P*(x) = P(2x - 1)``."""
    return lambda x, n: polynomial(2 * np.asarray(x, np.float64) - 1, n)
