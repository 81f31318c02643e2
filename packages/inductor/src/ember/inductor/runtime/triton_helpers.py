"""Device functions the generated Triton kernels call (``th.<name>`` in their source).

Only Triton's core math is used (``exp``, ``exp2``, ``log``, ``log2``, ``sqrt``, ``sin``, ``cos``,
``erf``, ``floor``, ``ceil``): ``libdevice`` has no implementation under Triton's interpreter, where
the kernels are tested. The functions built from them keep their accuracy where the naive formula
loses it (``expm1`` and ``log1p`` near zero, by Kahan's correction; ``tanh`` and ``sinh`` through
``expm1``). What has no accurate form here (``atan`` and its family, ``erfc``) is refused by the code
generator, and its loop stays C++.

The semantics are the C++ kernels' (``cpp_ops.PRELUDE``): NaN-propagating ``maximum``/``minimum``,
floor division and Python's remainder, round half to even, Philox random numbers bit for bit.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def maximum(a, b):
    return tl.where((a != a) | (a > b), a, b)


@triton.jit
def minimum(a, b):
    return tl.where((a != a) | (a < b), a, b)


@triton.jit
def add(a, b):
    return a + b


@triton.jit
def mul(a, b):
    return a * b


@triton.jit
def isnan(x):
    return x != x


@triton.jit
def isinf(x):
    # x - x is 0 for every finite number and NaN for the infinities (and for NaN, excluded first)
    return (x == x) & ((x - x) != (x - x))


@triton.jit
def relu(x):
    return tl.where(x < 0, tl.zeros_like(x), x)


@triton.jit
def sign(x):
    return (x > 0).to(x.dtype) - (x < 0).to(x.dtype)


@triton.jit
def floor(x):
    if x.dtype.is_floating():
        return tl.floor(x)
    else:
        return x


@triton.jit
def ceil(x):
    if x.dtype.is_floating():
        return tl.ceil(x)
    else:
        return x


@triton.jit
def trunc(x):
    if x.dtype.is_floating():
        return tl.where(x < 0, tl.ceil(x), tl.floor(x))
    else:
        return x


@triton.jit
def round_half_even(x):
    if x.dtype.is_floating():
        f = tl.floor(x)
        d = x - f
        odd = (f - 2 * tl.floor(f * 0.5)) != 0
        return tl.where((d > 0.5) | ((d == 0.5) & odd), f + 1, f)
    else:
        return x


@triton.jit
def floordiv(a, b):
    if a.dtype.is_floating() or b.dtype.is_floating():
        return tl.floor(a / b)
    else:
        q = a // b  # truncates toward zero, as C
        return q - ((a % b != 0) & ((a < 0) != (b < 0))).to(q.dtype)


@triton.jit
def remainder(a, b):
    r = a % b  # the sign of the dividend, as C's fmod and %
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)


@triton.jit
def expm1(x):
    u = tl.exp(x)
    um1 = u - 1
    # Kahan: (u - 1) * x / log(u) cancels the rounding of u near 0 (u == 1: |x| below half an ulp of 1);
    # away from 0, u - 1 loses nothing
    fixed = um1 * (x / tl.log(u))
    return tl.where(u == 1, x, tl.where(tl.abs(x) < 0.5, fixed, um1))


@triton.jit
def log1p(x):
    u = 1 + x
    fixed = tl.log(u) * (x / (u - 1))
    return tl.where(u == 1, x, tl.where(tl.abs(x) < 0.5, fixed, tl.log(u)))


@triton.jit
def log10(x):
    return tl.log2(x) * 0.30102999566398119521


@triton.jit
def tan(x):
    return tl.sin(x) / tl.cos(x)


@triton.jit
def tanh(x):
    e = expm1(-2 * tl.abs(x))
    t = -e / (e + 2)
    return tl.where(x < 0, -t, t)


@triton.jit
def sinh(x):
    a = tl.abs(x)
    e = expm1(a)
    small = 0.5 * (e + e / (e + 1))
    big = 0.5 * tl.exp(a)
    s = tl.where(a > 20, big, small)
    return tl.where(x < 0, -s, s)


@triton.jit
def cosh(x):
    e = tl.exp(tl.abs(x))
    return 0.5 * e + 0.5 / e


@triton.jit
def asinh(x):
    a = tl.abs(x)
    s = log1p(a + a * a / (1 + tl.sqrt(1 + a * a)))
    big = tl.log(a) + 0.69314718055994530942
    s = tl.where(a > 1e15, big, s)
    return tl.where(x < 0, -s, s)


@triton.jit
def acosh(x):
    t = x - 1
    small = log1p(t + tl.sqrt(t * (x + 1)))
    big = tl.log(x) + 0.69314718055994530942
    return tl.where(x > 1e15, big, small)


@triton.jit
def atanh(x):
    return 0.5 * log1p(2 * x / (1 - x))


@triton.jit
def sigmoid(x):
    return 1 / (1 + tl.exp(-x))


@triton.jit
def pow(a, b):
    """Floating ``a ** b`` as C's ``pow``: exact squares and cubes, the signs of negative bases raised to
    integers, NaN for a negative base and a fractional exponent, and ``exp2(b * log2(|a|))`` otherwise."""
    mag = tl.exp2(b * tl.log2(tl.abs(a)))
    integral = tl.floor(b) == b
    odd = integral & ((b - 2 * tl.floor(b * 0.5)) != 0)
    out = tl.where(a < 0, tl.where(integral, tl.where(odd, -mag, mag), mag * 0 + (a - a) / (a - a)), mag)
    out = tl.where(a == 0, tl.where(b > 0, a * 0, tl.where(b == 0, a * 0 + 1, 1 / (a * 0))), out)
    out = tl.where(b == 2, a * a, tl.where(b == 3, a * a * a, tl.where(b == 1, a, out)))
    return tl.where((b == 0) | (a == 1), a * 0 + 1, out)


# --- reductions: combine functions of ``tl.reduce`` --------------------------------------------


@triton.jit
def any_(a, b):
    return a | b


@triton.jit
def welford_combine(mean1, m2_1, n1, mean2, m2_2, n2):
    n = n1 + n2
    delta = mean2 - mean1
    frac = tl.where(n == 0, 0.0, n2 / tl.where(n == 0, 1.0, n))
    return mean1 + delta * frac, m2_1 + m2_2 + delta * delta * n1 * frac, n


@triton.jit
def argmax_combine(v1, i1, v2, i2):
    nan1 = v1 != v1
    nan2 = v2 != v2
    take = (i1 < 0) | ((i2 >= 0) & ((~nan1 & (nan2 | (v2 > v1))) | (((v2 == v1) | (nan1 & nan2)) & (i2 < i1))))
    return tl.where(take, v2, v1), tl.where(take, i2, i1)


@triton.jit
def argmin_combine(v1, i1, v2, i2):
    nan1 = v1 != v1
    nan2 = v2 != v2
    take = (i1 < 0) | ((i2 >= 0) & ((~nan1 & (nan2 | (v2 < v1))) | (((v2 == v1) | (nan1 & nan2)) & (i2 < i1))))
    return tl.where(take, v2, v1), tl.where(take, i2, i1)


# --- Philox 4x32-10 of (seed, counter): eager's stream (``ember.core.philox``) ------------------


@triton.jit
def philox(seed, counter):
    c0 = (counter & 0xFFFFFFFF).to(tl.uint32)
    c1 = ((counter >> 32) & 0xFFFFFFFF).to(tl.uint32)
    c2 = tl.zeros_like(c0)
    c3 = tl.zeros_like(c0)
    k0 = (seed & 0xFFFFFFFF).to(tl.uint32) + tl.zeros_like(c0)
    k1 = ((seed >> 32) & 0xFFFFFFFF).to(tl.uint32) + tl.zeros_like(c0)
    ROUND_A: tl.constexpr = 0xD2511F53
    ROUND_B: tl.constexpr = 0xCD9E8D57
    for _ in tl.static_range(10):
        hi0 = tl.umulhi(c0, ROUND_A)
        lo0 = c0 * ROUND_A
        hi2 = tl.umulhi(c2, ROUND_B)
        lo2 = c2 * ROUND_B
        n0 = hi2 ^ c1 ^ k0
        n2 = hi0 ^ c3 ^ k1
        c1 = lo2
        c3 = lo0
        c0 = n0
        c2 = n2
        k0 = k0 + 0x9E3779B9
        k1 = k1 + 0xBB67AE85
    return c0, c1, c2, c3


@triton.jit
def _uniform(w):
    x = w.to(tl.int32, bitcast=True)
    x = tl.where(x < 0, ~x, x)
    return x.to(tl.float32) * 4.6566127342e-10


@triton.jit
def rand(seed, offset):
    w0, _, _, _ = philox(seed, offset)
    return tl.minimum(_uniform(w0), 0.99999994039535522461)


@triton.jit
def randn(seed, offset):
    w0, w1, _, _ = philox(seed, offset)
    u1 = tl.maximum(_uniform(w0), 1.0e-7)
    theta = 6.283185307179586 * _uniform(w1)
    return tl.sqrt(-2.0 * tl.log(u1)) * tl.cos(theta)


@triton.jit
def randint64(seed, offset, low, high):
    w0, w1, _, _ = philox(seed, offset)
    span = (high - low).to(tl.uint64)
    small = w0.to(tl.uint64) % span
    wide = ((w1.to(tl.uint64) << 32) | w0.to(tl.uint64)) % span
    drawn = tl.where(span <= 4294967296, small, wide)
    return (drawn + low.to(tl.uint64)).to(tl.int64)


__all__ = [name for name, value in list(globals().items()) if isinstance(value, triton.JITFunction)]
