"""Pointwise functions PyTorch builds from other ops: ``float_power``, ``ldexp``, ``sgn``, ``isreal``,
``frexp``, ``gcd``/``lcm`` and ``nextafter``, each with its method and in-place forms where PyTorch
has them.

``float_power`` is ``pow`` in float64, as PyTorch computes it. ``frexp`` splits through ``log2`` and
corrects the exponent by one where rounding put the mantissa at 1. ``gcd`` runs Euclid's steps over
the whole tensor until every remainder is zero. ``nextafter`` steps the float's bit pattern, read as
an integer of its width, one unit towards the target.
"""

from __future__ import annotations

from ember.core import dtypes as D
from ember.core.api import functions, method, public
from ember.core.pointwise import type_name
from ember.core.promotion import result_type
from ember.core.tensor import Tensor


def _tensor(data, **kwargs) -> Tensor:
    from ember.core.creation import tensor  # creation imports the op families

    return tensor(data, **kwargs)


def _where(condition: Tensor, a, b) -> Tensor:
    return functions["where"](condition, a, b)


def _as_tensor(value, like: Tensor) -> Tensor:
    return value if isinstance(value, Tensor) else _tensor(value, device=like.device)


# -- float_power -------------------------------------------------------------------------------------------


def _float_power_dtype(*values) -> D.DType:
    complex_ = any((v.dtype.is_complex if isinstance(v, Tensor) else isinstance(v, complex)) for v in values)
    return D.complex128 if complex_ else D.float64


@public("float_power")
@method("float_power")
def float_power(input, exponent) -> Tensor:
    dtype = _float_power_dtype(input, exponent)
    if not isinstance(input, Tensor):
        return functions["pow"](input, exponent.to(dtype))
    exponent = exponent.to(dtype) if isinstance(exponent, Tensor) else exponent
    return input.to(dtype).pow(exponent)


@method("float_power_")
def _float_power_(self: Tensor, exponent) -> Tensor:
    dtype = _float_power_dtype(self, exponent)
    if self.dtype is not dtype:
        raise RuntimeError(
            f"the base given to float_power_ has dtype {type_name(self.dtype)} but the operation's result "
            f"requires dtype {type_name(dtype)}"
        )
    return self.pow_(exponent.to(dtype) if isinstance(exponent, Tensor) else exponent)


# -- ldexp, sgn, isreal ------------------------------------------------------------------------------------


@public("ldexp")
@method("ldexp")
def ldexp(input: Tensor, other: Tensor) -> Tensor:
    return input * functions["pow"](2.0, other)


@method("ldexp_")
def _ldexp_(self: Tensor, other: Tensor) -> Tensor:
    return self.mul_(functions["pow"](2.0, other))


@public("sgn")
@method("sgn")
def sgn(input: Tensor) -> Tensor:
    """``sign`` for real tensors; ``z / |z|`` (0 at 0) for complex ones."""
    if not input.dtype.is_complex:
        return input.sign()
    magnitude = input.abs()
    zero = magnitude == 0
    where = functions["where"]
    # Divided by 1 where |z| is 0, so that neither the value nor the gradient there is 0 / 0. The parts
    # are divided as reals: a complex division's rounding depends on NumPy's vector width.
    safe = where(zero, 1, magnitude)
    out = functions["complex"](input.real / safe, input.imag / safe)
    # An infinite or NaN |z| makes both parts NaN, as the complex division z / |z| does.
    out = where(magnitude.isfinite(), out, complex(float("nan"), float("nan")))
    return where(zero, 0, out)


@method("sgn_")
def _sgn_(self: Tensor) -> Tensor:
    if not self.dtype.is_complex:
        return self.sign_()
    return self.copy_(sgn(self))


@public("isreal")
@method("isreal")
def isreal(input: Tensor) -> Tensor:
    if input.dtype.is_complex:
        return input.imag == 0
    return functions["ones_like"](input, dtype=D.bool_)


