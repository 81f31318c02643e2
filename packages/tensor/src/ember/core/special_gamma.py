"""The gamma family on NumPy arrays, in float64: ``lgamma``, ``digamma``, the Hurwitz ``zeta`` and
``polygamma``.

- ``lgamma`` is the C library's (``math.lgamma``) per element: correctly rounded in practice, with
  PyTorch's values at the poles (``inf``).
- ``digamma`` shifts ``x`` up by the recurrence ``psi(x) = psi(x + 1) - 1/x`` until it is at least 10,
  then sums the asymptotic series ``ln x - 1/(2x) - sum B_2k / (2k x^2k)``; negative ``x`` use the
  reflection ``psi(1 - x) - pi / tan(pi x)``. ``psi(0) = -inf`` and ``nan`` at negative integers, as
  PyTorch gives.
- ``zeta(s, q) = sum_k (q + k)^-s`` sums the first terms until ``q + k >= 10`` (at least ten), then
  the Euler-Maclaurin tail with twelve Bernoulli terms (the method of Cephes' ``zeta``).
- ``polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x)`` for ``n >= 1``.
"""

from __future__ import annotations

import math

import numpy as np

# (2k)! / B_2k for k = 1..12: the Euler-Maclaurin denominators.
_EM = (
    12.0,
    -720.0,
    30240.0,
    -1209600.0,
    47900160.0,
    -1.8924375803183791606e9,
    7.47242496e10,
    -2.950130727918164224e12,
    1.1646782814350067249e14,
    -4.5979787224074726105e15,
    1.8152105401943546773e17,
    -7.1661652561756670113e18,
)
# B_2k / (2k) for k = 1..7: the asymptotic series of digamma.
_PSI = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)


def _lgamma_scalar(x: float) -> float:
    if math.isnan(x):
        return x
    if math.isinf(x):
        return math.inf
    try:
        return math.lgamma(x)
    except ValueError:  # a pole: 0 or a negative integer
        return math.inf


_lgamma_vector = np.frompyfunc(_lgamma_scalar, 1, 1)


def lgamma(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return np.asarray(_lgamma_vector(x), np.float64).reshape(x.shape)


def _digamma_positive(x: np.ndarray) -> np.ndarray:
    """psi(x) for x > 0."""
    shift = np.zeros_like(x)
    x = x.copy()
    small = x < 10
    while small.any():
        shift[small] += 1.0 / x[small]
        x[small] += 1.0
        small = x < 10
    inv2 = 1.0 / (x * x)
    series = np.zeros_like(x)
    for c in reversed(_PSI):
        series = (series + c) * inv2
    return np.log(x) - 0.5 / x - series - shift


def digamma(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    out = np.empty_like(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        positive = x > 0
        out[positive] = _digamma_positive(x[positive])
        negative = x < 0
        if negative.any():
            xn = x[negative]
            values = _digamma_positive(1.0 - xn) - np.pi / np.tan(np.pi * xn)
            values[xn == np.floor(xn)] = np.nan
            out[negative] = values
        out[x == 0] = -np.inf
        out[np.isnan(x)] = np.nan
        out[x == np.inf] = np.inf
    return out


def zeta(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The Hurwitz zeta function ``sum_{k >= 0} (q + k)^-s`` (s > 1)."""
    s, q = np.broadcast_arrays(np.asarray(s, np.float64), np.asarray(q, np.float64))
    out = np.full(s.shape, np.nan)
    with np.errstate(all="ignore"):
        s_flat, q_flat = s.reshape(-1), q.reshape(-1)
        result = out.reshape(-1)
        valid = (s_flat > 1) & ~np.isnan(q_flat)
        result[s_flat == 1] = np.inf
        pole = valid & (q_flat <= 0) & (q_flat == np.floor(q_flat))
        result[pole] = np.inf
        # A negative q needs an integer s: (q + k)^-s is not real otherwise.
        valid &= ~pole & ((q_flat > 0) | (s_flat == np.floor(s_flat)))
        if valid.any():
            result[valid] = _zeta_valid(s_flat[valid], q_flat[valid])
    return out


def _zeta_valid(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    terms = int(max(10, math.ceil(10 - float(q.min())))) if q.size else 10
    total = np.zeros_like(s)
    for k in range(terms):
        total += (q + k) ** -s
    a = q + terms
    # The tail from a on: the integral, the half-term and the Bernoulli corrections.
    total += a ** (1 - s) / (s - 1) + 0.5 * a**-s
    factor = s.copy()  # s (s + 1) ... (s + 2j - 2)
    power = a ** (-s - 1)
    for j, denominator in enumerate(_EM):
        term = factor * power / denominator
        total += term
        if j + 1 < len(_EM):
            factor = factor * (s + 2 * j + 1) * (s + 2 * j + 2)
            power = power / (a * a)
    return total


def polygamma(n: int, x: np.ndarray) -> np.ndarray:
    if n == 0:
        return digamma(x)
    x = np.asarray(x, np.float64)
    sign = -1.0 if n % 2 == 0 else 1.0
    return sign * math.factorial(n) * zeta(np.full(x.shape, n + 1.0), x)


def _log_prefix(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    return -x + a * np.log(x) - lgamma(a)


def gammainc(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The regularized lower incomplete gamma function ``P(a, x)``: its series below ``x = a + 1``,
    ``1 - Q`` (the continued fraction) above."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    out = np.full(a.shape, np.nan)
    with np.errstate(all="ignore"):
        series = (x < a + 1) & (x > 0) & (a > 0)
        fraction = (x >= a + 1) & (a > 0)
        out[series] = _gamma_series(a[series], x[series])
        out[fraction] = 1.0 - _gamma_fraction(a[fraction], x[fraction])
        out[(x == 0) & (a > 0)] = 0.0
        out[(x == np.inf) & (a > 0)] = 1.0
        out[(a == 0) & (x > 0)] = 1.0  # the limit as a falls to 0, as PyTorch gives
    return out


def gammaincc(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    out = np.full(a.shape, np.nan)
    with np.errstate(all="ignore"):
        series = (x < a + 1) & (x > 0) & (a > 0)
        fraction = (x >= a + 1) & (a > 0)
        out[series] = 1.0 - _gamma_series(a[series], x[series])
        out[fraction] = _gamma_fraction(a[fraction], x[fraction])
        out[(x == 0) & (a > 0)] = 1.0
        out[(x == np.inf) & (a > 0)] = 0.0
        out[(a == 0) & (x > 0)] = 0.0
    return out


def _gamma_series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    term = 1.0 / a
    total = term.copy()
    ap = a.copy()
    for _ in range(1000):
        ap = ap + 1
        term = term * x / ap
        total += term
        if np.all(np.abs(term) < np.abs(total) * 1e-17):
            break
    return total * np.exp(_log_prefix(a, x))


def _gamma_fraction(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Q(a, x) by the modified Lentz evaluation of Legendre's continued fraction."""
    tiny = 1e-300
    b = x + 1 - a
    c = np.full_like(x, 1 / tiny)
    d = 1 / b
    h = d.copy()
    for i in range(1, 1000):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = np.where(np.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = np.where(np.abs(c) < tiny, tiny, c)
        d = 1 / d
        delta = d * c
        h = h * delta
        if np.all(np.abs(delta - 1) < 1e-16):
            break
    return np.exp(_log_prefix(a, x)) * h