# -- frexp -------------------------------------------------------------------------------------------------


@public("frexp")
@method("frexp")
def frexp(input: Tensor):
    from ember.core.return_types import frexp as frexp_result

    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    x = input.detach()
    finite = x.isfinite() & (x != 0)
    safe = _where(finite, x.abs(), 1.0)
    exponent = (safe.to(D.float64).log2().floor() + 1).to(D.int32)
    mantissa = safe / functions["pow"](2.0, exponent.to(x.dtype))
    # log2 rounds near powers of two: move the exponent by one so that 0.5 <= |mantissa| < 1.
    high = mantissa >= 1
    low = mantissa < 0.5
    exponent = exponent + high.to(D.int32) - low.to(D.int32)
    exponent = _where(finite, exponent, 0)
    scale = functions["pow"](2.0, exponent.to(D.float64)).to(x.dtype)
    mantissa = _where(finite, input / scale, input)
    return frexp_result(mantissa, exponent)


# -- gcd, lcm ----------------------------------------------------------------------------------------------


def _integer_pair(name: str, input: Tensor, other) -> tuple[Tensor, Tensor]:
    other = _as_tensor(other, input)
    for t in (input, other):
        if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype is D.bool_:
            raise RuntimeError(f"\"{name}_cpu\" not implemented for '{type_name(t.dtype)}'")
    return input, other


@public("gcd")
@method("gcd")
def gcd(input: Tensor, other: Tensor) -> Tensor:
    a, b = _integer_pair("gcd", input, other)
    a, b = functions["broadcast_tensors"](a, b)
    dtype = result_type(a, b)
    a, b = a.to(dtype).abs(), b.to(dtype).abs()
    while bool((b != 0).any()):
        nonzero = b != 0
        remainder = _where(nonzero, a.remainder(_where(nonzero, b, 1)), 0)
        a, b = _where(nonzero, b, a), remainder
    return a


@public("lcm")
@method("lcm")
def lcm(input: Tensor, other: Tensor) -> Tensor:
    a, b = _integer_pair("lcm", input, other)
    g = gcd(a, b)
    return _where(g == 0, 0, (a // _where(g == 0, 1, g) * b).abs())


@method("gcd_")
def _gcd_(self: Tensor, other: Tensor) -> Tensor:
    return self.copy_(gcd(self, other))


@method("lcm_")
def _lcm_(self: Tensor, other: Tensor) -> Tensor:
    return self.copy_(lcm(self, other))


# -- nextafter ---------------------------------------------------------------------------------------------

_BITS = {D.float64: D.int64, D.float32: D.int32}


@public("nextafter")
@method("nextafter")
def nextafter(input: Tensor, other: Tensor) -> Tensor:
    other = _as_tensor(other, input)
    dtype = result_type(input, other)
    if dtype not in _BITS:
        raise RuntimeError(f"\"nextafter_cpu\" not implemented for '{type_name(dtype)}'")
    x, y = functions["broadcast_tensors"](input.to(dtype), other.to(dtype))
    x, y = x.detach().contiguous(), y.detach()
    bits = x.view(_BITS[dtype])
    # Away from zero the magnitude's bit pattern grows by one; towards zero it shrinks by one.
    away = (y > x) == (x > 0)
    stepped = (bits + _where(away, 1, -1).to(bits.dtype)).view(dtype)
    tiny = functions["full_like"](x, 1).view(_BITS[dtype]).fill_(1).view(dtype)  # the smallest subnormal
    from_zero = _where(y > 0, tiny, -tiny)
    result = _where(x == 0, from_zero, stepped)
    result = _where(x == y, y, result)
    return _where(x.isnan() | y.isnan(), float("nan"), result)


@method("nextafter_")
def _nextafter_(self: Tensor, other: Tensor) -> Tensor:
    return self.copy_(nextafter(self, other))
